#!/usr/bin/env python3
"""Writes tests/fixtures/tokenizer/kimi_k2_splits.json: texts and the pieces Kimi's tokenizer
splits them into before BPE (tokenization_kimi.py's tiktoken pat_str, whose class
intersections `&&` the `regex` module reads in its VERSION1 mode, as tiktoken's Rust regex
does). tests/model/tokenizer_test.cc checks hanpu's "kimi-k2" pattern against them.

Usage: scripts/make_kimi_k2_splits.py   (needs `pip install regex`)
"""
import json
import pathlib

import regex

PAT = "|".join([
    r"""[\p{Han}]+""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
])

TEXTS = [
    "Hello world! It's a test, isn't it? I'VE SEEN THEM'LL",
    "HTTPServer parses JSONData; camelCaseWords and ALLCAPS.",
    "中文分词测试：我们在北京。混合English和中文123456。",
    "日本語のテキスト、カタカナとひらがな。漢字も。",
    "한국어 문장도 있습니다.",
    "Ünïcödé çãsés: naïve café, Straße, ÉCOLE.",
    "numbers 1234567 3.14159 -42 1e10",
    "def f(x):\n    return x * 2  # code, tabs\tand newlines\r\n matter too",
    "   leading spaces\n\n\ntrailing   \n",
    "emoji 🙂🚀 and symbols ©®™ ->=> !!!",
    "Mixed中文English混合Text",
    "the café's menu'S",
]


def main():
    out = pathlib.Path(__file__).resolve().parent.parent / "tests/fixtures/tokenizer/kimi_k2_splits.json"
    pat = regex.compile(PAT, flags=regex.VERSION1)
    cases = [{"text": t, "pieces": pat.findall(t)} for t in TEXTS]
    for c in cases:
        assert "".join(c["pieces"]) == c["text"], c["text"]
    out.write_text(json.dumps(cases, ensure_ascii=False, indent=1) + "\n")
    print(out)


if __name__ == "__main__":
    main()
