// Keys and values through AttnArgs' strides (the KvCache's head-major rows): every kernel
// (both fused placements in fp32 and bf16 products, the layer baseline, decode) gives
// bit for bit what it gives on the same rows stored token-major, NaN in the rows the strides
// skip never reaches the output, the float64 reference agrees, and strides whose rows
// overlap are refused by name with nothing written.
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "attn_test_util.h"
#include "la_test_util.h"
#include "ref/attn_ref.h"
#include "simd/gemm_bf16_dot.h"

namespace hanpu::test {
namespace {

// The token-major [Tk, Hkv, D] rows of `src` copied head-major: head h's rows at
// (h capacity + t) D, capacity = Tk + pad; the pad rows hold NaN.
std::vector<uint8_t> head_major(const std::vector<uint8_t>& src, DType dt, int64_t Tk, int Hkv,
                                int D, int64_t pad) {
  const size_t es = dtype_size(dt), row = static_cast<size_t>(D) * es;
  const int64_t cap = Tk + pad;
  std::vector<uint8_t> out(static_cast<size_t>(cap) * Hkv * row);
  for (size_t i = 0; i < out.size() / es; ++i)
    store_from_f32(out.data(), dt, i, std::numeric_limits<float>::quiet_NaN());
  for (int64_t t = 0; t < Tk; ++t) {
    for (int h = 0; h < Hkv; ++h) {
      std::memcpy(out.data() + (static_cast<size_t>(h) * cap + t) * row,
                  src.data() + (t * Hkv + h) * row, row);
    }
  }
  return out;
}

struct KernelRun {
  const char* placement;  // nullptr: decode
  AttnProducts products;
};

void expect_same_through_strides(const AttnCase& c, const KernelRun& run) {
  SCOPED_TRACE(c.describe() + " " + (run.placement ? run.placement : "decode") + " " +
               std::string(attn_products_name(run.products)));
  AttnData base = make_attn_data(c);
  AttnData strided = make_attn_data(c);
  const int64_t pad = 7;
  const std::vector<uint8_t> hk = head_major(base.k, c.kv_dtype(), c.Tk, c.Hkv, c.D, pad);
  const std::vector<uint8_t> hv = head_major(base.v, c.kv_dtype(), c.Tk, c.Hkv, c.D, pad);
  AttnArgs a = base.args(), b = strided.args();
  b.k.data = hk.data();
  b.v.data = hv.data();
  b.kv_row_stride = c.D;
  b.kv_head_stride = (c.Tk + pad) * c.D;
  base.poison();
  strided.poison();
  Status sa, sb;
  if (run.placement == nullptr) {
    sa = attn_decode(a, 2);
    sb = attn_decode(b, 2);
  } else {
    AttnOptions opt;
    opt.placement = run.placement;
    opt.threads = 2;
    opt.products = run.products;
    sa = attn_prefill(a, opt);
    sb = attn_prefill(b, opt);
  }
  ASSERT_TRUE(sa.ok()) << sa.message();
  ASSERT_TRUE(sb.ok()) << sb.message();
  ASSERT_EQ(base.o, strided.o) << "strided rows must give the token-major result bit for bit";
  ASSERT_EQ(0, std::memcmp(base.lse.data(), strided.lse.data(), base.lse.size() * sizeof(float)));
  if (run.products == AttnProducts::kF32 || run.placement == nullptr) {
    // The reference reads through the same strides.
    const ref::AttnRefResult want = ref::attention(b);
    EXPECT_LE(nmse(want.o, strided.o_as_double()), attn_nmse_bound(c));
  }
}

TEST(AttnKvStrides, HeadMajorRowsGiveTheTokenMajorResult) {
  std::vector<KernelRun> runs = {{"balanced", AttnProducts::kF32},
                                 {"uniform", AttnProducts::kF32},
                                 {"layer", AttnProducts::kF32},
                                 {nullptr, AttnProducts::kAuto}};
  if (simd::bf16_dot_usable()) runs.push_back({"balanced", AttnProducts::kBf16});
  const std::vector<AttnCase> cases = {
      {.T = 77, .Tk = 77, .Hq = 8, .Hkv = 2, .D = 64, .seed = 301},
      {.dtype = DType::kF32,
       .kv = DType::kBF16,
       .T = 45,
       .Tk = 130,
       .Hq = 6,
       .Hkv = 3,
       .D = 48,
       .seed = 302},
      {.dtype = DType::kF32,
       .kv = DType::kF16,
       .T = 33,
       .Tk = 33,
       .Hq = 4,
       .Hkv = 1,
       .D = 32,
       .seed = 303},
      {.dtype = DType::kBF16,
       .T = 20,
       .Tk = 200,
       .Hq = 4,
       .Hkv = 2,
       .D = 128,
       .mask = AttnMask::kSliding,
       .window = 50,
       .seed = 304},
  };
  for (const AttnCase& c : cases) {
    for (const KernelRun& r : runs) expect_same_through_strides(c, r);
  }
  // Decode shapes: one and three query rows against a long cache.
  for (int64_t T : {1, 3}) {
    const AttnCase c{.dtype = DType::kF32,
                     .kv = DType::kBF16,
                     .T = T,
                     .Tk = 1000,
                     .Hq = 8,
                     .Hkv = 2,
                     .D = 256,
                     .seed = static_cast<uint64_t>(310 + T)};
    expect_same_through_strides(c, {nullptr, AttnProducts::kAuto});
    expect_same_through_strides(c, {"balanced", AttnProducts::kF32});
  }
}

TEST(AttnKvStrides, OverlappingOrNegativeStridesAreRefusedAndWriteNothing) {
  const AttnCase c{.T = 8, .Tk = 8, .Hq = 4, .Hkv = 2, .D = 32, .seed = 320};
  AttnData d = make_attn_data(c);
  auto expect_refused = [&](int64_t row, int64_t head, const char* what) {
    AttnArgs a = d.args();
    a.kv_row_stride = row;
    a.kv_head_stride = head;
    d.poison();
    for (int which = 0; which < 2; ++which) {
      const Status st = which == 0 ? attn_prefill(a) : attn_decode(a);
      ASSERT_FALSE(st.ok()) << row << ", " << head;
      EXPECT_NE(st.message().find(what), std::string::npos) << st.message();
      for (size_t i = 0; i < d.o.size() / sizeof(float); ++i) {
        float x;
        std::memcpy(&x, d.o.data() + i * sizeof(float), sizeof(float));
        ASSERT_TRUE(std::isnan(x)) << "wrote output " << i;
      }
    }
  };
  expect_refused(32, 32, "k/v rows of D = 32 overlap at kv_row_stride 32 and kv_head_stride 32");
  expect_refused(16, 0, "overlap");           // keys half a row apart
  expect_refused(64, 8 * 32 - 1, "overlap");  // head blocks one element short of the keys they hold
  expect_refused(-64, 0, "kv strides must be >= 0");
  // The tightest layouts of both kinds are fine.
  for (auto [row, head] :
       {std::pair<int64_t, int64_t>{64, 32}, std::pair<int64_t, int64_t>{32, 8 * 32}}) {
    AttnArgs a = d.args();
    std::vector<float> k(2 * 8 * 32, 0.5f), v(k.size(), 0.25f);
    a.k.data = k.data();
    a.v.data = v.data();
    a.kv_row_stride = row;
    a.kv_head_stride = head;
    EXPECT_TRUE(attn_prefill(a).ok()) << row << ", " << head;
  }
}

}  // namespace
}  // namespace hanpu::test
