#!/usr/bin/env python3
"""Load on a running OpenAI-compatible server (hanpu serve or llama-server): N concurrent
streams, each a completion of a random-token prompt, reporting aggregate decode tokens/s,
time to first token and inter-token latency (p50 / p99).

    scripts/bench_serve.py --url http://127.0.0.1:8080/v1 --streams 1 8 --prompt 128 --tokens 64
    scripts/bench_serve.py --url http://127.0.0.1:8080/v1 --history 4096

--history N: a turn after N tokens of history. A cold request of N random tokens, then the same
N tokens and 32 more (the next turn): time to first token of each and the cached tokens the
second reports.

--turns N: one conversation of N turns, each the last one's prompt and --turn-tokens more (a
chat growing by messages), each generating --tokens: per turn its time to first token, its
decode rate and the cached tokens it reports. hanpu's sequence then holds its KV rows in the
segments its checkpoints shared, so the decode rate of a late turn shows what that costs.

Needs the openai package (pip install openai). Outside CI: a benchmark, not a test.
"""
import argparse
import concurrent.futures
import random
import statistics
import time

import openai


def one_stream(client, model, prompt_ids, tokens, usage=None):
    t0 = time.perf_counter()
    stamps = []
    stream = client.completions.create(model=model, prompt=prompt_ids, max_tokens=tokens,
                                       stream=True, temperature=0,
                                       stream_options={"include_usage": True},
                                       extra_body={"ignore_eos": True})
    for chunk in stream:
        if chunk.choices and chunk.choices[0].text:
            stamps.append(time.perf_counter())
        if chunk.usage is not None and usage is not None:
            usage.append(chunk.usage)
    return t0, stamps


def history_turns(client, model, n, vocab, rng, rounds):
    for _ in range(rounds):
        history = [rng.randrange(vocab) for _ in range(n)]
        more = [rng.randrange(vocab) for _ in range(32)]
        cold_usage, warm_usage = [], []
        t0, s0 = one_stream(client, model, history, 4, cold_usage)
        t1, s1 = one_stream(client, model, history + more, 4, warm_usage)
        cold, warm = s0[0] - t0, s1[0] - t1
        details = getattr(warm_usage[0], "prompt_tokens_details", None) if warm_usage else None
        cached = getattr(details, "cached_tokens", None) if details else None
        print(f"history {n}: cold TTFT {cold * 1e3:.0f} ms, next turn TTFT {warm * 1e3:.0f} ms "
              f"({100 * warm / cold:.1f}% of cold), cached "
              f"{'?' if cached is None else cached} of {n + len(more)} prompt tokens", flush=True)


def chat_turns(client, model, turns, first, more, tokens, vocab, rng):
    prompt = [rng.randrange(vocab) for _ in range(first)]
    for turn in range(1, turns + 1):
        usage = []
        t0, stamps = one_stream(client, model, prompt, tokens, usage)
        rate = (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 else float("nan")
        details = getattr(usage[0], "prompt_tokens_details", None) if usage else None
        cached = getattr(details, "cached_tokens", None) if details else None
        print(f"turn {turn:2d}: {len(prompt)} prompt tokens, TTFT {(stamps[0] - t0) * 1e3:.0f} ms, "
              f"decode {rate:.1f} tok/s, cached {'?' if cached is None else cached}", flush=True)
        prompt = prompt + [rng.randrange(vocab) for _ in range(more)]


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="http://127.0.0.1:8080/v1")
    ap.add_argument("--streams", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--prompt", type=int, default=128, help="prompt tokens")
    ap.add_argument("--tokens", type=int, default=64, help="tokens generated per stream")
    ap.add_argument("--vocab", type=int, default=1000, help="prompt ids drawn below this")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--history", type=int, default=0, help="measure a turn after N tokens")
    ap.add_argument("--turns", type=int, default=0, help="one conversation of N turns")
    ap.add_argument("--turn-tokens", type=int, default=256, help="tokens each turn adds")
    a = ap.parse_args()
    client = openai.OpenAI(base_url=a.url, api_key="none", max_retries=0, timeout=3600)
    model = client.models.list().data[0].id
    rng = random.Random(1)
    if a.history:
        return history_turns(client, model, a.history, a.vocab, rng, a.rounds)
    if a.turns:
        return chat_turns(client, model, a.turns, a.prompt, a.turn_tokens, a.tokens, a.vocab, rng)
    for _ in range(a.rounds):
        for n in a.streams:
            prompts = [[rng.randrange(a.vocab) for _ in range(a.prompt)] for _ in range(n)]
            t0 = time.perf_counter()
            with concurrent.futures.ThreadPoolExecutor(n) as pool:
                runs = list(pool.map(lambda p: one_stream(client, model, p, a.tokens), prompts))
            wall = time.perf_counter() - t0
            ttft = [s[0] - t for t, s in runs if s]
            itl = [b - a_ for _, s in runs for a_, b in zip(s, s[1:])]
            pieces = sum(len(s) for _, s in runs)
            first_all = max(s[0] for _, s in runs if s)
            last_all = max(s[-1] for _, s in runs if s)
            decode_rate = (pieces - n) / (last_all - first_all) if last_all > first_all else float("nan")
            print(f"streams {n:3d}: {pieces} text pieces in {wall:.2f} s, "
                  f"aggregate {pieces / wall:.1f} tok/s (decode after the last first token "
                  f"{decode_rate:.1f}), TTFT p50 {statistics.median(ttft) * 1e3:.0f} ms p99 "
                  f"{pct(ttft, 99) * 1e3:.0f} ms, ITL p50 {pct(itl, 50) * 1e3:.1f} ms p99 "
                  f"{pct(itl, 99) * 1e3:.1f} ms", flush=True)


if __name__ == "__main__":
    main()
