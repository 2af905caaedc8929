// The two float64 references (recurrent definition, chunked algebra) agree, which pins the
// chunk formulas of docs/la-spec.md down before any fast kernel uses them.
#include <gtest/gtest.h>

#include "../cpu/la/la_test_util.h"

namespace hanpu::test {
namespace {

class RefAgreement : public ::testing::TestWithParam<LaCase> {};

TEST_P(RefAgreement, ChunkedEqualsRecurrentInFloat64) {
  LaData d = make_la_data(GetParam());
  const ref::LaRefResult rec = ref::la_recurrent(d.args());
  for (int C : {16, 64}) {
    const ref::LaRefResult chk = ref::la_chunked(d.args(), C);
    EXPECT_LE(nmse(rec.o, chk.o), 1e-20) << "C=" << C;
    EXPECT_LE(nmse(rec.final_state, chk.final_state), 1e-20) << "C=" << C;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, RefAgreement,
    ::testing::Values(
        LaCase{.mech = LaMech::kGdn, .seq_lens = {100}, .H = 1, .HV = 2, .K = 16, .V = 8},
        LaCase{.mech = LaMech::kKda, .seq_lens = {100}, .H = 1, .HV = 2, .K = 16, .V = 8},
        LaCase{.mech = LaMech::kGdn,
               .seq_lens = {7, 70},
               .H = 2,
               .HV = 2,
               .K = 8,
               .V = 12,
               .gates = Gates::kStrong},
        LaCase{.mech = LaMech::kKda,
               .seq_lens = {70, 1},
               .H = 1,
               .HV = 1,
               .K = 8,
               .V = 8,
               .gates = Gates::kStrong},
        LaCase{.mech = LaMech::kKda,
               .seq_lens = {90},
               .H = 1,
               .HV = 1,
               .K = 8,
               .V = 8,
               .l2norm_in_kernel = true}));

TEST(RefRecurrent, OneTokenByHand) {
  // S0 = 0, one token: S = beta k v^T, o = scale (q . k) beta v.
  LaData d =
      make_la_data({.seq_lens = {1}, .H = 1, .HV = 1, .K = 4, .V = 3, .initial_state = false});
  const ref::LaRefResult r = ref::la_recurrent(d.args());
  const float* q = reinterpret_cast<const float*>(d.q.data());
  const float* k = reinterpret_cast<const float*>(d.k.data());
  const float* v = reinterpret_cast<const float*>(d.v.data());
  double qk = 0;
  for (int i = 0; i < 4; ++i) qk += double(q[i]) * k[i];
  for (int j = 0; j < 3; ++j) EXPECT_NEAR(r.o[j], 0.5 * qk * d.beta[0] * v[j], 1e-12);
}

}  // namespace
}  // namespace hanpu::test
