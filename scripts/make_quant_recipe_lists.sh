#!/bin/bash
# Writes tests/fixtures/quant/qwen35-0.8b-<mix>.types: for each mix hanpu quantize writes, the
# type llama-quantize gives each tensor of a Qwen3.5-0.8B-shaped model ("name TYPE d0,d1"
# per line, row-major shapes, in the file's order). tests/model/gguf_quantize_test.cc checks
# hanpu's recipe against them. CI does not run this.
#
#   scripts/make_quant_recipe_lists.sh LLAMA_BIN_DIR MODEL-BF16.gguf
# LLAMA_BIN_DIR: a llama.cpp build's bin folder (llama-quantize and its libraries);
# MODEL-BF16.gguf: e.g. scripts/make_bench_gguf.py's random-weight Qwen3.5-0.8B. Needs
# `pip install gguf`.
set -euo pipefail
bin=$1
model=$2
out_dir=$(cd "$(dirname "$0")/.." && pwd)/tests/fixtures/quant
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for mix in Q4_0 Q8_0 Q4_K_M Q5_K_M Q6_K IQ4_XS; do
  lower=$(echo "$mix" | tr 'A-Z' 'a-z')
  LD_LIBRARY_PATH="$bin" "$bin/llama-quantize" "$model" "$tmp/$lower.gguf" "$mix" > /dev/null 2>&1
  python3 - "$tmp/$lower.gguf" "$out_dir/qwen35-0.8b-$lower.types" <<'PY'
import sys
from gguf import GGUFReader
reader = GGUFReader(sys.argv[1])
with open(sys.argv[2], "w") as f:
    for t in reader.tensors:
        f.write(f"{t.name} {t.tensor_type.name} {','.join(str(int(d)) for d in reversed(list(t.shape)))}\n")
PY
  rm -f "$tmp/$lower.gguf"
  echo "$mix: $out_dir/qwen35-0.8b-$lower.types"
done
