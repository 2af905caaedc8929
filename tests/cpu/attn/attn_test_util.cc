#include "attn_test_util.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "base/rng.h"

namespace hanpu::test {

std::string AttnCase::describe() const {
  std::string s = fmt::format("{} T={} Tk={} Hq={} Hkv={} D={} mask={}", dtype_name(dtype), T, Tk,
                              Hq, Hkv, D, attn_mask_name(mask));
  if (Dv != 0) s += fmt::format(" Dv={}", Dv);
  if (kv) s += fmt::format(" kv={}", dtype_name(*kv));
  if (q_offset) s += fmt::format(" q_offset={}", *q_offset);
  if (mask == AttnMask::kSliding) s += fmt::format(" window={}", window);
  if (scale) s += fmt::format(" scale={}", *scale);
  if (tiles.q_rows || tiles.kv_rows) s += fmt::format(" tiles={}x{}", tiles.q_rows, tiles.kv_rows);
  return s;
}

AttnData make_attn_data(const AttnCase& c) {
  AttnData d;
  d.cs = c;
  Rng rng(c.seed);
  const size_t es = dtype_size(c.dtype), kes = dtype_size(c.kv_dtype());
  const size_t nq = static_cast<size_t>(c.T) * c.Hq * c.D,
               nk = static_cast<size_t>(c.Tk) * c.Hkv * c.D,
               nv = static_cast<size_t>(c.Tk) * c.Hkv * c.v_dim(),
               no = static_cast<size_t>(c.T) * c.Hq * c.v_dim();
  d.q.resize(nq * es);
  d.o.resize(no * es);
  d.k.resize(nk * kes);
  d.v.resize(nv * kes);
  for (size_t i = 0; i < nq; ++i)
    store_from_f32(d.q.data(), c.dtype, i, static_cast<float>(rng.normal()));
  for (size_t i = 0; i < nk; ++i)
    store_from_f32(d.k.data(), c.kv_dtype(), i, static_cast<float>(rng.normal()));
  for (size_t i = 0; i < nv; ++i)
    store_from_f32(d.v.data(), c.kv_dtype(), i, static_cast<float>(rng.normal()));
  d.lse.resize(static_cast<size_t>(c.Hq) * c.T);
  return d;
}

AttnArgs AttnData::args() {
  AttnArgs a;
  a.q = {q.data(), cs.dtype, {cs.T, cs.Hq, cs.D}};
  a.k = {k.data(), cs.kv_dtype(), {cs.Tk, cs.Hkv, cs.D}};
  a.v = {v.data(), cs.kv_dtype(), {cs.Tk, cs.Hkv, cs.v_dim()}};
  a.o = {o.data(), cs.dtype, {cs.T, cs.Hq, cs.v_dim()}};
  a.lse = {lse.data(), DType::kF32, {cs.Hq, cs.T}};
  a.mask = cs.mask;
  a.q_offset = cs.q_offset;
  a.window = cs.window;
  a.scale = cs.scale;
  return a;
}

void AttnData::poison() {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (size_t i = 0; i < o.size() / dtype_size(cs.dtype); ++i)
    store_from_f32(o.data(), cs.dtype, i, nan);
  std::fill(lse.begin(), lse.end(), nan);
}

std::vector<double> AttnData::o_as_double() const {
  std::vector<double> out(o.size() / dtype_size(cs.dtype));
  for (size_t i = 0; i < out.size(); ++i) out[i] = load_as_f32(o.data(), cs.dtype, i);
  return out;
}

std::vector<double> AttnData::lse_as_double() const { return {lse.begin(), lse.end()}; }

double attn_nmse_bound(const AttnCase& c) { return c.dtype == DType::kF32 ? 1e-10 : 1e-5; }

}  // namespace hanpu::test
