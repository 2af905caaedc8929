// A tiny Qwen3.5-style hybrid shape for the NPU prefill tests: every layer kind and grouped
// heads in both mixers, small enough to run in milliseconds.
#pragma once

#include "hanpu/npu.h"

namespace hanpu::npu {

inline NpuHybridShape tiny_hybrid_shape() {
  NpuHybridShape s;
  s.hidden = 64;
  s.ffn = 96;
  s.la_layers = 3;
  s.attn_layers = 1;
  s.la_qk_heads = 2;
  s.la_v_heads = 4;
  s.la_key_dim = s.la_value_dim = 32;
  s.attn_heads = 4;
  s.kv_heads = 2;
  s.head_dim = 32;
  s.rotary_fraction = 0.25f;
  s.rope_theta = 1e4f;
  return s;
}

}  // namespace hanpu::npu
