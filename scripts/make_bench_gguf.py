#!/usr/bin/env python3
"""Writes a random-weight BF16 GGUF of a real shape under llama.cpp's names and metadata, for
speed comparisons: hanpu runs it as it is, llama-quantize turns it into Q4_K_M, Q8_0, ... for
both programs. Weights are N(0, 0.02) (norms 1, A and dt bias of a trained model's range); the
tokenizer is a placeholder with one merge (speed runs feed token ids).

  qwen35 (default): Qwen3.5-0.8B (hidden 1024, 24 layers: 18 GDN with 16/16 heads of 128 + 6
    attention with 8/2 heads of 256, FFN 3584, vocab 248320, tied embeddings); 1.5 GB.
  kimi-linear: hanpu's synthetic kimi-linear-2b (src/model/synthetic_models.cc: Kimi-Linear-
    48B-A3B's layout in 16 layers of hidden 1280, KDA 16 heads of 128, MLA every fourth layer
    with 16 heads, latent 512 + rope 64, nope 128, value 128, no RoPE; layer 0 dense (3584),
    then 64 experts of 512, 4 routed + 1 shared, routed scaling 2.446; vocab 163840); 5 GB.

Usage: scripts/make_bench_gguf.py OUT.gguf [qwen35|kimi-linear]   (needs `pip install gguf numpy`)
Not part of the tests.
"""
import sys

import numpy as np
import gguf

HIDDEN, LAYERS, FFN, VOCAB = 1024, 24, 3584, 248320
HK, HV, DK, DV, CONV = 16, 16, 128, 128, 4
HQ, HKV, D = 8, 2, 256


def placeholder_tokens(w, vocab):
    """GPT-2's byte-level alphabet (printable bytes stand for themselves, the rest for 256 + n),
    one merge, numbered filler and an end token."""
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    extra = iter(range(256, 512))
    byte_tokens = [chr(b) if b in printable else chr(next(extra)) for b in range(256)]
    tokens = byte_tokens + ["ab"] + [f"t{i}" for i in range(257, vocab - 1)] + ["<|im_end|>"]
    w.add_token_list(tokens)
    w.add_token_types([1] * (vocab - 1) + [3])
    w.add_token_merges(["a b"])
    w.add_eos_token_id(vocab - 1)


def finish(w):
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


class Tensors:
    def __init__(self, w, rng):
        self.w, self.rng = w, rng

    def bf16(self, name, shape, std=0.02):
        x = self.rng.standard_normal(shape, dtype=np.float32) * std
        x = (x.view(np.uint32) >> 16).astype(np.uint16)  # truncation is fine for noise
        self.w.add_tensor(name, x, raw_shape=shape, raw_dtype=gguf.GGMLQuantizationType.BF16)

    def f32(self, name, x):
        self.w.add_tensor(name, np.ascontiguousarray(x, dtype=np.float32))


def kimi_linear(path):
    hidden, layers, ffn, vocab = 1280, 16, 3584, 163840
    H, K, conv, E, used, I = 16, 128, 4, 64, 4, 512
    C, R, N, V = 512, 64, 128, 128
    full = [(i + 1) % 4 == 0 for i in range(layers)]
    rng = np.random.default_rng(0)
    w = gguf.GGUFWriter(path, "kimi-linear")
    w.add_block_count(layers)
    w.add_context_length(131072)
    w.add_embedding_length(hidden)
    w.add_feed_forward_length(ffn)
    w.add_head_count(H)
    w.add_head_count_kv([1 if f else 0 for f in full])
    w.add_layer_norm_rms_eps(1e-5)
    w.add_expert_count(E)
    w.add_expert_used_count(used)
    w.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID)
    w.add_vocab_size(vocab)
    w.add_ssm_conv_kernel(conv)
    w.add_kda_head_dim(K)
    w.add_kv_lora_rank(C)
    w.add_rope_dimension_count(R)
    w.add_key_length(C + R)
    w.add_key_length_mla(N + R)
    w.add_value_length_mla(V)
    w.add_expert_feed_forward_length(I)
    w.add_expert_shared_count(1)
    w.add_leading_dense_block_count(1)
    w.add_expert_weights_scale(2.446)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    placeholder_tokens(w, vocab)
    t = Tensors(w, rng)
    t.bf16("token_embd.weight", (vocab, hidden))
    t.f32("output_norm.weight", np.ones(hidden))
    t.bf16("output.weight", (vocab, hidden))
    for i in range(layers):
        b = f"blk.{i}."
        t.f32(b + "attn_norm.weight", np.ones(hidden))
        t.f32(b + "ffn_norm.weight", np.ones(hidden))
        if not full[i]:
            for x in "qkv":
                t.bf16(b + f"attn_{x}.weight", (H * K, hidden))
                t.f32(b + f"ssm_conv1d_{x}.weight", (rng.standard_normal((1, H * K, 1, conv)) * 0.2))
            t.bf16(b + "ssm_f_a.weight", (K, hidden))
            t.bf16(b + "ssm_f_b.weight", (H * K, K))
            t.bf16(b + "ssm_g_a.weight", (K, hidden))
            t.bf16(b + "ssm_g_b.weight", (H * K, K))
            t.bf16(b + "ssm_beta.weight", (H, hidden))
            t.f32(b + "ssm_a", -np.exp(rng.uniform(-1, 1, (1, 1, H, 1))))
            t.f32(b + "ssm_dt.bias", rng.uniform(-2, 0, H * K))
            t.f32(b + "ssm_norm.weight", np.ones(K))
            t.bf16(b + "attn_output.weight", (hidden, H * K))
        else:
            t.bf16(b + "attn_q.weight", (H * (N + R), hidden))
            t.bf16(b + "attn_kv_a_mqa.weight", (C + R, hidden))
            t.f32(b + "attn_kv_a_norm.weight", np.ones(C))
            t.bf16(b + "attn_k_b.weight", (H, C, N))
            t.bf16(b + "attn_v_b.weight", (H, V, C))
            t.bf16(b + "attn_output.weight", (hidden, H * V))
        if i == 0:
            t.bf16(b + "ffn_gate.weight", (ffn, hidden))
            t.bf16(b + "ffn_up.weight", (ffn, hidden))
            t.bf16(b + "ffn_down.weight", (hidden, ffn))
            continue
        t.f32(b + "ffn_gate_inp.weight", rng.standard_normal((E, hidden)) * 0.02)
        t.f32(b + "exp_probs_b.bias", rng.standard_normal(E) * 0.01)
        t.bf16(b + "ffn_gate_exps.weight", (E, I, hidden))
        t.bf16(b + "ffn_up_exps.weight", (E, I, hidden))
        t.bf16(b + "ffn_down_exps.weight", (E, hidden, I))
        t.bf16(b + "ffn_gate_shexp.weight", (I, hidden))
        t.bf16(b + "ffn_up_shexp.weight", (I, hidden))
        t.bf16(b + "ffn_down_shexp.weight", (hidden, I))
    finish(w)


def main():
    if len(sys.argv) > 2 and sys.argv[2] == "kimi-linear":
        return kimi_linear(sys.argv[1])
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
    placeholder_tokens(w, VOCAB)
    t = Tensors(w, rng)
    put16 = t.bf16
    put32 = t.f32

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
    finish(w)


if __name__ == "__main__":
    main()
