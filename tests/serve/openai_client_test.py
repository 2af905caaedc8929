"""hanpu serve end to end through the official openai Python client, on the tiny fixture.

Run by CTest as: python openai_client_test.py HANPU_BINARY. Starts `hanpu serve --port 0`,
checks chat and completions (streamed and not), stop strings, usage, logprobs, concurrent
clients against single-sequence `hanpu run`, errors by status, cancellation, and that SIGTERM
drains the requests in flight and exits 0.
"""
import atexit
import concurrent.futures
import json
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import openai

HANPU = sys.argv[1]
failures = []
atexit.register(lambda: [p.kill() for p in started if p.poll() is None])


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


started = []  # killed at exit, so a failed check never leaves a server holding the pipes


def start_server(*extra):
    p = subprocess.Popen([HANPU, "serve", "--port", "0", "--parallel", "4", "--queue", "32",
                          "--max-body", "65536", *extra],
                         stderr=subprocess.PIPE, text=True)
    started.append(p)
    for line in p.stderr:
        m = re.search(r"on http://127\.0\.0\.1:(\d+)/v1", line)
        if m:
            threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
            return p, int(m.group(1))
    raise SystemExit("hanpu serve did not start")


def raw(port, path, body=None, method=None, headers=None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method=method,
                                 headers=headers or {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


server, port = start_server()
client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none", max_retries=0)
model = client.models.list().data[0].id
check(model == "qwen35-tiny", f"model id {model}")

# Chat, not streamed: usage adds up, finish reason "length" at max_tokens.
r = client.chat.completions.create(model=model, max_tokens=6,
                                   messages=[{"role": "user", "content": "Hello"}])
check(r.usage.completion_tokens == 6 and r.choices[0].finish_reason == "length",
      f"chat usage {r.usage}, finish {r.choices[0].finish_reason}")
check(r.usage.total_tokens == r.usage.prompt_tokens + 6, "total_tokens")
check(r.usage.prompt_tokens_details.cached_tokens == 0, "cached_tokens present")
chat_text = (r.choices[0].message.content or "") + (
    getattr(r.choices[0].message, "reasoning_content", None) or "")

# The same, streamed with usage: the pieces join to the same text.
pieces, usage = [], None
for chunk in client.chat.completions.create(model=model, max_tokens=6, stream=True,
                                            stream_options={"include_usage": True},
                                            messages=[{"role": "user", "content": "Hello"}]):
    if chunk.usage:
        usage = chunk.usage
    for c in chunk.choices:
        pieces.append((c.delta.content or "") + (getattr(c.delta, "reasoning_content", None) or ""))
check("".join(pieces) == chat_text, f"streamed chat {''.join(pieces)!r} vs {chat_text!r}")
check(usage is not None and usage.completion_tokens == 6, f"streamed usage {usage}")

# Completions with logprobs: ids from /tokenize; tokens equal a single-sequence hanpu run.
status, body = raw(port, "/tokenize", json.dumps({"content": "The tiny model"}).encode())
ids = json.loads(body)["tokens"]
check(status == 200 and len(ids) > 0, f"tokenize {status} {body[:80]}")
c = client.completions.create(model=model, prompt=ids, max_tokens=8, logprobs=2)
lp = c.choices[0].logprobs
check(0 < len(lp.tokens) == c.usage.completion_tokens and all(1 <= len(t) <= 2 for t in lp.top_logprobs),
      f"completion logprobs {lp}")
check(all(v <= 0 for v in lp.token_logprobs), "logprobs are <= 0")
status, body = raw(port, "/detokenize", json.dumps({"tokens": ids}).encode())
check(json.loads(body)["content"] == "The tiny model", f"detokenize {body[:80]}")
chat_lp = client.chat.completions.create(model=model, max_tokens=3, logprobs=True, top_logprobs=2,
                                         messages=[{"role": "user", "content": "x"}])
check(len(chat_lp.choices[0].logprobs.content) == 3, "chat logprobs per token")

# A stop string: the text ends before it.
full = client.completions.create(model=model, prompt=ids, max_tokens=12).choices[0].text
if len(full) > 3:
    stop = full[2:4]
    cut = client.completions.create(model=model, prompt=ids, max_tokens=12, stop=[stop])
    check(cut.choices[0].text == full[:full.index(stop)] and cut.choices[0].finish_reason == "stop",
          f"stop string {stop!r}: {cut.choices[0].text!r} from {full!r}")

# 16 concurrent clients: each greedy reply equals a single-sequence `hanpu run` of the same
# prompt (run one after another, after the concurrent ones).
prompts = [f"client {i} asks about hybrid models{'!' * (i % 5)}" for i in range(16)]


def one(i):
    return client.completions.create(model=model, prompt=prompts[i], max_tokens=5 + i % 4,
                                     temperature=0)


with concurrent.futures.ThreadPoolExecutor(16) as pool:
    replies = list(pool.map(one, range(16)))
for i, rep in enumerate(replies):
    run = subprocess.run([HANPU, "run", "-p", prompts[i], "-n", str(5 + i % 4), "--temp", "0",
                          "--json"], capture_output=True, check=True).stdout
    want = json.loads(run)["text"]  # its bytes made valid UTF-8 as the server's JSON makes them
    check(rep.choices[0].text == want, f"client {i}: {rep.choices[0].text!r} vs run {want!r}")
    check(0 < rep.usage.completion_tokens <= 5 + i % 4, f"client {i} usage {rep.usage}")

# Prefix reuse: turn 4 of a chat resumes from the cache past turn 3's reply (the server
# prefilled the next turn's prefix after each reply, as the template renders a past reply: Qwen's
# without its thinking block), and every turn's reply equals a cold server's (no cache).
cold_server, cold_port = start_server("--cache-ram", "0")
cold = openai.OpenAI(base_url=f"http://127.0.0.1:{cold_port}/v1", api_key="none", max_retries=0)
msgs = [{"role": "system", "content": "You are terse."}]
prompt_tokens, cached = [], []
for turn in range(1, 5):
    msgs.append({"role": "user", "content": f"Question {turn}: what is {turn} + {turn}?"})
    kw = dict(model=model, messages=msgs, max_tokens=8, temperature=0)
    warm_reply = client.chat.completions.create(**kw)
    cold_reply = cold.chat.completions.create(**kw)
    m = warm_reply.choices[0].message
    text = (m.content or "") + (getattr(m, "reasoning_content", None) or "")
    cm = cold_reply.choices[0].message
    check(text == (cm.content or "") + (getattr(cm, "reasoning_content", None) or ""),
          f"turn {turn}: cached and cold replies differ")
    check(cold_reply.usage.prompt_tokens_details.cached_tokens == 0, "cold server cached nothing")
    prompt_tokens.append(warm_reply.usage.prompt_tokens)
    cached.append(warm_reply.usage.prompt_tokens_details.cached_tokens)
    msgs.append({"role": "assistant", "content": m.content or ""})
cold_server.send_signal(signal.SIGTERM)
cold_server.wait(timeout=60)
# Past the cache: turn 4's own user message, its end and the generation prompt, no more.
tail = len(json.loads(raw(port, "/tokenize", json.dumps(
    {"content": msgs[-2]["content"] + "<|im_end|>\n<|im_start|>assistant\n<think>\n"}).encode())[1])["tokens"])
check(cached[0] == 0 and cached[3] > prompt_tokens[2] and cached[3] >= prompt_tokens[3] - tail,
      f"turn 4 cached {cached[3]} of {prompt_tokens[3]} (its last {tail} tokens are new); "
      f"turn 3's prompt was {prompt_tokens[2]}")
metrics = raw(port, "/metrics")[1].decode()
check(re.search(r"hanpu_prefix_cache_hits_total [1-9]", metrics) is not None,
      "prefix hits in /metrics")

# Errors: the right status and an OpenAI error object; nothing else disturbed.
for body, want in [(b"{not json", 400), (b'{"messages": 5}', 400),
                   (json.dumps({"model": model, "messages": [{"role": "user", "content": "x"}],
                                "max_tokens": "many"}).encode(), 400),
                   (json.dumps({"model": "gpt-nope", "messages": [{"role": "user",
                                                                   "content": "x"}]}).encode(), 404),
                   (json.dumps({"model": model, "messages": [{"role": "user", "content": "x"}],
                                "max_tokens": 10 ** 9}).encode(), 400),
                   (b"x" * 70000, 413)]:
    status, out = raw(port, "/v1/chat/completions", body)
    check(status == want, f"{body[:40]!r}: status {status}, want {want}")
    if want != 413:
        check("error" in json.loads(out), f"{body[:40]!r}: no error object: {out[:80]!r}")
check(raw(port, "/v1/nothing")[0] == 404, "unknown route 404")
try:
    client.chat.completions.create(model="gpt-nope", messages=[{"role": "user", "content": "x"}])
    check(False, "unknown model accepted")
except openai.NotFoundError:
    pass

# Cancellation: a client that leaves mid-stream; the server goes on serving.
stream = client.completions.create(model=model, prompt=ids, max_tokens=4000, stream=True,
                                   extra_body={"ignore_eos": True})
next(iter(stream))
stream.close()
time.sleep(0.5)
check(client.completions.create(model=model, prompt=ids, max_tokens=2).usage.completion_tokens == 2,
      "served after a cancel")
metrics = raw(port, "/metrics")[1].decode()
check("hanpu_requests_cancelled_total 1" in metrics, "cancel counted in /metrics")


def metric(name):
    m = re.search(rf"^{name} (\d+)", raw(port, "/metrics")[1].decode(), re.M)
    return int(m.group(1))


# A client that gives up on a reply that is not streamed (its timeout): the server notices the
# closed connection and cancels the sequence long before its max_tokens.
generated_before = metric("hanpu_generation_tokens_total")
try:
    client.with_options(timeout=0.3).completions.create(
        model=model, prompt=ids, max_tokens=4000, extra_body={"ignore_eos": True})
    check(False, "a 4000-token reply came within the 0.3 s timeout")
except openai.APITimeoutError:
    pass
for _ in range(100):
    if metric("hanpu_requests_cancelled_total") == 2:
        break
    time.sleep(0.1)
check(metric("hanpu_requests_cancelled_total") == 2, "a plain request's client leaving cancels it")
check(metric("hanpu_generation_tokens_total") - generated_before < 4000,
      "the cancelled plain request stopped before its max_tokens")

# SIGTERM while requests run: they are answered, then the server exits 0.
with concurrent.futures.ThreadPoolExecutor(4) as pool:
    futures = [pool.submit(client.completions.create, model=model, prompt=ids, max_tokens=40,
                           extra_body={"ignore_eos": True})
               for _ in range(4)]
    time.sleep(0.2)
    server.send_signal(signal.SIGTERM)
    done = [f.result().usage.completion_tokens for f in futures]
check(done == [40] * 4, f"drained replies {done}")
check(server.wait(timeout=60) == 0, "exit status after SIGTERM")

if failures:
    sys.exit(f"{len(failures)} checks failed")
print("openai client: every check passed")
