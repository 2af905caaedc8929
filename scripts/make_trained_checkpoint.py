#!/usr/bin/env python3
"""Trains a small Qwen3.5 (or all-MoE Qwen3-Next) checkpoint on local text, for measurements
that need a model whose next-token distributions are peaked as a trained model's are (a
random-weight model's are nearly flat, which magnifies logit noise in perplexity and KL).

Model weights cannot be downloaded where hanpu is built, so this trains one on what every
Debian machine has: the license texts in /usr/share/common-licenses (English prose), the last
tenth held out as the evaluation text. The shape keeps every projection's input a multiple of
256, so K-quants (Q4_K, Q6_K) apply as they do to real models. Outside CI; it writes a
Hugging Face folder (model.safetensors, config.json, tokenizer.json, tokenizer_config.json)
and eval.txt / train.txt beside it.

    python3 -m venv .fxenv && .fxenv/bin/pip install torch transformers tokenizers safetensors
    .fxenv/bin/python scripts/make_trained_checkpoint.py --out /tmp/trained-q35 --steps 600
    .fxenv/bin/python scripts/make_trained_checkpoint.py --arch qwen3next --out /tmp/trained-next
"""
import argparse
import json
import pathlib
import time

import torch

from make_fixtures import make_tokenizer  # the fixtures' tokenizer recipe, on other text


def corpus():
    files = sorted(pathlib.Path("/usr/share/common-licenses").iterdir())
    text = "\n\n".join(f.read_text(encoding="utf-8", errors="replace") for f in files if f.is_file())
    cut = int(len(text) * 0.9)
    return text[:cut], text[cut:]


def model_for(arch, vocab):
    common = dict(vocab_size=vocab, hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=64, linear_conv_kernel_dim=4, linear_key_head_dim=64,
                  linear_value_head_dim=64, linear_num_key_heads=2, linear_num_value_heads=4,
                  rms_norm_eps=1e-6, max_position_embeddings=4096, eos_token_id=2, bos_token_id=None,
                  pad_token_id=0)
    if arch == "qwen35":
        from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig
        c = Qwen3_5TextConfig(intermediate_size=768, tie_word_embeddings=True,
                              rope_parameters={"rope_type": "default", "rope_theta": 10000000.0,
                                               "partial_rotary_factor": 0.25, "mrope_section": [3, 3, 2],
                                               "mrope_interleaved": True}, **common)
        return Qwen3_5ForCausalLM(c)
    from transformers import Qwen3NextConfig, Qwen3NextForCausalLM
    c = Qwen3NextConfig(intermediate_size=768, tie_word_embeddings=False,
                        rope_parameters={"rope_type": "default", "rope_theta": 10000000.0,
                                         "partial_rotary_factor": 0.25},
                        decoder_sparse_step=1, moe_intermediate_size=256, shared_expert_intermediate_size=256,
                        num_experts_per_tok=2, num_experts=4, norm_topk_prob=True, mlp_only_layers=[], **common)
    return Qwen3NextForCausalLM(c)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--arch", choices=["qwen35", "qwen3next"], default="qwen35")
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--vocab", type=int, default=2048)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    train_text, eval_text = corpus()
    (out / "train.txt").write_text(train_text, encoding="utf-8")
    (out / "eval.txt").write_text(eval_text, encoding="utf-8")
    tok = make_tokenizer(a.vocab, train_text.split("\n\n"))
    tok.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}))
    ids = torch.tensor(tok.encode(train_text).ids)
    model = model_for(a.arch, a.vocab)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=a.steps, pct_start=0.1)
    model.train()
    t0 = time.time()
    for step in range(a.steps):
        starts = torch.randint(0, len(ids) - a.seq - 1, (a.batch,))
        x = torch.stack([ids[s:s + a.seq] for s in starts])
        loss = model(input_ids=x, labels=x).loss
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % 50 == 0 or step == a.steps - 1:
            print(f"step {step} loss {loss.item():.3f} ({time.time() - t0:.0f} s)", flush=True)
    model.eval()
    model.save_pretrained(str(out), safe_serialization=True)
    print(f"wrote {out}: {len(ids)} training tokens, eval text {len(eval_text)} characters")


if __name__ == "__main__":
    main()
