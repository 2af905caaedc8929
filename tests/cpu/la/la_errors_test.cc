// Bad LA input gets a clear error naming the argument, and nothing is written.
#include <gtest/gtest.h>

#include <functional>
#include <limits>

#include "la_test_util.h"

namespace hanpu::test {
namespace {

struct BadCase {
  const char* what;
  std::function<void(LaArgs&, LaOptions&)> spoil;
  const char* expect_in_message;
};

class LaErrors : public ::testing::TestWithParam<BadCase> {};

TEST_P(LaErrors, RejectedWithNamedArgumentAndNoWrite) {
  LaData d =
      make_la_data({.mech = LaMech::kKda, .seq_lens = {10, 20}, .H = 2, .HV = 4, .K = 16, .V = 16});
  std::fill(d.o.begin(), d.o.end(), 0xAB);
  std::fill(d.s1.begin(), d.s1.end(), 7.0f);
  LaArgs a = d.args();
  LaOptions opt;
  GetParam().spoil(a, opt);
  const Status st = la_prefill(a, opt);
  ASSERT_FALSE(st.ok()) << GetParam().what;
  EXPECT_NE(st.message().find(GetParam().expect_in_message), std::string::npos)
      << GetParam().what << ": " << st.message();
  for (uint8_t b : d.o) ASSERT_EQ(b, 0xAB) << "partial write of o";
  for (float s : d.s1) ASSERT_EQ(s, 7.0f) << "partial write of final_state";
}

const float kNan = std::numeric_limits<float>::quiet_NaN();

INSTANTIATE_TEST_SUITE_P(
    Cases, LaErrors,
    ::testing::Values(
        BadCase{"k shape", [](LaArgs& a, LaOptions&) { a.k.shape[2] = 15; }, "k has shape"},
        BadCase{"v heads",
                [](LaArgs& a, LaOptions&) {
                  a.v.shape[1] = 3;
                  a.o.shape[1] = 3;
                },
                "multiple"},
        BadCase{"K too big", [](LaArgs& a, LaOptions&) { a.q.shape[2] = 300; }, "K = 300"},
        BadCase{"o shape", [](LaArgs& a, LaOptions&) { a.o.shape[0] = 29; }, "o has shape"},
        BadCase{"g shape",
                [](LaArgs& a, LaOptions&) {
                  a.g.shape = {30, 4};
                },
                "g (KDA)"},
        BadCase{"dtype mix", [](LaArgs& a, LaOptions&) { a.v.dtype = DType::kBF16; },
                "v has dtype"},
        BadCase{"cu decreasing",
                [](LaArgs& a, LaOptions&) {
                  a.cu_seqlens = {0, 20, 10, 30};
                },
                "non-decreasing"},
        BadCase{"cu end",
                [](LaArgs& a, LaOptions&) {
                  a.cu_seqlens = {0, 10, 29};
                },
                "must end at T"},
        BadCase{"cu start",
                [](LaArgs& a, LaOptions&) {
                  a.cu_seqlens = {1, 10, 30};
                },
                "cu_seqlens[0]"},
        BadCase{"state shape", [](LaArgs& a, LaOptions&) { a.initial_state.shape[0] = 1; },
                "initial_state has shape"},
        BadCase{"final state shape", [](LaArgs& a, LaOptions&) { a.final_state.shape[3] = 8; },
                "final_state has shape"},
        BadCase{"positive gate",
                [](LaArgs& a, LaOptions&) {
                  const_cast<float*>(static_cast<const float*>(a.g.data))[77] = 0.5f;
                },
                "gate g[77]"},
        BadCase{"nan gate",
                [](LaArgs& a, LaOptions&) {
                  const_cast<float*>(static_cast<const float*>(a.g.data))[5] = kNan;
                },
                "gate g[5]"},
        BadCase{"-inf gate",
                [](LaArgs& a, LaOptions&) {
                  const_cast<float*>(static_cast<const float*>(a.g.data))[9] =
                      -std::numeric_limits<float>::infinity();
                },
                "gate g[9]"},
        BadCase{"nan beta",
                [](LaArgs& a, LaOptions&) {
                  const_cast<float*>(static_cast<const float*>(a.beta.data))[3] = kNan;
                },
                "beta[3]"},
        BadCase{"scale",
                [](LaArgs& a, LaOptions&) { a.scale = std::numeric_limits<float>::infinity(); },
                "scale"},
        BadCase{"chunk", [](LaArgs&, LaOptions& o) { o.chunk_size = 48; }, "chunk_size = 48"},
        BadCase{"strategy", [](LaArgs&, LaOptions& o) { o.strategy = "magic"; },
                "unknown strategy 'magic'"},
        BadCase{"null q", [](LaArgs& a, LaOptions&) { a.q.data = nullptr; }, "q has no data"}),
    [](const auto& info) { return std::to_string(info.index); });

TEST(LaErrors, ZeroTokensIsANoOpThatPassesTheStateThrough) {
  LaData d = make_la_data({.seq_lens = {0}, .H = 1, .HV = 2, .K = 16, .V = 16});
  std::fill(d.s1.begin(), d.s1.end(), -1.0f);
  ASSERT_TRUE(la_prefill(d.args()).ok());
  EXPECT_EQ(d.s1, d.s0);
}

}  // namespace
}  // namespace hanpu::test
