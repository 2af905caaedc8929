// The KV cache: appended rows read back exactly (through read_f32 and at the rows attn_kv's
// strides address), growth by doubling (few reallocations), bad appends and reads rejected
// without change, and a decode loop over the cache equals one prefill.
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "attn_test_util.h"
#include "base/rng.h"
#include "hanpu/kv_cache.h"
#include "la_test_util.h"

namespace hanpu::test {
namespace {

// Every row of the cache equals token-major [n, Hkv, D] rows `want` (in the cache's dtype):
// read through read_f32, and in place where attn_kv's strides say row (t, h) is.
void expect_rows(const KvCache& cache, const uint8_t* want_k, const uint8_t* want_v, int64_t n) {
  const int H = cache.kv_heads(), D = cache.head_dim();
  const DType dt = cache.dtype();
  std::vector<float> k(static_cast<size_t>(n) * H * D, -1.0f), v(k.size(), -1.0f);
  ASSERT_TRUE(cache.read_f32(0, n, k.data(), v.data()).ok());
  AttnArgs a;
  cache.attn_kv(&a);
  ASSERT_EQ(a.k.shape, (Shape{cache.length(), H, D}));
  ASSERT_EQ(a.k.dtype, dt);
  ASSERT_EQ(a.kv_row_stride, D);
  ASSERT_EQ(a.kv_head_stride, cache.capacity() * D);
  for (int64_t t = 0; t < n; ++t) {
    for (int h = 0; h < H; ++h) {
      for (int d = 0; d < D; ++d) {
        const size_t token_major = static_cast<size_t>((t * H + h) * D + d);
        const size_t in_place = static_cast<size_t>(t * a.kv_row_stride + h * a.kv_head_stride + d);
        const float wk = load_as_f32(want_k, dt, token_major),
                    wv = load_as_f32(want_v, dt, token_major);
        ASSERT_EQ(k[token_major], wk) << "read_f32 k " << t << "," << h << "," << d;
        ASSERT_EQ(v[token_major], wv) << "read_f32 v " << t << "," << h << "," << d;
        ASSERT_EQ(load_as_f32(a.k.data, dt, in_place), wk)
            << "attn_kv k " << t << "," << h << "," << d;
        ASSERT_EQ(load_as_f32(a.v.data, dt, in_place), wv)
            << "attn_kv v " << t << "," << h << "," << d;
      }
    }
  }
}

TEST(KvCache, AppendsGrowByDoublingAndReadBack) {
  const AttnCase c{
      .dtype = DType::kBF16, .T = 1000, .Tk = 1000, .Hq = 4, .Hkv = 2, .D = 64, .seed = 91};
  const AttnData d = make_attn_data(c);
  KvCache cache(2, 64, DType::kBF16, 16);
  const size_t row = 2 * 64 * 2;
  int64_t t = 0;
  for (int64_t n : {1, 1, 7, 100, 0, 391, 500}) {
    const TensorView k{d.k.data() + t * row, DType::kBF16, {n, 2, 64}};
    const TensorView v{d.v.data() + t * row, DType::kBF16, {n, 2, 64}};
    ASSERT_TRUE(cache.append(k, v).ok());
    t += n;
  }
  ASSERT_EQ(cache.length(), 1000);
  EXPECT_EQ(cache.capacity(), 1024);
  EXPECT_EQ(cache.growths(),
            3);  // 16 -> 128 (109 tokens) -> 512 -> 1024: doubling, a jump per append
  expect_rows(cache, d.k.data(), d.v.data(), 1000);
  std::vector<float> out(4 * row, -1.0f);
  const Status past = cache.read_f32(998, 3, out.data(), nullptr);
  EXPECT_NE(past.message().find("tokens [998, 1001) are not within the 1000 cached"),
            std::string::npos)
      << past.message();
  EXPECT_FALSE(cache.read_f32(-1, 1, out.data(), nullptr).ok());
  EXPECT_EQ(out[0], -1.0f) << "a refused read writes nothing";
  ASSERT_TRUE(cache.truncate(10).ok());
  EXPECT_EQ(cache.length(), 10);
  EXPECT_FALSE(cache.truncate(11).ok());
}

// A cache whose values are its keys (MLA's latent rows): the values given to append are not
// kept, every read and attn_kv give the keys as values, through growth.
TEST(KvCache, ValuesAreKeysKeepsOneCopyAndGivesTheKeysAsValues) {
  const AttnCase c{
      .dtype = DType::kF32, .T = 300, .Tk = 300, .Hq = 2, .Hkv = 1, .D = 48, .seed = 92};
  const AttnData d = make_attn_data(c);
  KvCache cache(1, 48, DType::kF32, 8, KvValues::kAreKeys);
  EXPECT_TRUE(cache.values_are_keys());
  const size_t row = 48 * 4;
  int64_t t = 0;
  for (int64_t n : {1, 40, 259}) {
    const TensorView k{d.k.data() + t * row, DType::kF32, {n, 1, 48}};
    const TensorView v{d.v.data() + t * row, DType::kF32, {n, 1, 48}};  // not kept
    ASSERT_TRUE(cache.append(k, v).ok());
    t += n;
  }
  EXPECT_GE(cache.growths(), 2);
  expect_rows(cache, d.k.data(), d.k.data(), 300);
  AttnArgs a;
  cache.attn_kv(&a);
  EXPECT_EQ(a.v.data, a.k.data);
  const TensorView bad{d.k.data(), DType::kF32, {1, 1, 32}};
  EXPECT_FALSE(cache.append({d.k.data(), DType::kF32, {1, 1, 48}}, bad).ok())
      << "v's shape is still checked";
  EXPECT_EQ(cache.length(), 300);
}

// reserve: one reallocation that keeps the rows, none while appends fit, a no-op when the
// room is there, and doubling again past it.
TEST(KvCache, ReserveMakesRoomOnceAndKeepsTheRows) {
  const AttnCase c{
      .dtype = DType::kF16, .T = 300, .Tk = 300, .Hq = 2, .Hkv = 1, .D = 32, .seed = 92};
  const AttnData d = make_attn_data(c);
  KvCache cache(1, 32, DType::kF16, 16);
  const size_t row = 32 * 2;
  auto append = [&](int64_t t, int64_t n) {
    return cache.append(TensorView{d.k.data() + t * row, DType::kF16, {n, 1, 32}},
                        TensorView{d.v.data() + t * row, DType::kF16, {n, 1, 32}});
  };
  ASSERT_TRUE(append(0, 10).ok());
  ASSERT_TRUE(cache.reserve(200).ok());
  EXPECT_EQ(cache.capacity(), 200);
  EXPECT_EQ(cache.growths(), 1);
  ASSERT_TRUE(cache.reserve(50).ok());  // already room
  EXPECT_EQ(cache.capacity(), 200);
  ASSERT_TRUE(append(10, 190).ok());
  EXPECT_EQ(cache.growths(), 1) << "appends within the reserved room reallocate nothing";
  ASSERT_TRUE(append(200, 100).ok());
  EXPECT_EQ(cache.capacity(), 400);
  EXPECT_EQ(cache.growths(), 2);
  expect_rows(cache, d.k.data(), d.v.data(), 300);
}

TEST(KvCache, Fp32RowsAreRoundedIntoASixteenBitCache) {
  for (DType dt : {DType::kBF16, DType::kF16}) {
    KvCache cache(3, 48, dt, 2);
    Rng rng(93);
    std::vector<float> k(5 * 3 * 48), v(k.size());
    for (float& x : k) x = static_cast<float>(rng.normal());
    for (float& x : v) x = static_cast<float>(rng.normal());
    ASSERT_TRUE(
        cache.append({k.data(), DType::kF32, {2, 3, 48}}, {v.data(), DType::kF32, {2, 3, 48}})
            .ok());
    ASSERT_TRUE(cache
                    .append({k.data() + 2 * 144, DType::kF32, {3, 3, 48}},
                            {v.data() + 2 * 144, DType::kF32, {3, 3, 48}})
                    .ok());
    ASSERT_EQ(cache.length(), 5);
    std::vector<uint8_t> want_k(k.size() * 2),
        want_v(v.size() * 2);  // rounded by the reference's rule
    for (size_t i = 0; i < k.size(); ++i) {
      store_from_f32(want_k.data(), dt, i, k[i]);
      store_from_f32(want_v.data(), dt, i, v[i]);
    }
    expect_rows(cache, want_k.data(), want_v.data(), 5);
  }
}

TEST(KvCache, BadAppendsAreRejectedAndChangeNothing) {
  KvCache cache(2, 64, DType::kF32, 4);
  std::vector<float> x(3 * 2 * 64, 1.0f);
  const TensorView good{x.data(), DType::kF32, {3, 2, 64}};
  ASSERT_TRUE(cache.append(good, good).ok());
  auto expect_rejected = [&](const TensorView& k, const TensorView& v, const char* expect) {
    const Status st = cache.append(k, v);
    ASSERT_FALSE(st.ok()) << expect;
    EXPECT_NE(st.message().find(expect), std::string::npos) << st.message();
    EXPECT_EQ(cache.length(), 3);
  };
  expect_rejected({x.data(), DType::kF32, {3, 1, 64}}, good, "k has shape");
  expect_rejected(good, {x.data(), DType::kF32, {3, 2, 32}}, "v has shape");
  expect_rejected({x.data(), DType::kF16, {3, 2, 64}}, good, "k has dtype");
  expect_rejected(good, {x.data(), DType::kF32, {2, 2, 64}}, "k has 3 tokens but v has 2");
  expect_rejected(good, {nullptr, DType::kF32, {3, 2, 64}}, "v has no data");
  KvCache half(2, 64, DType::kBF16, 4);
  std::vector<uint16_t> h(3 * 2 * 64);
  const Status mixed = half.append(good, {h.data(), DType::kBF16, {3, 2, 64}});
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.message().find("k has dtype f32 but v has bf16"), std::string::npos)
      << mixed.message();
  EXPECT_EQ(half.length(), 0);
}

TEST(KvCache, DecodeLoopOverTheCacheEqualsOnePrefill) {
  const AttnCase c{
      .T = 40, .Tk = 40, .Hq = 8, .Hkv = 2, .D = 128, .mask = AttnMask::kCausal, .seed = 92};
  AttnData whole = make_attn_data(c);
  whole.poison();
  ASSERT_TRUE(attn_prefill(whole.args()).ok());
  KvCache cache(2, 128, DType::kF32, 8);
  const size_t kv_row = 2 * 128, q_row = 8 * 128;
  std::vector<double> got;
  for (int64_t t = 0; t < c.T; ++t) {  // one token at a time: append its k/v, attend its q
    const float* k = reinterpret_cast<const float*>(whole.k.data()) + t * kv_row;
    const float* v = reinterpret_cast<const float*>(whole.v.data()) + t * kv_row;
    ASSERT_TRUE(cache.append({k, DType::kF32, {1, 2, 128}}, {v, DType::kF32, {1, 2, 128}}).ok());
    std::vector<float> o(q_row, -1.0f);
    AttnArgs a;
    a.q = {reinterpret_cast<const float*>(whole.q.data()) + t * q_row, DType::kF32, {1, 8, 128}};
    cache.attn_kv(&a);
    a.o = {o.data(), DType::kF32, {1, 8, 128}};
    ASSERT_TRUE(attn_decode(a, 2).ok());
    got.insert(got.end(), o.begin(), o.end());
  }
  EXPECT_LE(nmse(whole.o_as_double(), got), 1e-10);
}

}  // namespace
}  // namespace hanpu::test
