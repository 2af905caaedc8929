// The KV cache: appended rows read back exactly, growth by doubling (few reallocations),
// bad appends rejected without change, and a decode loop over the cache equals one prefill.
#include <cstring>

#include <gtest/gtest.h>

#include "attn_test_util.h"
#include "base/rng.h"
#include "hanpu/kv_cache.h"
#include "la_test_util.h"

namespace hanpu::test {
namespace {

TEST(KvCache, AppendsGrowByDoublingAndReadBack) {
  const AttnCase c{.dtype = DType::kBF16, .T = 1000, .Tk = 1000, .Hq = 4, .Hkv = 2, .D = 64, .seed = 91};
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
  EXPECT_EQ(cache.growths(), 3);  // 16 -> 128 (109 tokens) -> 512 -> 1024: doubling, a jump per append
  EXPECT_EQ(0, std::memcmp(cache.keys().data, d.k.data(), 1000 * row));
  EXPECT_EQ(0, std::memcmp(cache.values().data, d.v.data(), 1000 * row));
  EXPECT_EQ(cache.keys().shape, (Shape{1000, 2, 64}));
  ASSERT_TRUE(cache.truncate(10).ok());
  EXPECT_EQ(cache.length(), 10);
  EXPECT_FALSE(cache.truncate(11).ok());
}

// reserve: one reallocation that keeps the rows, none while appends fit, a no-op when the
// room is there, and doubling again past it.
TEST(KvCache, ReserveMakesRoomOnceAndKeepsTheRows) {
  const AttnCase c{.dtype = DType::kF16, .T = 300, .Tk = 300, .Hq = 2, .Hkv = 1, .D = 32, .seed = 92};
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
  EXPECT_EQ(0, std::memcmp(cache.keys().data, d.k.data(), 300 * row));
  EXPECT_EQ(0, std::memcmp(cache.values().data, d.v.data(), 300 * row));
}

TEST(KvCache, Fp32RowsAreRoundedIntoASixteenBitCache) {
  for (DType dt : {DType::kBF16, DType::kF16}) {
    KvCache cache(3, 48, dt, 2);
    Rng rng(93);
    std::vector<float> k(5 * 3 * 48), v(k.size());
    for (float& x : k) x = static_cast<float>(rng.normal());
    for (float& x : v) x = static_cast<float>(rng.normal());
    ASSERT_TRUE(cache.append({k.data(), DType::kF32, {2, 3, 48}}, {v.data(), DType::kF32, {2, 3, 48}}).ok());
    ASSERT_TRUE(cache.append({k.data() + 2 * 144, DType::kF32, {3, 3, 48}}, {v.data() + 2 * 144, DType::kF32, {3, 3, 48}}).ok());
    ASSERT_EQ(cache.length(), 5);
    EXPECT_EQ(cache.keys().dtype, dt);
    std::vector<uint8_t> want(2);
    for (size_t i = 0; i < k.size(); ++i) {
      store_from_f32(want.data(), dt, 0, k[i]);
      ASSERT_EQ(load_as_f32(cache.keys().data, dt, i), load_as_f32(want.data(), dt, 0)) << dtype_name(dt) << " k " << i;
      store_from_f32(want.data(), dt, 0, v[i]);
      ASSERT_EQ(load_as_f32(cache.values().data, dt, i), load_as_f32(want.data(), dt, 0)) << dtype_name(dt) << " v " << i;
    }
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
  EXPECT_NE(mixed.message().find("k has dtype f32 but v has bf16"), std::string::npos) << mixed.message();
  EXPECT_EQ(half.length(), 0);
}

TEST(KvCache, DecodeLoopOverTheCacheEqualsOnePrefill) {
  const AttnCase c{.T = 40, .Tk = 40, .Hq = 8, .Hkv = 2, .D = 128, .mask = AttnMask::kCausal, .seed = 92};
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
    a.k = cache.keys();
    a.v = cache.values();
    a.o = {o.data(), DType::kF32, {1, 8, 128}};
    ASSERT_TRUE(attn_decode(a, 2).ok());
    got.insert(got.end(), o.begin(), o.end());
  }
  EXPECT_LE(nmse(whole.o_as_double(), got), 1e-10);
}

}  // namespace
}  // namespace hanpu::test
