#!/usr/bin/env python3
"""Writes a quantized copy of a fixture's model.gguf: every 2-D weight whose rows are whole
blocks of the type (and that llama.cpp's quantizer would quantize: not the norms, not
ssm_conv1d) stored in that type with the gguf package's reference quantizer, every other
tensor and all metadata copied unchanged.

Usage: scripts/make_quant_fixture.py tests/fixtures/models/qwen35-tiny Q8_0
writes tests/fixtures/models/qwen35-tiny/model-q8_0.gguf. Needs `pip install gguf numpy`.
"""
import sys
from pathlib import Path

import numpy as np
import gguf


def main():
    folder, type_name = Path(sys.argv[1]), sys.argv[2]
    qtype = gguf.GGMLQuantizationType[type_name]
    block = gguf.GGML_QUANT_SIZES[qtype][0]
    reader = gguf.GGUFReader(folder / "model.gguf")
    arch = reader.fields["general.architecture"].contents()
    out = folder / f"model-{type_name.lower()}.gguf"
    writer = gguf.GGUFWriter(str(out), arch)
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        vtype = field.types[0]
        sub = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(key, field.contents(), vtype, sub_type=sub)
    for t in reader.tensors:
        data = np.asarray(t.data)
        keep = (t.tensor_type != gguf.GGMLQuantizationType.F32 or data.ndim != 2
                or data.shape[-1] % block != 0 or "norm" in t.name or "conv1d" in t.name)
        if keep:
            writer.add_tensor(t.name, data, raw_dtype=t.tensor_type)
            continue
        q = gguf.quants.quantize(data.astype(np.float32), qtype)
        writer.add_tensor(t.name, q, raw_shape=q.shape, raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    print(out)


if __name__ == "__main__":
    main()
