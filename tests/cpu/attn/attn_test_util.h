// Random attention problems for parity tests: inputs in their storage dtype, the float64
// reference on exactly those (rounded) inputs; NMSE comes from la_test_util (NaN never passes).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "hanpu/attn.h"
#include "ref/attn_ref.h"

namespace hanpu::test {

struct AttnCase {
  DType dtype = DType::kF32;               // q and o
  std::optional<DType> kv = std::nullopt;  // k and v (unset: dtype), e.g. a 16-bit KV cache
  int64_t T = 64, Tk = 64;
  int Hq = 2, Hkv = 1, D = 64;
  int Dv = 0;  // the values' head dim; 0: D
  AttnMask mask = AttnMask::kCausal;
  std::optional<int64_t> q_offset = std::nullopt;
  int64_t window = 0;
  std::optional<float> scale = std::nullopt;
  AttnTiles tiles = {};  // 0: heuristic
  uint64_t seed = 1;
  DType kv_dtype() const { return kv.value_or(dtype); }
  int v_dim() const { return Dv != 0 ? Dv : D; }
  std::string describe() const;
};
inline void PrintTo(const AttnCase& c, std::ostream* os) { *os << c.describe(); }

struct AttnData {
  AttnCase cs;
  std::vector<uint8_t> q, k, v, o;  // storage dtype
  std::vector<float> lse;
  AttnArgs args();
  void poison();  // NaN into o and lse
  std::vector<double> o_as_double() const;
  std::vector<double> lse_as_double() const;
};

AttnData make_attn_data(const AttnCase& c);

// fp32 q/o storage 1e-10, f16/bf16 1e-5 (against the reference on the rounded inputs: 16-bit
// keys and values under fp32 queries are exact inputs to an fp32 computation).
double attn_nmse_bound(const AttnCase& c);

}  // namespace hanpu::test
