// Random LA problem generator and error metrics for the LA tests.
#include "la_test_util.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "base/rng.h"

namespace hanpu::test {

std::string LaCase::describe() const {
  std::string lens;
  for (int64_t l : seq_lens) lens += fmt::format("{}{}", lens.empty() ? "" : ",", l);
  const char* gate = gates == Gates::kMild        ? "mild"
                     : gates == Gates::kModerate  ? "moderate"
                     : gates == Gates::kStrong    ? "strong"
                     : gates == Gates::kUnbounded ? "unbounded"
                                                  : "zero";
  return fmt::format("{} {} lens=[{}] H={} HV={} K={} V={} s0={} gates={} norm={} l2k={} seed={}",
                     la_mech_name(mech), dtype_name(dtype), lens, H, HV, K, V, initial_state, gate,
                     normalized_qk, l2norm_in_kernel, seed);
}

LaData make_la_data(const LaCase& c) {
  LaData d;
  d.cs = c;
  Rng rng(c.seed);
  d.cu = {0};
  for (int64_t l : c.seq_lens) d.cu.push_back(d.cu.back() + l);
  d.T = d.cu.back();
  const int64_t N = static_cast<int64_t>(c.seq_lens.size());
  const size_t es = dtype_size(c.dtype);
  const size_t nqk = static_cast<size_t>(d.T) * c.H * c.K,
               nv = static_cast<size_t>(d.T) * c.HV * c.V;
  d.q.resize(nqk * es);
  d.k.resize(nqk * es);
  d.v.resize(nv * es);
  d.o.resize(nv * es);
  auto fill_qk = [&](std::vector<uint8_t>& buf) {
    std::vector<double> row(c.K);
    for (size_t r = 0; r < static_cast<size_t>(d.T) * c.H; ++r) {
      double ss = 0;
      for (double& x : row) {
        x = rng.normal();
        ss += x * x;
      }
      // Normalised rows as models feed them; otherwise norms spread over [0.3, 1.2] (and
      // [2, 8] when the kernel is asked to normalise).
      const double target = c.normalized_qk      ? 1.0
                            : c.l2norm_in_kernel ? rng.uniform(2.0, 8.0)
                                                 : rng.uniform(0.3, 1.2);
      for (int j = 0; j < c.K; ++j) {
        store_from_f32(buf.data(), c.dtype, r * c.K + j,
                       static_cast<float>(row[j] * target / std::sqrt(ss)));
      }
    }
  };
  fill_qk(d.q);
  fill_qk(d.k);
  for (size_t i = 0; i < nv; ++i)
    store_from_f32(d.v.data(), c.dtype, i, static_cast<float>(rng.normal()));
  const size_t ng = static_cast<size_t>(d.T) * c.HV * (c.mech == LaMech::kKda ? c.K : 1);
  d.g.resize(ng);
  for (float& g : d.g) {
    switch (c.gates) {
      case Gates::kMild: {  // logsigmoid(randn) / 16, as FLA's tests
        const double x = rng.normal();
        g = static_cast<float>(-std::log1p(std::exp(-x)) / 16.0);
        break;
      }
      case Gates::kModerate:
        g = static_cast<float>(rng.uniform(-1.5, -0.5));
        break;
      case Gates::kStrong:
        g = static_cast<float>(rng.uniform(-20.0, 0.0));
        break;
      case Gates::kZero:
        g = 0.0f;
        break;
      case Gates::kUnbounded: {
        const double x = rng.normal() * 8.0, a = rng.uniform(-1.0, 1.5);
        g = static_cast<float>(-std::exp(a) * (x > 20 ? x : std::log1p(std::exp(x))));
        break;
      }
    }
  }
  d.beta.resize(static_cast<size_t>(d.T) * c.HV);
  for (float& b : d.beta) b = static_cast<float>(1.0 / (1.0 + std::exp(-rng.normal())));
  const size_t ns = static_cast<size_t>(N) * c.HV * c.K * c.V;
  if (c.initial_state) {
    d.s0.resize(ns);
    for (float& s : d.s0) s = static_cast<float>(rng.normal() * 0.5);
  }
  d.s1.resize(ns);
  return d;
}

LaArgs LaData::args() {
  const int64_t N = static_cast<int64_t>(cs.seq_lens.size());
  LaArgs a;
  a.mech = cs.mech;
  a.q = TensorView{q.data(), cs.dtype, {T, cs.H, cs.K}};
  a.k = TensorView{k.data(), cs.dtype, {T, cs.H, cs.K}};
  a.v = TensorView{v.data(), cs.dtype, {T, cs.HV, cs.V}};
  a.g = cs.mech == LaMech::kKda ? TensorView{g.data(), DType::kF32, {T, cs.HV, cs.K}}
                                : TensorView{g.data(), DType::kF32, {T, cs.HV}};
  a.beta = TensorView{beta.data(), DType::kF32, {T, cs.HV}};
  if (cs.initial_state)
    a.initial_state = TensorView{s0.data(), DType::kF32, {N, cs.HV, cs.K, cs.V}};
  a.o = MutTensorView{o.data(), cs.dtype, {T, cs.HV, cs.V}};
  a.final_state = MutTensorView{s1.data(), DType::kF32, {N, cs.HV, cs.K, cs.V}};
  if (N > 1) a.cu_seqlens = cu;
  a.qk_l2norm = cs.l2norm_in_kernel;
  return a;
}

void LaData::poison() {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (size_t i = 0; i < o.size() / dtype_size(cs.dtype); ++i)
    store_from_f32(o.data(), cs.dtype, i, nan);
  std::fill(s1.begin(), s1.end(), nan);
}

std::vector<double> LaData::o_as_double() const {
  std::vector<double> out(o.size() / dtype_size(cs.dtype));
  for (size_t i = 0; i < out.size(); ++i) out[i] = load_as_f32(o.data(), cs.dtype, i);
  return out;
}

template <typename T>
static double nmse_impl(const std::vector<double>& ref, const std::vector<T>& x) {
  if (ref.size() != x.size()) return std::numeric_limits<double>::infinity();
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double xi = static_cast<double>(x[i]);
    if (!std::isfinite(xi)) return std::numeric_limits<double>::infinity();
    num += (xi - ref[i]) * (xi - ref[i]);
    den += ref[i] * ref[i];
  }
  if (den == 0) return num == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return num / den;
}

double nmse(const std::vector<double>& ref, const std::vector<double>& x) {
  return nmse_impl(ref, x);
}
double nmse(const std::vector<double>& ref, const std::vector<float>& x) {
  return nmse_impl(ref, x);
}

double nmse_bound(const LaCase& c) {
  const double base = c.dtype == DType::kF32 ? 1e-10 : 1e-5;
  return c.normalized_qk || c.l2norm_in_kernel ? base : 100 * base;
}

}  // namespace hanpu::test
