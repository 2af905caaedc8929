// Bad input gets a clear error naming the problem, and nothing is written.
#include <cstring>
#include <functional>
#include <limits>

#include <gtest/gtest.h>

#include "attn_test_util.h"

namespace hanpu::test {
namespace {

struct BadCase {
  std::string name;
  std::function<void(AttnArgs&, AttnOptions&)> spoil;
  std::string expect;  // a fragment of the message
};

TEST(AttnErrors, BadInputsAreRejectedByNameWithoutWriting) {
  std::vector<float> small(16 * 3);
  const BadCase cases[] = {
      {"k/v shape mismatch", [](AttnArgs& a, AttnOptions&) { a.v.shape[0] -= 1; }, "v has shape"},
      {"o shape", [](AttnArgs& a, AttnOptions&) { a.o.shape[1] = 3; }, "o has shape"},
      {"Hq % Hkv",
       [](AttnArgs& a, AttnOptions&) {
         a.q.shape[1] = a.o.shape[1] = 3;
         a.k.shape[1] = a.v.shape[1] = 2;
       },
       "multiple of key/value heads"},
      {"D not multiple of 16",
       [](AttnArgs& a, AttnOptions&) {
         a.q.shape[2] = a.k.shape[2] = a.v.shape[2] = a.o.shape[2] = 100;
       },
       "head dim D = 100"},
      {"D too large",
       [](AttnArgs& a, AttnOptions&) {
         a.q.shape[2] = a.k.shape[2] = a.v.shape[2] = a.o.shape[2] = kAttnMaxHeadDim + 16;
       },
       "head dim D = 592"},
      {"k head dim",
       [](AttnArgs& a, AttnOptions&) {
         a.k.shape[2] = 32;
         a.v.shape[2] = 32;
       },
       "k has shape"},
      {"rank",
       [](AttnArgs& a, AttnOptions&) {
         a.q.shape = {64, 128};
       },
       "q must have 3 dims"},
      {"window 0",
       [](AttnArgs& a, AttnOptions&) {
         a.mask = AttnMask::kSliding;
         a.window = 0;
       },
       "window = 0"},
      {"NaN scale",
       [](AttnArgs& a, AttnOptions&) { a.scale = std::numeric_limits<float>::quiet_NaN(); },
       "not finite"},
      {"inf scale",
       [](AttnArgs& a, AttnOptions&) { a.scale = std::numeric_limits<float>::infinity(); },
       "not finite"},
      {"q_offset past keys", [](AttnArgs& a, AttnOptions&) { a.q_offset = 10; }, "q_offset"},
      {"negative q_offset", [](AttnArgs& a, AttnOptions&) { a.q_offset = -1; }, "q_offset"},
      {"lse shape",
       [](AttnArgs& a, AttnOptions&) {
         a.lse.shape = {64, 2};
       },
       "lse has shape"},
      {"lse dtype", [](AttnArgs& a, AttnOptions&) { a.lse.dtype = DType::kF16; }, "lse has dtype"},
      {"dtype mismatch", [](AttnArgs& a, AttnOptions&) { a.k.dtype = DType::kBF16; },
       "k has dtype"},
      {"missing data", [](AttnArgs& a, AttnOptions&) { a.v.data = nullptr; }, "v has no data"},
      {"unknown placement", [](AttnArgs&, AttnOptions& o) { o.placement = "diagonal"; },
       "unknown placement 'diagonal'"},
      {"bad tiles", [](AttnArgs&, AttnOptions& o) { o.tiles.q_rows = 100000; }, "tiles"},
      {"Dv not a multiple of 16",
       [](AttnArgs& a, AttnOptions&) { a.v.shape[2] = a.o.shape[2] = 40; },
       "value head dim Dv = 40"},
      {"o of the keys' head dim", [](AttnArgs& a, AttnOptions&) { a.v.shape[2] = 32; },
       "expected [T, Hq, Dv] = [64, 2, 32]"},
      {"strided values of their own head dim",
       [](AttnArgs& a, AttnOptions&) {
         a.v.shape[2] = a.o.shape[2] = 32;
         a.kv_row_stride = 64;
       },
       "must be contiguous"},
      {"bf16 products with Dv != D",
       [](AttnArgs& a, AttnOptions& o) {
         a.v.shape[2] = a.o.shape[2] = 32;
         o.products = AttnProducts::kBf16;
       },
       "bf16 products cannot run"},
  };
  for (const BadCase& bc : cases) {
    AttnData d = make_attn_data({.T = 64, .Tk = 64, .Hq = 2, .Hkv = 1, .D = 64, .seed = 9});
    d.poison();
    const std::vector<uint8_t> o_before = d.o;
    const std::vector<float> lse_before = d.lse;
    AttnArgs a = d.args();
    AttnOptions opt;
    bc.spoil(a, opt);
    const Status st = attn_prefill(a, opt);
    ASSERT_FALSE(st.ok()) << bc.name;
    EXPECT_NE(st.message().find(bc.expect), std::string::npos) << bc.name << ": " << st.message();
    EXPECT_EQ(0, std::memcmp(o_before.data(), d.o.data(), o_before.size()))
        << bc.name << " wrote o";
    EXPECT_EQ(0, std::memcmp(lse_before.data(), d.lse.data(), lse_before.size() * 4))
        << bc.name << " wrote lse";
    if (bc.name != "unknown placement" && bc.name != "bad tiles" &&
        bc.name != "bf16 products with Dv != D") {  // options attn_decode does not take
      const Status sd = attn_decode(a);
      EXPECT_FALSE(sd.ok()) << bc.name << " (decode)";
      EXPECT_NE(sd.message().find("attn_decode"), std::string::npos) << sd.message();
    }
  }
}

}  // namespace
}  // namespace hanpu::test
