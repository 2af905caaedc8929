#!/usr/bin/env python3
"""Writes a random-weight BF16 GGUF of the real Qwen3.5-0.8B shape (hidden 1024, 24 layers:
18 GDN with 16/16 heads of 128 + 6 attention with 8/2 heads of 256, FFN 3584, vocab 248320,
tied embeddings) under llama.cpp's `qwen35` names and metadata, for speed comparisons: hanpu
runs it as it is, llama-quantize turns it into Q4_K_M, Q8_0, ... for both programs. Weights
are N(0, 0.02) (norms 1, A and dt bias of a trained model's range); the tokenizer is a
placeholder of 248320 tokens with one merge (speed runs feed token ids).

Usage: scripts/make_bench_gguf.py OUT.gguf     (needs `pip install gguf numpy`)
Not part of the tests: the file is 1.5 GB.
"""
import sys

import numpy as np
import gguf

HIDDEN, LAYERS, FFN, VOCAB = 1024, 24, 3584, 248320
HK, HV, DK, DV, CONV = 16, 16, 128, 128, 4
HQ, HKV, D = 8, 2, 256


def main():
    rng = np.random.default_rng(0)
    w = gguf.GGUFWriter(sys.argv[1], "qwen35")
    w.add_block_count(LAYERS)
    w.add_context_length(262144)
    w.add_embedding_length(HIDDEN)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HQ)
    w.add_head_count_kv(HKV)
    w.add_key_length(D)
    w.add_value_length(D)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(10000000.0)
    w.add_rope_dimension_count(64)
    w.add_rope_dimension_sections([11, 11, 10, 0])  # llama.cpp reads the M-RoPE sections
    w.add_ssm_conv_kernel(CONV)
    w.add_ssm_state_size(DK)
    w.add_ssm_group_count(HK)
    w.add_ssm_time_step_rank(HV)
    w.add_ssm_inner_size(DV * HV)
    w.add_full_attention_interval(4)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen35")
    # GPT-2's byte-level alphabet: printable bytes stand for themselves, the rest for 256 + n.
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    extra = iter(range(256, 512))
    byte_tokens = [chr(b) if b in printable else chr(next(extra)) for b in range(256)]
    tokens = byte_tokens + ["ab"] + [f"t{i}" for i in range(257, VOCAB - 1)] + ["<|im_end|>"]
    w.add_token_list(tokens)
    w.add_token_types([1] * (VOCAB - 1) + [3])
    w.add_token_merges(["a b"])
    w.add_eos_token_id(VOCAB - 1)

    def bf16(shape, std=0.02):
        x = rng.standard_normal(shape, dtype=np.float32) * std
        return (x.view(np.uint32) >> 16).astype(np.uint16)  # truncation is fine for noise

    def put16(name, shape):
        w.add_tensor(name, bf16(shape), raw_shape=shape, raw_dtype=gguf.GGMLQuantizationType.BF16)

    def put32(name, x):
        w.add_tensor(name, np.ascontiguousarray(x, dtype=np.float32))

    put16("token_embd.weight", (VOCAB, HIDDEN))
    put32("output_norm.weight", np.ones(HIDDEN))
    for i in range(LAYERS):
        b = f"blk.{i}."
        put32(b + "attn_norm.weight", np.ones(HIDDEN))
        put32(b + "post_attention_norm.weight", np.ones(HIDDEN))
        if (i + 1) % 4:
            put16(b + "attn_qkv.weight", (2 * HK * DK + HV * DV, HIDDEN))
            put16(b + "attn_gate.weight", (HV * DV, HIDDEN))
            put16(b + "ssm_beta.weight", (HV, HIDDEN))
            put16(b + "ssm_alpha.weight", (HV, HIDDEN))
            put32(b + "ssm_conv1d.weight", rng.standard_normal((2 * HK * DK + HV * DV, CONV)) * 0.2)
            put32(b + "ssm_a", -np.exp(rng.uniform(-1, 1, HV)))
            put32(b + "ssm_dt.bias", rng.uniform(-2, 0, HV))
            put32(b + "ssm_norm.weight", np.ones(DV))
            put16(b + "ssm_out.weight", (HIDDEN, HV * DV))
        else:
            put16(b + "attn_q.weight", (HQ * 2 * D, HIDDEN))
            put16(b + "attn_k.weight", (HKV * D, HIDDEN))
            put16(b + "attn_v.weight", (HKV * D, HIDDEN))
            put16(b + "attn_output.weight", (HIDDEN, HQ * D))
            put32(b + "attn_q_norm.weight", np.ones(D))
            put32(b + "attn_k_norm.weight", np.ones(D))
        put16(b + "ffn_gate.weight", (FFN, HIDDEN))
        put16(b + "ffn_up.weight", (FFN, HIDDEN))
        put16(b + "ffn_down.weight", (HIDDEN, FFN))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
