#!/usr/bin/env python3
"""Writes the test vectors hanpu's GGUF block decoders are checked against, bit for bit.

For each supported block type: random blocks (seeded) with their scales drawn to include zero,
the largest and smallest normal and subnormal f16 values and both signs, decoded by the `gguf`
Python package's `gguf.quants.dequantize` (the reference llama.cpp's own tooling uses). Each
type gets tests/fixtures/quant/<type>.blocks (the raw blocks, as a GGUF stores them) and
<type>.f32 (the decoded values, little-endian float32). For the types hanpu quantizes, random
rows (a zero block, halves that tie, huge and tiny values) and their quantized blocks:
<type>.quant_in.f32 and <type>.quant_out.blocks. The 32-value types are quantized by the
package's `gguf.quants.quantize`; the K and IQ4 types, which the package does not quantize, by
ggml's own `ggml_quantize_chunk` (what llama-quantize calls), loaded from a llama.cpp build's
libggml-base.so given with --ggml-lib (without it their vectors are left as they are). CI does
not run this.

    pip install numpy gguf
    python3 scripts/make_quant_vectors.py --ggml-lib /path/to/llama.cpp/build/bin/libggml-base.so
"""
import argparse
import ctypes
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
    parser = argparse.ArgumentParser()
    parser.add_argument("--ggml-lib", help="libggml-base.so of a llama.cpp build, for the K and IQ4 quantizer vectors")
    args = parser.parse_args()
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
    if args.ggml_lib:
        ggml_quantizer_vectors(out_dir, rng, ctypes.CDLL(args.ggml_lib))


def quantizer_input(rng, block_elems, huge):
    """BLOCKS blocks of values: magnitudes from 1e-4 to 1e3 block by block, then the hard cases."""
    n = BLOCKS * block_elems
    x = rng.standard_normal(n).astype(np.float32) * np.float32(10.0) ** rng.integers(-4, 4, BLOCKS).repeat(block_elems)
    x = x.astype(np.float32)
    b = block_elems
    x[:b] = 0                                                         # a zero block
    x[b:2 * b] = np.resize(np.arange(-16, 16, dtype=np.float32) * np.float32(0.5), b)  # half steps
    x[2 * b:3 * b] = np.float32(1e-30) * rng.standard_normal(b).astype(np.float32)     # tiny
    x[3 * b:4 * b] = np.float32(huge) * rng.standard_normal(b).astype(np.float32)      # large
    x[4 * b:5 * b] = np.abs(x[4 * b:5 * b])                           # all positive (min 0)
    x[5 * b:6 * b] = -np.abs(x[5 * b:6 * b])                          # all negative
    if b > 32:
        x[6 * b:6 * b + 32] = 0                                       # one zero sub-block
    return x


def quantizer_vectors(out_dir, rng):
    for name in ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"]:
        qtype = GGMLQuantizationType[name]
        x = quantizer_input(rng, 32, 6e4)
        blocks = quantize(x.reshape(-1, 32), qtype).reshape(-1)
        write_quantizer_vectors(out_dir, name, x, blocks)


def ggml_quantizer_vectors(out_dir, rng, lib):
    """The K and IQ4 types, through ggml_quantize_chunk with no importance matrix."""
    lib.ggml_quantize_chunk.restype = ctypes.c_size_t
    lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                        ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    for name in ["Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS"]:
        qtype = GGMLQuantizationType[name]
        block_elems, block_bytes = GGML_QUANT_SIZES[qtype]
        x = quantizer_input(rng, block_elems, 1e3)
        out = np.zeros(BLOCKS * block_bytes, dtype=np.uint8)
        # One row per block, so every block is quantized on its own as in a tensor's rows.
        written = lib.ggml_quantize_chunk(int(qtype), x.ctypes.data, out.ctypes.data, 0, BLOCKS, block_elems, None)
        assert written == out.size, (name, written, out.size)
        write_quantizer_vectors(out_dir, name, x, out)


def write_quantizer_vectors(out_dir, name, x, blocks):
    (out_dir / f"{name.lower()}.quant_in.f32").write_bytes(x.astype("<f4").tobytes())
    (out_dir / f"{name.lower()}.quant_out.blocks").write_bytes(blocks.tobytes())
    print(f"{name} quantizer: {x.size} values")


if __name__ == "__main__":
    main()
