#!/usr/bin/env python3
"""Builds the small random-weight checkpoints hanpu's model tests run against.

Model weights cannot be downloaded where hanpu is built, so the tests use tiny checkpoints of
the real architectures made here with transformers' own classes (random weights, seeded), a
byte-level BPE tokenizer trained on a few paragraphs with the `tokenizers` library (Qwen's
pre-tokenizer regex, NFC normaliser and special tokens), and reference outputs computed by
transformers in float32: token ids of a few prompts, the last position's logits, and 16
greedy tokens. The outputs are committed under tests/fixtures/models/; CI does not run this.

    python3 -m venv .fxenv && .fxenv/bin/pip install torch transformers tokenizers safetensors gguf
    .fxenv/bin/python scripts/make_fixtures.py            # rewrites tests/fixtures/models/*
"""
import argparse
import json
import pathlib

import torch
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

QWEN35_PRETOKENIZE = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}|"""
                      r""" ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]
CORPUS = [
    "Hybrid models interleave linear attention layers with full attention layers.",
    "The recurrent state of a Gated DeltaNet head never leaves the core that owns it.",
    "Chunkwise prefill turns the token loop into small matrix products: 12 x 32 tiles!",
    "Le modèle traite des phrases en français, et aussi des nombres comme 2048 ou 3.14.",
    "Straße, naïve café, 東京 and 北京 are here so that multi-byte UTF-8 text is covered.",
    "def f(x):\n    return x * 2  # code, tabs\tand newlines\r\n matter too",
    "It's what we'll do; you're right, they've said I'd go. DON'T SHOUT, it's LOUD.",
    "   leading spaces, trailing spaces   \n\n\nand blank lines.",
    "Emoji 🙂 and symbols © ± → ∑ are rare but must still round-trip.",
]
PROMPTS = [
    "Hybrid models interleave linear attention",
    "Le café naïve 東京 2048!",
    "def f(x):\n    return x\t# ok",
    "It's LOUD, you're right.  Spaces   here\n\n",
    "🙂 → ∑",
]
CHAT_TEMPLATE = ("{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}"
                 "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def make_tokenizer(vocab_size):
    tok = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN35_PRETOKENIZE), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(CORPUS * 4, trainer=trainer)
    return tok


def tiny_qwen35_config(vocab):
    from transformers import Qwen3_5TextConfig
    return Qwen3_5TextConfig(
        vocab_size=vocab, hidden_size=64, intermediate_size=96, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, linear_conv_kernel_dim=4,
        linear_key_head_dim=16, linear_value_head_dim=16, linear_num_key_heads=2,
        linear_num_value_heads=4, rms_norm_eps=1e-6, tie_word_embeddings=True,
        rope_parameters={"rope_type": "default", "rope_theta": 10000000.0, "partial_rotary_factor": 0.25,
                         "mrope_section": [2, 1, 1], "mrope_interleaved": True},
        max_position_embeddings=4096, eos_token_id=2, bos_token_id=None, pad_token_id=0)


def tiny_qwen3_next_config(vocab):
    from transformers import Qwen3NextConfig
    return Qwen3NextConfig(
        vocab_size=vocab, hidden_size=64, intermediate_size=96, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, linear_conv_kernel_dim=4,
        linear_key_head_dim=16, linear_value_head_dim=16, linear_num_key_heads=2,
        linear_num_value_heads=4, rms_norm_eps=1e-6, tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 10000000.0, "partial_rotary_factor": 0.25},
        decoder_sparse_step=1, moe_intermediate_size=32, shared_expert_intermediate_size=48,
        num_experts_per_tok=2, num_experts=4, norm_topk_prob=True, mlp_only_layers=[3],
        max_position_embeddings=4096, eos_token_id=2, bos_token_id=None, pad_token_id=0)


def randomize(model, seed):
    # transformers initialises norms to exactly 0/1 and A_log/dt_bias to fixed ranges; random
    # values everywhere make a wrong convention (1 + w vs w, a swapped split) show in logits.
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("A_log"):
                p.copy_(torch.empty(p.shape).uniform_(-1.0, 1.0, generator=g))
            elif name.endswith("dt_bias"):
                p.copy_(torch.empty(p.shape).uniform_(-1.0, 1.0, generator=g))
            elif "norm" in name:
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g) if name.endswith("linear_attn.norm.weight")
                        else 0.2 * torch.randn(p.shape, generator=g))
            else:
                fan_in = p.shape[-1] if p.dim() > 1 else 1
                p.copy_(torch.randn(p.shape, generator=g) * (0.5 / fan_in ** 0.5 if p.dim() > 1 else 0.1))


def references(model, tok):
    out = {"prompts": []}
    for text in PROMPTS:
        ids = tok.encode(text).ids
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0, -1].float()
            greedy = model.generate(torch.tensor([ids]), max_new_tokens=16, do_sample=False,
                                    eos_token_id=None, pad_token_id=0)[0, len(ids):].tolist()
        out["prompts"].append({"text": text, "ids": ids, "last_logits": [round(float(x), 7) for x in logits],
                               "greedy16": greedy})
    return out


def build(name, make_config, model_cls, seed, root):
    d = root / name
    d.mkdir(parents=True, exist_ok=True)
    tok = make_tokenizer(vocab_size=384)
    tok.save(str(d / "tokenizer.json"))
    torch.manual_seed(seed)
    config = make_config(tok.get_vocab_size())
    model = model_cls(config).float().eval()
    randomize(model, seed)
    model.save_pretrained(str(d), safe_serialization=True)
    (d / "tokenizer_config.json").write_text(json.dumps({
        "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "chat_template": CHAT_TEMPLATE}, indent=1))
    refs = references(model, tok)
    refs["model_type"] = config.model_type
    (d / "reference.json").write_text(json.dumps(refs))
    print(f"{name}: {sum(p.numel() for p in model.parameters())} parameters -> {d}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(pathlib.Path(__file__).resolve().parent.parent / "tests/fixtures/models"))
    args = ap.parse_args()
    root = pathlib.Path(args.out)
    from transformers import Qwen3_5ForCausalLM, Qwen3NextForCausalLM
    build("qwen35-tiny", tiny_qwen35_config, Qwen3_5ForCausalLM, 35, root)
    build("qwen3next-tiny", tiny_qwen3_next_config, Qwen3NextForCausalLM, 3, root)


if __name__ == "__main__":
    main()
