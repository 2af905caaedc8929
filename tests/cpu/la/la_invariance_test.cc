// Invariances of the LA kernels: chunk size, thread count, split prefill, decode steps.
#include <gtest/gtest.h>

#include <cstring>

#include "base/aligned_vector.h"
#include "base/rng.h"
#include "la_test_util.h"

namespace hanpu::test {
namespace {

Status run(LaData& d, const std::string& strategy, int chunk = 64, int threads = 0) {
  LaOptions opt;
  opt.strategy = strategy;
  opt.chunk_size = chunk;
  opt.threads = threads;
  d.poison();
  return la_prefill(d.args(), opt);
}

class LaInvariance : public ::testing::TestWithParam<LaMech> {};

TEST_P(LaInvariance, ChunkSizeDoesNotChangeTheResult) {
  LaData d = make_la_data(
      {.mech = GetParam(), .seq_lens = {333}, .H = 2, .HV = 4, .K = 64, .V = 100, .seed = 7});
  const ref::LaRefResult want = ref::la_recurrent(d.args());
  for (const char* s : {"hanpu", "fla"}) {
    for (int C : kLaChunkSizes) {
      ASSERT_TRUE(run(d, s, C).ok());
      EXPECT_LE(nmse(want.o, d.o_as_double()), 1e-10) << s << " C=" << C;
      EXPECT_LE(nmse(want.final_state, d.s1), 1e-10) << s << " C=" << C;
    }
  }
}

TEST_P(LaInvariance, AFinalStateInTheInitialStatesBufferIsUpdatedInPlace) {
  // The model layer passes one buffer as both (decode: no state copy per token). Whole heads
  // (updated in place) and column pieces (3 heads on 2 cores: buffered), one and several
  // phases (T = 1, 700); the separate-buffer run above takes the buffered path throughout.
  for (const int64_t T : {int64_t{1}, int64_t{700}}) {
    LaData d = make_la_data(
        {.mech = GetParam(), .seq_lens = {T, 5}, .H = 3, .HV = 3, .K = 32, .V = 48, .seed = 9});
    for (const LaStrategyInfo& s : la_strategies()) {
      ASSERT_TRUE(run(d, std::string(s.name), 16, 2).ok());
      const std::vector<uint8_t> o_separate = d.o;
      const std::vector<float> s_separate = d.s1;
      // Line-aligned, as the model allocates it, so whole heads take the in-place path.
      AlignedFloats state(d.s0.begin(), d.s0.end());
      LaArgs args = d.args();
      args.initial_state = TensorView{state.data(), DType::kF32, args.initial_state.shape};
      args.final_state = MutTensorView{state.data(), DType::kF32, args.final_state.shape};
      LaOptions opt;
      opt.strategy = std::string(s.name);
      opt.chunk_size = 16;
      opt.threads = 2;
      d.poison();
      ASSERT_TRUE(la_prefill(args, opt).ok());
      EXPECT_EQ(d.o, o_separate) << s.name << " T=" << T;
      EXPECT_EQ(0, std::memcmp(state.data(), s_separate.data(), state.size() * 4))
          << s.name << " T=" << T;
    }
  }
}

TEST_P(LaInvariance, ThreadCountGivesBitIdenticalResults) {
  // Column splits and core assignment change who computes a column, never how.
  LaData d = make_la_data(
      {.mech = GetParam(), .seq_lens = {150}, .H = 3, .HV = 3, .K = 64, .V = 100, .seed = 8});
  for (const LaStrategyInfo& s : la_strategies()) {
    ASSERT_TRUE(run(d, std::string(s.name), 64, 1).ok());
    const std::vector<uint8_t> o1 = d.o;
    const std::vector<float> s1 = d.s1;
    for (int threads : {2, 3, 5}) {
      ASSERT_TRUE(run(d, std::string(s.name), 64, threads).ok());
      EXPECT_EQ(d.o, o1) << s.name << " threads=" << threads;
      EXPECT_EQ(0, std::memcmp(d.s1.data(), s1.data(), s1.size() * 4))
          << s.name << " threads=" << threads;
    }
  }
}

TEST_P(LaInvariance, SplitPrefillEqualsOnePrefill) {
  const LaCase whole{
      .mech = GetParam(), .seq_lens = {500}, .H = 2, .HV = 2, .K = 64, .V = 64, .seed = 9};
  LaData d = make_la_data(whole);
  ASSERT_TRUE(run(d, "hanpu").ok());
  const std::vector<double> o_whole = d.o_as_double();
  const std::vector<float> s_whole = d.s1;
  Rng rng(123);
  const int64_t cut = 1 + rng.below(498);
  // Two calls over the same buffers: [0, cut) then [cut, T) with the state carried over.
  auto view_part = [&](int64_t t0, int64_t t1, const float* s0, float* s1) {
    LaArgs a = d.args();
    const int64_t n = t1 - t0;
    const size_t es = dtype_size(d.cs.dtype);
    a.q.data = d.q.data() + t0 * d.cs.H * d.cs.K * es;
    a.k.data = d.k.data() + t0 * d.cs.H * d.cs.K * es;
    a.v.data = d.v.data() + t0 * d.cs.HV * d.cs.V * es;
    a.o.data = d.o.data() + t0 * d.cs.HV * d.cs.V * es;
    a.g.data = d.g.data() + t0 * d.cs.HV * (GetParam() == LaMech::kKda ? d.cs.K : 1);
    a.beta.data = d.beta.data() + t0 * d.cs.HV;
    for (auto* s : {&a.q.shape, &a.k.shape, &a.v.shape, &a.g.shape, &a.beta.shape, &a.o.shape})
      (*s)[0] = n;
    a.initial_state.data = s0;
    a.final_state.data = s1;
    return a;
  };
  std::vector<float> mid(d.s1.size());
  d.poison();
  LaOptions opt;
  ASSERT_TRUE(la_prefill(view_part(0, cut, d.s0.data(), mid.data()), opt).ok());
  ASSERT_TRUE(la_prefill(view_part(cut, 500, mid.data(), d.s1.data()), opt).ok());
  EXPECT_LE(nmse(o_whole, d.o_as_double()), 1e-11) << "cut at " << cut;
  std::vector<double> sw(s_whole.begin(), s_whole.end());
  EXPECT_LE(nmse(sw, d.s1), 1e-11) << "cut at " << cut;
}

TEST_P(LaInvariance, DecodeStepsEqualOnePrefill) {
  const int64_t T = 70;
  LaData d = make_la_data(
      {.mech = GetParam(), .seq_lens = {T}, .H = 1, .HV = 2, .K = 64, .V = 64, .seed = 10});
  ASSERT_TRUE(run(d, "hanpu").ok());
  const std::vector<double> o_prefill = d.o_as_double();
  std::vector<double> s_prefill(d.s1.begin(), d.s1.end());
  std::vector<float> state = d.s0;
  d.poison();
  const bool kda = GetParam() == LaMech::kKda;
  for (int64_t t = 0; t < T; ++t) {  // one token per call, as a decode loop does
    LaArgs a = d.args();
    a.q.data = d.q.data() + t * d.cs.H * d.cs.K * 4;
    a.k.data = d.k.data() + t * d.cs.H * d.cs.K * 4;
    a.v.data = d.v.data() + t * d.cs.HV * d.cs.V * 4;
    a.o.data = d.o.data() + t * d.cs.HV * d.cs.V * 4;
    a.g.data = d.g.data() + t * d.cs.HV * (kda ? d.cs.K : 1);
    a.beta.data = d.beta.data() + t * d.cs.HV;
    for (auto* s : {&a.q.shape, &a.k.shape, &a.v.shape, &a.g.shape, &a.beta.shape, &a.o.shape})
      (*s)[0] = 1;
    std::vector<float> next(state.size());
    a.initial_state.data = state.data();
    a.final_state.data = next.data();
    LaOptions opt;
    opt.strategy = "recurrent";
    ASSERT_TRUE(la_prefill(a, opt).ok());
    state = next;
  }
  EXPECT_LE(nmse(o_prefill, d.o_as_double()), 1e-11);
  EXPECT_LE(nmse(s_prefill, state), 1e-11);
}

INSTANTIATE_TEST_SUITE_P(Mech, LaInvariance, ::testing::Values(LaMech::kGdn, LaMech::kKda),
                         [](const auto& info) { return std::string(la_mech_name(info.param)); });

}  // namespace
}  // namespace hanpu::test
