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
# The models' real chat templates (Qwen3.5's for the dense fixture, Qwen3's for Qwen3-Next),
# kept under tests/fixtures/chat_templates/ (see the README there).
TEMPLATES = pathlib.Path(__file__).resolve().parent.parent / "tests/fixtures/chat_templates"
CHATS = [  # (messages, add_generation_prompt, enable_thinking or None = undefined)
    ([{"role": "user", "content": "Hybrid models interleave linear attention"}], True, None),
    ([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Le café naïve 東京 2048!"}], True, False),
    ([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello! How can I help?"},
      {"role": "user", "content": "def f(x):\n    return x\t# ok"}], True, True),
    ([{"role": "user", "content": "🙂 → ∑"}, {"role": "assistant", "content": "It's LOUD."}], False, None),
]


def make_tokenizer(vocab_size, texts=None):
    """A byte-level BPE of `vocab_size` ids with Qwen3.5's regex, NFC and special tokens,
    trained on `texts` (default: the fixtures' paragraphs)."""
    tok = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN35_PRETOKENIZE), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(CORPUS * 4 if texts is None else texts, trainer=trainer)
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


def tiny_kimi_linear_config(vocab):
    """Kimi Linear's layout scaled down: KDA layers, an MLA layer (no RoPE in its code), one
    dense MLP layer then DeepSeek-style MoE (sigmoid router with its correction bias, groups
    of experts, a shared expert). Query/key head 16 + 8 against value head 16 (Dk != Dv)."""
    from transformers import KimiLinearConfig
    return KimiLinearConfig(
        vocab_size=vocab, hidden_size=64, intermediate_size=96, moe_intermediate_size=32,
        num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=4,
        kv_lora_rank=32, q_lora_rank=None, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16,
        n_group=2, topk_group=1, num_local_experts=8, num_experts_per_tok=2, n_shared_experts=1,
        routed_scaling_factor=2.446, norm_topk_prob=True,
        layer_types=["linear_attention", "linear_attention", "full_attention", "linear_attention"],
        mlp_layer_types=["dense", "sparse", "sparse", "sparse"],
        linear_head_dim=16, linear_num_heads=4, linear_conv_kernel_dim=4, rms_norm_eps=1e-5,
        tie_word_embeddings=False, max_position_embeddings=4096, eos_token_id=2, bos_token_id=None,
        pad_token_id=0)


def tiny_bailing_hybrid_config(vocab):
    """Ling's layout scaled down: groups of two layers (KDA, then MLA with DeepSeek's interleaved
    RoPE), the bounded KDA gate, a low-rank query, one dense MLP layer then MoE, and one layer's
    SwiGLU clipped (experts and shared expert)."""
    from transformers import BailingHybridConfig
    return BailingHybridConfig(
        vocab_size=vocab, hidden_size=64, intermediate_size=96, moe_intermediate_size=32,
        num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=4, head_dim=16,
        kv_lora_rank=32, q_lora_rank=24, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16,
        n_group=2, topk_group=1, num_local_experts=8, num_experts_per_tok=2, n_shared_experts=1,
        routed_scaling_factor=2.5, norm_topk_prob=True, first_k_dense_replace=1,
        layer_group_size=2, short_conv_kernel_size=4, kda_safe_gate=True, kda_lower_bound=-5.0,
        rope_theta=10000.0, expert_swiglu_limit_list=[0, 0, 0, 0.25],
        share_expert_swiglu_limit_list=[0, 0, 0, 0.25], rms_norm_eps=1e-6, num_mtp_layers=0,
        tie_word_embeddings=False, max_position_embeddings=4096, eos_token_id=2, bos_token_id=None,
        pad_token_id=0)


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
                # Qwen's norms scale by 1 + w (but the gated one by w); Kimi's and Ling's by w.
                one_plus = getattr(model.config, "model_type", "") in ("qwen3_5_text", "qwen3_next")
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g)
                        if name.endswith("linear_attn.norm.weight") or not one_plus
                        else 0.2 * torch.randn(p.shape, generator=g))
            else:
                fan_in = p.shape[-1] if p.dim() > 1 else 1
                p.copy_(torch.randn(p.shape, generator=g) * (0.5 / fan_in ** 0.5 if p.dim() > 1 else 0.1))
        for name, b in model.named_buffers():  # the router's score correction bias
            if name.endswith("e_score_correction_bias"):
                b.copy_(0.1 * torch.randn(b.shape, generator=g))


def chat_references(folder, tok):
    """The chat template rendered by transformers' own apply_chat_template (jinja2) from the
    saved folder, and the ids of the rendered text."""
    from transformers import AutoTokenizer
    hf = AutoTokenizer.from_pretrained(str(folder))
    out = []
    for messages, gen, think in CHATS:
        kwargs = {} if think is None else {"enable_thinking": think}
        text = hf.apply_chat_template(messages, tokenize=False, add_generation_prompt=gen, **kwargs)
        case = {"messages": messages, "add_generation_prompt": gen, "text": text, "ids": tok.encode(text).ids}
        if think is not None:
            case["enable_thinking"] = think
        out.append(case)
    return out


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


def v_tiled_order(hk, hv):
    """llama.cpp's Qwen3.5 converter stores value heads tiled (gguf head r*Hk + k = HF head
    k*g + r) so ggml's modulo broadcast of q/k heads replaces repeat_interleave."""
    g = hv // hk
    return [(j % hk) * g + j // hk for j in range(hv)]


def write_gguf(model, config, tok, path, arch, chat_template):
    """The fixture as llama.cpp's convert_hf_to_gguf.py would write it (F32 tensors): its
    tensor names, zero-centred norms stored as 1 + w (not the gated norm), A_log as
    -exp(A_log), conv weights squeezed, Qwen3-Next's qkvz split into attn_qkv / attn_gate,
    Qwen3.5's value heads in tiled order."""
    import gguf
    import numpy as np
    w = gguf.GGUFWriter(str(path), arch)
    c = config
    hk, hv, dk, dv = c.linear_num_key_heads, c.linear_num_value_heads, c.linear_key_head_dim, c.linear_value_head_dim
    g = hv // hk
    w.add_block_count(c.num_hidden_layers)
    w.add_context_length(c.max_position_embeddings)
    w.add_embedding_length(c.hidden_size)
    w.add_feed_forward_length(c.intermediate_size)
    w.add_head_count(c.num_attention_heads)
    w.add_head_count_kv(c.num_key_value_heads)
    w.add_key_length(c.head_dim)
    w.add_value_length(c.head_dim)
    w.add_layer_norm_rms_eps(c.rms_norm_eps)
    w.add_rope_freq_base(c.rope_parameters["rope_theta"])
    w.add_rope_dimension_count(int(c.head_dim * c.rope_parameters["partial_rotary_factor"]))
    w.add_ssm_conv_kernel(c.linear_conv_kernel_dim)
    w.add_ssm_state_size(dk)
    w.add_ssm_group_count(hk)
    w.add_ssm_time_step_rank(hv)
    w.add_ssm_inner_size(dv * hv)
    w.add_full_attention_interval(4)
    if arch == "qwen3next":
        w.add_expert_count(c.num_experts)
        w.add_expert_used_count(c.num_experts_per_tok)
        w.add_expert_feed_forward_length(c.moe_intermediate_size)
        w.add_expert_shared_feed_forward_length(c.shared_expert_intermediate_size)
    add_tokenizer(w, tok, c.eos_token_id, chat_template)
    sd = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    tiled = v_tiled_order(hk, hv) if arch == "qwen35" else list(range(hv))

    def vrows(x, per):  # rows of value-head blocks of `per` rows, into tiled order
        return np.concatenate([x[h * per:(h + 1) * per] for h in tiled], axis=0)

    def put(name, x):
        w.add_tensor(name, np.ascontiguousarray(x.astype(np.float32)))

    put("token_embd.weight", sd["model.embed_tokens.weight"])
    put("output_norm.weight", sd["model.norm.weight"] + 1)
    if "lm_head.weight" in sd and not c.tie_word_embeddings:
        put("output.weight", sd["lm_head.weight"])
    for i in range(c.num_hidden_layers):
        p, b = f"model.layers.{i}.", f"blk.{i}."
        put(b + "attn_norm.weight", sd[p + "input_layernorm.weight"] + 1)
        put(b + "post_attention_norm.weight", sd[p + "post_attention_layernorm.weight"] + 1)
        if c.layer_types[i] == "linear_attention":
            la = p + "linear_attn."
            if arch == "qwen35":
                qkv = sd[la + "in_proj_qkv.weight"]
                put(b + "attn_qkv.weight", np.concatenate([qkv[:2 * hk * dk], vrows(qkv[2 * hk * dk:], dv)]))
                put(b + "attn_gate.weight", vrows(sd[la + "in_proj_z.weight"], dv))
                put(b + "ssm_beta.weight", vrows(sd[la + "in_proj_b.weight"], 1))
                put(b + "ssm_alpha.weight", vrows(sd[la + "in_proj_a.weight"], 1))
            else:
                qkvz = sd[la + "in_proj_qkvz.weight"].reshape(hk, 2 * dk + 2 * g * dv, -1)
                q, k, v, z = np.split(qkvz, [dk, 2 * dk, 2 * dk + g * dv], axis=1)
                put(b + "attn_qkv.weight", np.concatenate([q.reshape(hk * dk, -1), k.reshape(hk * dk, -1),
                                                            v.reshape(hv * dv, -1)]))
                put(b + "attn_gate.weight", z.reshape(hv * dv, -1))
                put(b + "ssm_ba.weight", sd[la + "in_proj_ba.weight"])
            conv = sd[la + "conv1d.weight"].squeeze(1)
            put(b + "ssm_conv1d.weight", np.concatenate([conv[:2 * hk * dk], vrows(conv[2 * hk * dk:], dv)]))
            put(b + "ssm_a", -np.exp(vrows(sd[la + "A_log"], 1)))
            put(b + "ssm_dt.bias", vrows(sd[la + "dt_bias"], 1))
            put(b + "ssm_norm.weight", sd[la + "norm.weight"])
            out = sd[la + "out_proj.weight"]  # [hidden, HV V]: value heads are its columns
            put(b + "ssm_out.weight", vrows(out.T, dv).T)
        else:
            at = p + "self_attn."
            for hf, gg in [("q_proj", "attn_q"), ("k_proj", "attn_k"), ("v_proj", "attn_v"), ("o_proj", "attn_output")]:
                put(b + gg + ".weight", sd[at + hf + ".weight"])
            put(b + "attn_q_norm.weight", sd[at + "q_norm.weight"] + 1)
            put(b + "attn_k_norm.weight", sd[at + "k_norm.weight"] + 1)
        m = p + "mlp."
        if m + "gate.weight" in sd:  # MoE
            put(b + "ffn_gate_inp.weight", sd[m + "gate.weight"])
            E = c.num_experts
            if m + "experts.gate_up_proj" in sd:
                gu, dn = sd[m + "experts.gate_up_proj"], sd[m + "experts.down_proj"]
                gate, up = gu[:, :c.moe_intermediate_size], gu[:, c.moe_intermediate_size:]
            else:
                gate = np.stack([sd[f"{m}experts.{e}.gate_proj.weight"] for e in range(E)])
                up = np.stack([sd[f"{m}experts.{e}.up_proj.weight"] for e in range(E)])
                dn = np.stack([sd[f"{m}experts.{e}.down_proj.weight"] for e in range(E)])
            put(b + "ffn_gate_exps.weight", gate)
            put(b + "ffn_up_exps.weight", up)
            put(b + "ffn_down_exps.weight", dn)
            put(b + "ffn_gate_inp_shexp.weight", sd[m + "shared_expert_gate.weight"])  # [1, hidden]
            put(b + "ffn_gate_shexp.weight", sd[m + "shared_expert.gate_proj.weight"])
            put(b + "ffn_up_shexp.weight", sd[m + "shared_expert.up_proj.weight"])
            put(b + "ffn_down_shexp.weight", sd[m + "shared_expert.down_proj.weight"])
        else:
            for n in ["gate", "up", "down"]:
                put(b + f"ffn_{n}.weight", sd[m + f"{n}_proj.weight"])
    finish(w)


def finish(w):
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def add_tokenizer(w, tok, eos_id, chat_template):
    """The tokenizer as llama.cpp keeps it: tokens by id, types (3 = control), merges "a b"."""
    vocab = tok.get_vocab()
    tokens = [None] * len(vocab)
    for t, i in vocab.items():
        tokens[i] = t
    specials = {a.content for a in tok.get_added_tokens_decoder().values()}
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen35" if w.arch == "qwen35" else "qwen2")
    w.add_token_list(tokens)
    w.add_token_types([3 if t in specials else 1 for t in tokens])
    merges = json.loads(tok.to_str())["model"]["merges"]
    w.add_token_merges([" ".join(m) if isinstance(m, list) else m for m in merges])
    w.add_eos_token_id(eos_id)
    w.add_chat_template(chat_template)


def write_kimi_linear_gguf(model, config, tok, path, chat_template):
    """Kimi Linear as llama.cpp's conversion/kimi_linear.py writes it (F32 tensors): head_count_kv
    per layer (0 = KDA, 1 = MLA as MQA over the latent), key_length = latent + rope dims, the
    MLA head dims as key_length_mla / value_length_mla; A_log as -exp(A_log), dt_bias as
    ssm_dt.bias, the convs as [1, HK, 1, kernel]; kv_b split per head into attn_k_b [H, C, N]
    (transposed) and attn_v_b [H, Dv, C]; experts stacked; norms as the plain w. The router's
    groups are written under the standard keys (the converter reads them as n_group /
    topk_group; Kimi-Linear-48B has one group, so its files need none)."""
    import gguf
    import numpy as np
    c = config
    w = gguf.GGUFWriter(str(path), "kimi-linear")
    a = "kimi-linear."
    full = [t == "full_attention" for t in c.layer_types]
    w.add_block_count(c.num_hidden_layers)
    w.add_context_length(c.model_max_length if hasattr(c, "model_max_length") else c.max_position_embeddings)
    w.add_embedding_length(c.hidden_size)
    w.add_feed_forward_length(c.intermediate_size)
    w.add_head_count(c.num_attention_heads)
    w.add_head_count_kv([1 if f else 0 for f in full])
    w.add_layer_norm_rms_eps(c.rms_norm_eps)
    w.add_expert_count(c.num_experts)
    w.add_expert_used_count(c.num_experts_per_token)
    w.add_expert_group_count(c.num_expert_group)
    w.add_expert_group_used_count(c.topk_group)
    w.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID)
    w.add_vocab_size(c.vocab_size)
    w.add_ssm_conv_kernel(c.linear_conv_kernel_dim)
    w.add_kda_head_dim(c.linear_head_dim)
    w.add_kv_lora_rank(c.kv_lora_rank)
    w.add_rope_dimension_count(c.qk_rope_head_dim)
    w.add_key_length(c.kv_lora_rank + c.qk_rope_head_dim)
    w.add_key_length_mla(c.qk_nope_head_dim + c.qk_rope_head_dim)
    w.add_value_length_mla(c.v_head_dim)
    w.add_expert_feed_forward_length(c.moe_intermediate_size)
    w.add_expert_shared_count(c.num_shared_experts)
    w.add_leading_dense_block_count(sum(1 for t in c.mlp_layer_types if t == "dense"))
    w.add_expert_weights_scale(c.routed_scaling_factor)
    add_tokenizer(w, tok, c.eos_token_id, chat_template)
    # The names the release uses (what save_pretrained wrote, not the module's own).
    from safetensors.numpy import load_file
    sd = load_file(str(path.parent / "model.safetensors"))

    def put(name, x):
        w.add_tensor(name, np.ascontiguousarray(x.astype(np.float32)))

    put("token_embd.weight", sd["model.embed_tokens.weight"])
    put("output_norm.weight", sd["model.norm.weight"])
    put("output.weight", sd["lm_head.weight"])
    H, N, Dv, C = c.num_attention_heads, c.qk_nope_head_dim, c.v_head_dim, c.kv_lora_rank
    for i in range(c.num_hidden_layers):
        p, b = f"model.layers.{i}.", f"blk.{i}."
        at = p + "self_attn."
        put(b + "attn_norm.weight", sd[p + "input_layernorm.weight"])
        put(b + "ffn_norm.weight", sd[p + "post_attention_layernorm.weight"])
        if not full[i]:
            for x in "qkv":
                put(b + f"attn_{x}.weight", sd[at + f"{x}_proj.weight"])
                conv = sd[at + f"{x}_conv1d.weight"]  # [HK, 1, kernel]
                put(b + f"ssm_conv1d_{x}.weight", conv.reshape(1, conv.shape[0], 1, conv.shape[-1]))
            for hf, gg in [("f_a_proj", "ssm_f_a"), ("f_b_proj", "ssm_f_b"), ("g_a_proj", "ssm_g_a"),
                           ("g_b_proj", "ssm_g_b"), ("b_proj", "ssm_beta"), ("o_norm", "ssm_norm"),
                           ("o_proj", "attn_output")]:
                put(b + gg + ".weight", sd[at + hf + ".weight"])
            put(b + "ssm_a", -np.exp(sd[at + "A_log"]))
            put(b + "ssm_dt.bias", sd[at + "dt_bias"])
        else:
            put(b + "attn_q.weight", sd[at + "q_proj.weight"])
            put(b + "attn_kv_a_mqa.weight", sd[at + "kv_a_proj_with_mqa.weight"])
            put(b + "attn_kv_a_norm.weight", sd[at + "kv_a_layernorm.weight"])
            kv_b = sd[at + "kv_b_proj.weight"].reshape(H, N + Dv, C)
            put(b + "attn_k_b.weight", kv_b[:, :N, :].transpose(0, 2, 1))
            put(b + "attn_v_b.weight", kv_b[:, N:, :])
            put(b + "attn_output.weight", sd[at + "o_proj.weight"])
        m = p + "block_sparse_moe."
        if c.mlp_layer_types[i] == "dense":
            for n in ["gate", "up", "down"]:
                put(b + f"ffn_{n}.weight", sd[m + f"{n}_proj.weight"])
            continue
        put(b + "ffn_gate_inp.weight", sd[m + "gate.weight"])
        put(b + "exp_probs_b.bias", sd[m + "gate.e_score_correction_bias"])
        for wid, gg in [("w1", "gate"), ("w3", "up"), ("w2", "down")]:
            put(b + f"ffn_{gg}_exps.weight", np.stack([sd[f"{m}experts.{e}.{wid}.weight"]
                                                       for e in range(c.num_experts)]))
        for n in ["gate", "up", "down"]:
            put(b + f"ffn_{n}_shexp.weight", sd[m + f"shared_experts.{n}_proj.weight"])
    finish(w)


def build(name, make_config, model_cls, seed, root, arch, template, gguf=True):
    d = root / name
    d.mkdir(parents=True, exist_ok=True)
    tok = make_tokenizer(vocab_size=384)
    tok.save(str(d / "tokenizer.json"))
    torch.manual_seed(seed)
    config = make_config(tok.get_vocab_size())
    model = model_cls(config).float().eval()
    randomize(model, seed)
    model.save_pretrained(str(d), safe_serialization=True)
    chat_template = (TEMPLATES / template).read_text()
    (d / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
        "chat_template": chat_template}, indent=1))
    if arch == "kimi-linear":
        write_kimi_linear_gguf(model, config, tok, d / "model.gguf", chat_template)
    elif gguf:
        write_gguf(model, config, tok, d / "model.gguf", arch, chat_template)
    refs = references(model, tok)
    refs["chat"] = chat_references(d, tok)
    refs["model_type"] = config.model_type
    (d / "reference.json").write_text(json.dumps(refs))
    print(f"{name}: {sum(p.numel() for p in model.parameters())} parameters -> {d}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(pathlib.Path(__file__).resolve().parent.parent / "tests/fixtures/models"))
    ap.add_argument("--only", nargs="*", help="fixture names to (re)write (default: all)")
    args = ap.parse_args()
    root = pathlib.Path(args.out)
    from transformers import (BailingHybridForCausalLM, KimiLinearForCausalLM, Qwen3_5ForCausalLM,
                              Qwen3NextForCausalLM)
    fixtures = [
        ("qwen35-tiny", tiny_qwen35_config, Qwen3_5ForCausalLM, 35, "qwen35", "qwen3.5.jinja", True),
        ("qwen3next-tiny", tiny_qwen3_next_config, Qwen3NextForCausalLM, 3, "qwen3next", "qwen3.jinja", True),
        # KDA hybrids. llama.cpp's converters write Kimi Linear as a GGUF, not Ling.
        ("kimi-linear-tiny", tiny_kimi_linear_config, KimiLinearForCausalLM, 48, "kimi-linear", "qwen3.jinja", True),
        ("ling-tiny", tiny_bailing_hybrid_config, BailingHybridForCausalLM, 30, None, "qwen3.jinja", False),
    ]
    for name, make_config, cls, seed, arch, template, gguf in fixtures:
        if args.only and name not in args.only:
            continue
        build(name, make_config, cls, seed, root, arch, template, gguf)


if __name__ == "__main__":
    main()
