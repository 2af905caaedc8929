// profile_la_chunk_stages runs hanpu's chunk operators one by one: its outputs must be
// la_prefill's, its stages the documented ones, and bad arguments an error.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "la_test_util.h"

namespace hanpu {
namespace {

using test::LaCase;

// With every value head profiled, o is the hanpu strategy's o (same operators, same order).
TEST(LaStageProfile, OutputsAreHanpusAndStagesAreNamed) {
  for (LaMech mech : {LaMech::kGdn, LaMech::kKda}) {
    for (DType dt : {DType::kF32, DType::kBF16}) {
      const LaCase c{.mech = mech,
                     .dtype = dt,
                     .seq_lens = {150},
                     .H = 2,
                     .HV = 4,
                     .K = 64,
                     .V = 48,
                     .seed = 77};
      test::LaData ref = test::make_la_data(c);
      LaOptions opt;
      opt.strategy = "hanpu";
      ASSERT_TRUE(la_prefill(ref.args(), opt).ok());
      test::LaData prof = test::make_la_data(c);
      prof.poison();
      std::vector<LaStageTime> stages;
      const Status st = profile_la_chunk_stages(prof.args(), 64, 4, 2, &stages);
      ASSERT_TRUE(st.ok()) << st.message();
      EXPECT_LE(test::nmse(ref.o_as_double(), prof.o_as_double()), 1e-12) << c.describe();
      std::vector<std::string> names;
      for (const LaStageTime& s : stages) {
        names.emplace_back(s.stage);
        EXPECT_GE(s.min_us, 0.0);
        EXPECT_LE(s.min_us, s.median_us) << s.stage;
      }
      const std::vector<std::string> want =
          mech == LaMech::kGdn
              ? std::vector<std::string>{"load",  "kk_qk",   "state",  "mask", "rhs",
                                         "solve", "outputs", "update", "store"}
              : std::vector<std::string>{"load",  "state",   "mask",   "rhs",
                                         "solve", "outputs", "update", "store"};
      EXPECT_EQ(names, want);
      for (const LaStageTime& s : stages) {
        const bool product = s.stage == "state" || s.stage == "solve" || s.stage == "outputs" ||
                             s.stage == "update" ||
                             s.stage == (mech == LaMech::kGdn ? "kk_qk" : "mask");
        EXPECT_EQ(s.fmas > 0, product) << s.stage;
      }
    }
  }
}

TEST(LaStageProfile, BadArgumentsAreErrors) {
  test::LaData d = test::make_la_data(LaCase{.seq_lens = {10, 20}, .H = 1, .HV = 2});
  std::vector<LaStageTime> stages;
  Status st = profile_la_chunk_stages(d.args(), 64, 1, 1, &stages);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("one sequence"), std::string::npos) << st.message();
  test::LaData one = test::make_la_data(LaCase{.seq_lens = {30}, .H = 1, .HV = 2});
  st = profile_la_chunk_stages(one.args(), 64, 3, 1, &stages);
  EXPECT_NE(st.message().find("heads 3"), std::string::npos) << st.message();
  st = profile_la_chunk_stages(one.args(), 64, 1, 0, &stages);
  EXPECT_NE(st.message().find("rounds 0"), std::string::npos) << st.message();
  st = profile_la_chunk_stages(one.args(), 48, 1, 1, &stages);
  EXPECT_FALSE(st.ok()) << "chunk 48 is not a supported chunk size";
}

}  // namespace
}  // namespace hanpu
