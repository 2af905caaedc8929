#!/usr/bin/env python3
"""Writes the test vectors hanpu's GGUF block decoders are checked against, bit for bit.

For each supported block type: random blocks (seeded) with their scales drawn to include zero,
the largest and smallest normal and subnormal f16 values and both signs, decoded by the `gguf`
Python package's `gguf.quants.dequantize` (the reference llama.cpp's own tooling uses). Each
type gets tests/fixtures/quant/<type>.blocks (the raw blocks, as a GGUF stores them) and
<type>.f32 (the decoded values, little-endian float32). For the types hanpu quantizes (Q8_0,
Q4_0), random rows (a zero block, halves that tie, huge and tiny values) and the package's
`gguf.quants.quantize` of them: <type>.quant_in.f32 and <type>.quant_out.blocks. CI does not
run this.

    pip install numpy gguf
    python3 scripts/make_quant_vectors.py
"""
import pathlib

import numpy as np
from gguf import GGMLQuantizationType, GGML_QUANT_SIZES
from gguf.quants import dequantize, quantize

TYPES = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q4_K", "Q6_K", "Q2_K", "Q3_K", "Q5_K", "IQ4_NL", "IQ4_XS"]
# Where each type keeps its f16 super-scale d and, where it has one, its f16 min (dmin).
D_AT = {"Q6_K": 208, "Q3_K": 108, "Q2_K": 80}
MIN_AT = {"Q4_1": 2, "Q5_1": 2, "Q4_K": 2, "Q5_K": 2, "Q2_K": 82}
BLOCKS = 64
# f16 scales worth covering: zero (both signs), the extremes of the range, subnormals, ordinary.
SPECIAL_SCALES = np.array([0.0, -0.0, 65504.0, -65504.0, 6.1035e-05, 5.96e-08, -5.96e-08, 1.0, -1.0, 0.5],
                          dtype=np.float16)


def scales(rng, n):
    """n f16 scales: the special ones first, then random normal values of every magnitude."""
    out = rng.standard_normal(n).astype(np.float32) * np.float32(10.0) ** rng.integers(-6, 4, n)
    out = np.clip(out, -65504, 65504).astype(np.float16)
    k = min(n, len(SPECIAL_SCALES))
    out[:k] = SPECIAL_SCALES[:k]
    return out


def main():
    out_dir = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "quant"
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20261203)
    for name in TYPES:
        qtype = GGMLQuantizationType[name]
        block_elems, block_bytes = GGML_QUANT_SIZES[qtype]
        blocks = rng.integers(0, 256, size=(BLOCKS, block_bytes), dtype=np.uint8)
        # The f16 super-scales (D_AT, MIN_AT) drawn as above; the sub-scales of the K and IQ
        # types stay random bytes.
        d_at = D_AT.get(name, 0)
        blocks[:, d_at:d_at + 2] = scales(rng, BLOCKS).view(np.uint8).reshape(BLOCKS, 2)
        if name in MIN_AT:
            m_at = MIN_AT[name]
            blocks[:, m_at:m_at + 2] = scales(rng, BLOCKS)[::-1].copy().view(np.uint8).reshape(BLOCKS, 2)
        values = dequantize(blocks.reshape(-1), qtype).astype("<f4")
        assert values.size == BLOCKS * block_elems and np.all(np.isfinite(values))
        (out_dir / f"{name.lower()}.blocks").write_bytes(blocks.tobytes())
        (out_dir / f"{name.lower()}.f32").write_bytes(values.tobytes())
        print(f"{name}: {BLOCKS} blocks of {block_elems} values ({block_bytes} bytes each)")
    quantizer_vectors(out_dir, rng)


def quantizer_vectors(out_dir, rng):
    for name in ["Q8_0", "Q4_0"]:
        qtype = GGMLQuantizationType[name]
        n = BLOCKS * 32
        x = rng.standard_normal(n).astype(np.float32) * np.float32(10.0) ** rng.integers(-4, 4, n // 32).repeat(32)
        x = x.astype(np.float32)
        x[:32] = 0                                   # a zero block
        x[32:64] = np.arange(-16, 16, dtype=np.float32) * np.float32(0.5)  # values on half steps
        x[64:96] = np.float32(1e-30) * rng.standard_normal(32).astype(np.float32)  # tiny
        x[96:128] = np.float32(6e4) * rng.standard_normal(32).astype(np.float32)   # near f16's top
        blocks = quantize(x.reshape(-1, 32), qtype).reshape(-1)
        (out_dir / f"{name.lower()}.quant_in.f32").write_bytes(x.astype("<f4").tobytes())
        (out_dir / f"{name.lower()}.quant_out.blocks").write_bytes(blocks.tobytes())
        print(f"{name} quantizer: {n} values")


if __name__ == "__main__":
    main()
