#!/usr/bin/env python3
"""Writes tests/fixtures/tokenizer/kimi-tiktoken/: a small tokenizer in the form Kimi's Hugging
Face folders ship theirs (tiktoken.model: each token's bytes in base64 and its rank, a line
each; tokenizer_config.json's added_tokens_decoder for the special ids after them), and
reference.json: texts and the ids the `tiktoken` package gives them with Kimi's split pattern
(tokenization_kimi.py's pat_str) and every special token allowed, as Kimi's tokenizer encodes.
The ranks are trained on the texts below by tiktoken's own educational BPE trainer.
tests/model/tiktoken_vocab_test.cc checks hanpu's reading of the folder against them.

Usage: scripts/make_kimi_tiktoken.py   (needs `pip install tiktoken regex`)
"""
import base64
import json
import pathlib

import regex
import tiktoken
from tiktoken import _educational

from make_kimi_k2_splits import PAT, TEXTS

TRAIN = "\n".join(TEXTS * 3) + """
The quick brown fox jumps over the lazy dog. Linear attention keeps a state per head; full
attention keeps every key and value. Kimi Linear interleaves KDA layers with MLA layers.
def forward(self, hidden_states):\n    return self.o_proj(attn(hidden_states))\n
模型在边缘设备上运行。线性注意力的状态在核心内更新。
"""
VOCAB = 600
NUM_RESERVED = 256  # tokenization_kimi.py's num_reserved_special_tokens
SPECIAL = {0: "[BOS]", 1: "[EOS]", 2: "<|im_end|>", 3: "<|im_user|>", 4: "<|im_assistant|>",
           6: "<|start_header_id|>", 7: "<|end_header_id|>", 9: "[EOT]", 10: "<|im_system|>",
           17: "<|im_middle|>"}  # offsets after the ranks, as Kimi's tokenizer_config.json
REFERENCE_TEXTS = TEXTS + [
    "<|im_user|>user<|im_middle|>Hello there<|im_end|><|im_assistant|>assistant<|im_middle|>",
    "Unseen words: zebra quokka xylophone 9876543210",
    "[BOS] is not special unless it is the whole token: [BOS][EOS]",
]


def main():
    out = pathlib.Path(__file__).resolve().parent.parent / "tests/fixtures/tokenizer/kimi-tiktoken"
    out.mkdir(parents=True, exist_ok=True)
    # tiktoken's trainer splits with the `regex` module's default mode, where `&&` is not an
    # intersection; the split only shapes which merges are learned, so Qwen-style classes do.
    ranks = _educational.bpe_train(data=TRAIN, vocab_size=VOCAB, visualise=None, pat_str=r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
    n = len(ranks)
    names = {n + i: SPECIAL.get(i, f"<|reserved_token_{n + i}|>") for i in range(NUM_RESERVED)}
    enc = tiktoken.Encoding("kimi-fixture", pat_str=PAT, mergeable_ranks=ranks,
                            special_tokens={name: i for i, name in names.items()})
    lines = [f"{base64.b64encode(t).decode()} {r}" for t, r in sorted(ranks.items(), key=lambda x: x[1])]
    (out / "tiktoken.model").write_text("\n".join(lines) + "\n")
    (out / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "TikTokenTokenizer",
        "added_tokens_decoder": {str(n + i): {"content": s, "special": True} for i, s in SPECIAL.items()},
        "bos_token": "[BOS]", "eos_token": "[EOS]",
    }, indent=1) + "\n")
    cases = [{"text": t, "ids": enc.encode(t, allowed_special="all")} for t in REFERENCE_TEXTS]
    for c in cases:
        assert enc.decode(c["ids"]) == c["text"], c["text"]
    (out / "reference.json").write_text(json.dumps({"tokens": n, "cases": cases}, ensure_ascii=False, indent=1) + "\n")
    print(out, n, "ranks")


if __name__ == "__main__":
    main()
