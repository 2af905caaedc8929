// The inputs every LA bench row runs on (see la_bench_inputs.h).
#include "la_bench_inputs.h"

#include <cmath>
#include <random>

namespace hanpu::cli {

// Normalised q/k rows, mild gates (logsigmoid(randn)/16), sigmoid betas: what a model feeds.
LaBenchInputs make_la_bench_inputs(LaMech mech, DType dt, int64_t T, int H, int HV, int D,
                                   uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd;
  LaBenchInputs in;
  auto rows = [&](std::vector<float>& x, int64_t n_rows) {
    x.resize(n_rows * D);
    for (int64_t r = 0; r < n_rows; ++r) {
      float ss = 0;
      for (int j = 0; j < D; ++j) ss += (x[r * D + j] = nd(rng)) * x[r * D + j];
      for (int j = 0; j < D; ++j) x[r * D + j] /= std::sqrt(ss);
    }
  };
  rows(in.q, T * H);
  rows(in.k, T * H);
  in.v.resize(T * HV * D);
  for (float& x : in.v) x = nd(rng);
  in.g.resize(T * HV * (mech == LaMech::kKda ? D : 1));
  for (float& x : in.g) x = -std::log1p(std::exp(-nd(rng))) / 16.0f;
  in.beta.resize(T * HV);
  for (float& x : in.beta) x = 1.0f / (1.0f + std::exp(-nd(rng)));
  in.state.resize(static_cast<size_t>(HV) * D * D);
  in.o.resize(T * HV * D);
  if (dt != DType::kF32) {
    auto conv = [&](const std::vector<float>& x, std::vector<uint16_t>& y) {
      y.resize(x.size());
      for (size_t i = 0; i < x.size(); ++i) store_from_f32(y.data(), dt, i, x[i]);
    };
    conv(in.q, in.q16);
    conv(in.k, in.k16);
    conv(in.v, in.v16);
    in.o16.resize(in.o.size());
  }
  return in;
}

LaArgs la_bench_args(LaMech mech, DType dt, int64_t T, int H, int HV, int D, LaBenchInputs& in) {
  const bool half = dt != DType::kF32;
  LaArgs a;
  a.mech = mech;
  a.q = {half ? static_cast<const void*>(in.q16.data()) : in.q.data(), dt, {T, H, D}};
  a.k = {half ? static_cast<const void*>(in.k16.data()) : in.k.data(), dt, {T, H, D}};
  a.v = {half ? static_cast<const void*>(in.v16.data()) : in.v.data(), dt, {T, HV, D}};
  a.o = {half ? static_cast<void*>(in.o16.data()) : in.o.data(), dt, {T, HV, D}};
  a.g = mech == LaMech::kKda ? TensorView{in.g.data(), DType::kF32, {T, HV, D}}
                             : TensorView{in.g.data(), DType::kF32, {T, HV}};
  a.beta = {in.beta.data(), DType::kF32, {T, HV}};
  a.final_state = {in.state.data(), DType::kF32, {1, HV, D, D}};
  return a;
}

}  // namespace hanpu::cli
