// Random LA problems for parity tests: inputs in their storage dtype, the float64 reference
// on exactly those (rounded) inputs, and NMSE that never lets a NaN pass.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "hanpu/la.h"
#include "ref/la_ref.h"

namespace hanpu::test {

// kModerate: -1.5..-0.5 per token and channel, so a chunk's decay passes 2^-40 (where
// KDA gives up its chunk-wide factoring) while a 16-row block's does not.
// kUnbounded: Kimi Linear's gates, -exp(A) softplus(x) with x ~ 8 N(0, 1) and A ~ U(-1, 1.5):
// no lower bound, down to about -150 a token (a kernel that assumed Ling's -5 would be wrong).
enum class Gates { kMild, kModerate, kStrong, kZero, kUnbounded };

struct LaCase {
  LaMech mech = LaMech::kGdn;
  DType dtype = DType::kF32;
  std::vector<int64_t> seq_lens = {64};
  int H = 1, HV = 1, K = 64, V = 64;
  bool initial_state = true;
  Gates gates = Gates::kMild;
  bool normalized_qk = true;  // inputs L2-normalised as models feed them
  bool l2norm_in_kernel = false;
  uint64_t seed = 1;
  std::string describe() const;
};

// gtest prints a case by its description (test names and failure messages).
inline void PrintTo(const LaCase& c, std::ostream* os) { *os << c.describe(); }

// Owns every buffer of one problem.
struct LaData {
  LaCase cs;
  int64_t T = 0;
  std::vector<uint8_t> q, k, v, o;  // storage dtype
  std::vector<float> g, beta, s0, s1;
  std::vector<int64_t> cu;
  LaArgs args();  // views over the buffers (o, final_state included)
  void poison();  // NaN into o and s1
  std::vector<double> o_as_double() const;
};

LaData make_la_data(const LaCase& c);

// sum (x - r)^2 / sum r^2; +inf if x has any non-finite value (so NaN never passes).
double nmse(const std::vector<double>& ref, const std::vector<double>& x);
double nmse(const std::vector<double>& ref, const std::vector<float>& x);

// The bound a case must meet: fp32 storage 1e-10, f16/bf16 1e-5; unnormalised q/k (not
// what models feed, the state can grow) 100x looser.
double nmse_bound(const LaCase& c);

}  // namespace hanpu::test
