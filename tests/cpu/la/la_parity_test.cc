// Every LA strategy (from the one strategy table) against the float64 recurrent reference,
// on fresh random inputs over the sweep of the issue: T, head layouts, head dims, varlen,
// initial state, gate strengths, dtypes, in-kernel L2 norm. NMSE of outputs and final states.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "la_test_util.h"

namespace hanpu::test {
namespace {

std::vector<LaCase> parity_cases() {
  std::vector<LaCase> cases;
  uint64_t seed = 1000;
  auto add = [&](LaCase c) {
    c.seed = seed++;
    cases.push_back(c);
  };
  for (LaMech mech : {LaMech::kGdn, LaMech::kKda}) {
    // Sequence lengths around the chunk size, one head layout with GVA.
    for (int64_t T : {1, 2, 63, 64, 65, 200, 1000}) {
      add({.mech = mech, .seq_lens = {T}, .H = 2, .HV = 4, .K = 64, .V = 64});
    }
    // Head layouts x head dims (including a non-multiple of the SIMD width).
    add({.mech = mech, .seq_lens = {200}, .H = 1, .HV = 1, .K = 128, .V = 128});
    add({.mech = mech, .seq_lens = {130}, .H = 3, .HV = 3, .K = 100, .V = 100});
    add({.mech = mech, .seq_lens = {100}, .H = 4, .HV = 16, .K = 64, .V = 100});
    add({.mech = mech, .seq_lens = {70}, .H = 16, .HV = 16, .K = 100, .V = 64});
    add({.mech = mech, .seq_lens = {65}, .H = 16, .HV = 32, .K = 128, .V = 128});
    add({.mech = mech, .seq_lens = {40}, .H = 1, .HV = 2, .K = 256, .V = 256});
    // Varlen batches with length-1 and non-multiple-of-C sequences, with and without state.
    add({.mech = mech, .seq_lens = {1, 63, 64, 130, 7, 200}, .H = 2, .HV = 4, .K = 64, .V = 64});
    add({.mech = mech,
         .seq_lens = {5, 1, 129},
         .H = 1,
         .HV = 3,
         .K = 100,
         .V = 128,
         .initial_state = false});
    // Gates from very strong decay to none.
    add({.mech = mech,
         .seq_lens = {300},
         .H = 2,
         .HV = 2,
         .K = 64,
         .V = 64,
         .gates = Gates::kStrong});
    add({.mech = mech,
         .seq_lens = {200, 45},
         .H = 2,
         .HV = 2,
         .K = 100,
         .V = 64,
         .gates = Gates::kModerate});
    add({.mech = mech,
         .seq_lens = {300},
         .H = 2,
         .HV = 2,
         .K = 64,
         .V = 64,
         .gates = Gates::kZero});
    add({.mech = mech,
         .seq_lens = {300, 37},
         .H = 2,
         .HV = 2,
         .K = 64,
         .V = 64,
         .gates = Gates::kUnbounded});
    // Storage dtypes.
    for (DType dt : {DType::kF16, DType::kBF16}) {
      add({.mech = mech, .dtype = dt, .seq_lens = {200}, .H = 2, .HV = 4, .K = 128, .V = 128});
      add({.mech = mech,
           .dtype = dt,
           .seq_lens = {3, 64, 77},
           .H = 1,
           .HV = 2,
           .K = 100,
           .V = 64,
           .gates = Gates::kStrong});
    }
    // In-kernel L2 norm, and unnormalised q/k (looser bound, see nmse_bound).
    add({.mech = mech,
         .seq_lens = {150},
         .H = 2,
         .HV = 4,
         .K = 64,
         .V = 64,
         .l2norm_in_kernel = true});
    add({.mech = mech,
         .seq_lens = {150},
         .H = 2,
         .HV = 4,
         .K = 64,
         .V = 64,
         .normalized_qk = false});
    // Long sequences, K = V = 128.
    add({.mech = mech,
         .dtype = mech == LaMech::kGdn ? DType::kF32 : DType::kBF16,
         .seq_lens = {4096},
         .H = 1,
         .HV = 2,
         .K = 128,
         .V = 128});
  }
  return cases;
}

class LaParity : public ::testing::TestWithParam<LaCase> {};

TEST_P(LaParity, EveryStrategyMatchesFloat64Reference) {
  const LaCase& c = GetParam();
  LaData d = make_la_data(c);
  const ref::LaRefResult want = ref::la_recurrent(d.args());
  for (const LaStrategyInfo& s : la_strategies()) {
    d.poison();
    LaOptions opt;
    opt.strategy = std::string(s.name);
    const Status st = la_prefill(d.args(), opt);
    ASSERT_TRUE(st.ok()) << s.name << ": " << st.message();
    const double e_o = nmse(want.o, d.o_as_double());
    const double e_s = nmse(want.final_state, d.s1);
    EXPECT_LE(e_o, nmse_bound(c)) << s.name << " output, " << c.describe();
    EXPECT_LE(e_s, nmse_bound(c)) << s.name << " final state, " << c.describe();
  }
}

INSTANTIATE_TEST_SUITE_P(Sweep, LaParity, ::testing::ValuesIn(parity_cases()),
                         [](const auto& info) { return fmt::format("case{}", info.index); });

}  // namespace
}  // namespace hanpu::test
