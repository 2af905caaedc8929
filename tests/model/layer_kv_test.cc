// LayerKv, the KV rows a sequence shares with its checkpoints: attention over shared segments
// and the own rows equals the float64 reference over all rows (random chunk lengths, random
// shares, odd sizes, poisoned outputs); a checkpoint holds the source's segments by reference
// and never sees rows appended after it; a resumed copy goes on exactly; sealing keeps the
// segments logarithmic in the rows.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "base/rng.h"
#include "la_test_util.h"
#include "model/layer_kv.h"
#include "ref/attn_ref.h"

namespace hanpu::model {
namespace {

constexpr int kHq = 6, kHkv = 2, kD = 48;

std::vector<float> random_rows(Rng& rng, int64_t n, int heads) {
  std::vector<float> x(static_cast<size_t>(n) * heads * kD);
  for (float& v : x) v = static_cast<float>(rng.uniform(-1.0, 1.0));
  return x;
}

Status append(LayerKv* kv, Rng& rng, int64_t n) {
  const std::vector<float> k = random_rows(rng, n, kHkv), v = random_rows(rng, n, kHkv);
  return kv->append({k.data(), DType::kF32, {n, kHkv, kD}}, {v.data(), DType::kF32, {n, kHkv, kD}});
}

// NMSE of kv.attend for the last R positions against the float64 reference over every row
// (read back whole: the values the cache holds, rounded to its dtype).
double attend_nmse(const LayerKv& kv, Rng& rng, int64_t R) {
  const int64_t L = kv.length();
  const std::vector<float> q = random_rows(rng, R, kHq);
  std::vector<float> k(static_cast<size_t>(L) * kHkv * kD), v(k.size());
  EXPECT_TRUE(kv.read_f32(0, L, k.data(), v.data()).ok());
  std::vector<float> o(static_cast<size_t>(R) * kHq * kD, std::numeric_limits<float>::quiet_NaN());
  std::vector<float> scratch(LayerKv::attend_scratch_floats(R, kHq, kD),
                             std::numeric_limits<float>::quiet_NaN());
  AttendRun run;
  run.threads = 2;
  run.products = AttnProducts::kF32;
  const Status st = kv.attend(q.data(), R, kHq, o.data(), run, scratch.data());
  EXPECT_TRUE(st.ok()) << st.message();
  AttnArgs args;
  args.q = {q.data(), DType::kF32, {R, kHq, kD}};
  args.k = {k.data(), DType::kF32, {L, kHkv, kD}};
  args.v = {v.data(), DType::kF32, {L, kHkv, kD}};
  args.o = {o.data(), DType::kF32, {R, kHq, kD}};
  args.mask = AttnMask::kCausal;
  return test::nmse(ref::attention(args).o, o);
}

class LayerKvSharing : public ::testing::TestWithParam<DType> {};

TEST_P(LayerKvSharing, AttentionOverSharedSegmentsEqualsTheReference) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  Rng rng(seed);
  LayerKv kv(kHkv, kD, GetParam(), 7);
  struct Taken {
    std::unique_ptr<LayerKv> kv;
    std::vector<float> k;  // its rows when taken
  };
  std::vector<Taken> taken;
  for (int chunk = 0; chunk < 40; ++chunk) {
    const int64_t n = 1 + static_cast<int64_t>(rng.below(37));
    ASSERT_TRUE(append(&kv, rng, n).ok());
    const int64_t R = chunk % 3 == 0 ? 1 : 1 + static_cast<int64_t>(rng.below(n));
    EXPECT_LT(attend_nmse(kv, rng, R), 1e-10) << "chunk " << chunk << " R " << R;
    if (rng.below(3) == 0) {  // a checkpoint here
      Taken t;
      ASSERT_TRUE(kv.share(&t.kv).ok());
      ASSERT_EQ(t.kv->length(), kv.length());
      // Held by reference: the very segments the source now holds.
      ASSERT_EQ(t.kv->shared().size(), kv.shared().size());
      for (size_t i = 0; i < kv.shared().size(); ++i)
        EXPECT_EQ(t.kv->shared()[i].get(), kv.shared()[i].get());
      t.k.resize(static_cast<size_t>(kv.length()) * kHkv * kD);
      ASSERT_TRUE(kv.read_f32(0, kv.length(), t.k.data(), nullptr).ok());
      taken.push_back(std::move(t));
    }
  }
  // Sealing merges the trailing segments: about log2 of the rows, however many shares.
  const double bound = std::log2(static_cast<double>(kv.length())) + 2;
  EXPECT_LE(kv.segments(), bound) << kv.length() << " rows";
  ASSERT_GE(taken.size(), 3u);
  for (Taken& t : taken) {
    // Rows appended to the source after the checkpoint are not in it.
    std::vector<float> k(t.k.size());
    ASSERT_TRUE(t.kv->read_f32(0, t.kv->length(), k.data(), nullptr).ok());
    EXPECT_EQ(k, t.k);
    // A sequence resumed from it goes on exactly, the checkpoint left as it was.
    std::unique_ptr<LayerKv> resumed;
    ASSERT_TRUE(t.kv->copy(&resumed).ok());
    const int64_t n = 1 + static_cast<int64_t>(rng.below(20));
    ASSERT_TRUE(append(resumed.get(), rng, n).ok());
    EXPECT_LT(attend_nmse(*resumed, rng, n), 1e-10);
    EXPECT_LT(attend_nmse(*resumed, rng, 1), 1e-10);
    EXPECT_EQ(t.kv->length(), static_cast<int64_t>(t.k.size() / (kHkv * kD)));
  }
}

TEST_P(LayerKvSharing, ReadBackAcrossSegmentsIsWhatWasAppended) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  Rng rng(seed);
  LayerKv kv(kHkv, kD, GetParam(), 3);
  std::vector<float> all_k;
  std::unique_ptr<LayerKv> keep;
  for (int chunk = 0; chunk < 12; ++chunk) {
    const int64_t n = 1 + static_cast<int64_t>(rng.below(9));
    std::vector<float> k = random_rows(rng, n, kHkv), v = random_rows(rng, n, kHkv);
    // What the cache holds: the rows rounded to its dtype, as a one-segment cache gives them.
    KvCache one(kHkv, kD, GetParam(), n);
    ASSERT_TRUE(
        one.append({k.data(), DType::kF32, {n, kHkv, kD}}, {v.data(), DType::kF32, {n, kHkv, kD}})
            .ok());
    ASSERT_TRUE(one.read_f32(0, n, k.data(), nullptr).ok());
    ASSERT_TRUE(
        kv.append({k.data(), DType::kF32, {n, kHkv, kD}}, {v.data(), DType::kF32, {n, kHkv, kD}})
            .ok());
    all_k.insert(all_k.end(), k.begin(), k.end());
    if (chunk % 2 == 1) ASSERT_TRUE(kv.share(&keep).ok());
  }
  const int64_t L = kv.length();
  for (int trial = 0; trial < 20; ++trial) {  // any window of rows, across segment ends
    const int64_t t0 = static_cast<int64_t>(rng.below(L)),
                  n = static_cast<int64_t>(rng.below(L - t0 + 1));
    std::vector<float> got(static_cast<size_t>(n) * kHkv * kD, std::nanf(""));
    ASSERT_TRUE(kv.read_f32(t0, n, got.data(), nullptr).ok());
    EXPECT_TRUE(std::equal(got.begin(), got.end(), all_k.begin() + t0 * kHkv * kD))
        << "rows [" << t0 << ", " << t0 + n << ")";
  }
  EXPECT_FALSE(kv.read_f32(L - 1, 2, all_k.data(), nullptr).ok());
}

TEST(LayerKv, QueriesMustBeRowsAppendedSinceTheLastShare) {
  Rng rng(3);
  LayerKv kv(kHkv, kD, DType::kF32);
  ASSERT_TRUE(append(&kv, rng, 5).ok());
  std::unique_ptr<LayerKv> checkpoint;
  ASSERT_TRUE(kv.share(&checkpoint).ok());
  std::vector<float> q(kHq * kD), o(q.size());
  std::vector<float> scratch(LayerKv::attend_scratch_floats(1, kHq, kD));
  const Status st = checkpoint->attend(q.data(), 1, kHq, o.data(), {}, scratch.data());
  EXPECT_NE(st.message().find("appended since the last share"), std::string::npos) << st.message();
}

INSTANTIATE_TEST_SUITE_P(Dtypes, LayerKvSharing, ::testing::Values(DType::kF32, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace hanpu::model
