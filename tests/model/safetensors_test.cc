// safetensors: the fixture loads with the shapes transformers saved; every malformed header
// (truncated, offsets past the end, overlaps, wrong dtypes or sizes, absurd shapes) is refused
// with a message naming the problem, and the store is left untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <tuple>
#include <functional>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <random>

#include "model/safetensors.h"

namespace hanpu::model {
namespace {

using nlohmann::json;

std::vector<uint8_t> make_file(const json& header, size_t data_bytes) {
  const std::string h = header.dump();
  std::vector<uint8_t> f(8 + h.size() + data_bytes, 0);
  uint64_t n = h.size();
  for (int i = 0; i < 8; ++i) f[i] = static_cast<uint8_t>(n >> (8 * i));
  std::memcpy(f.data() + 8, h.data(), h.size());
  return f;
}

json good_header() {
  return json{{"__metadata__", {{"format", "pt"}}},
              {"a", {{"dtype", "F32"}, {"shape", {2, 3}}, {"data_offsets", {0, 24}}}},
              {"b", {{"dtype", "BF16"}, {"shape", {4}}, {"data_offsets", {24, 32}}}}};
}

// A zero-size tensor holds no bytes: its offsets may sit inside another tensor's range
// without overlapping it; one of bytes nested in another's is an overlap.
TEST(Safetensors, ZeroSizeTensorsOverlapNothingAndNestedOverlapsAreFound) {
  for (int at : {0, 8, 24, 32}) {
    json h = good_header();
    h["empty"] = {{"dtype", "F32"}, {"shape", {0, 5}}, {"data_offsets", {at, at}}};
    const auto f = make_file(h, 32);
    WeightStore store;
    const Status st = parse_safetensors(f.data(), f.size(), "z.safetensors", &store);
    ASSERT_TRUE(st.ok()) << at << ": " << st.message();
    EXPECT_EQ(store.find("empty")->shape, (Shape{0, 5}));
  }
  const json nested{{"long", {{"dtype", "F32"}, {"shape", {8}}, {"data_offsets", {0, 32}}}},
                    {"short", {{"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {4, 8}}}},
                    {"next", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {16, 24}}}}};
  const auto f = make_file(nested, 32);
  WeightStore store;
  const Status st = parse_safetensors(f.data(), f.size(), "n.safetensors", &store);
  EXPECT_NE(st.message().find("tensors 'long' [0, 32) and 'short' [4, 8) overlap"),
            std::string::npos)
      << st.message();
}

TEST(Safetensors, FixtureLoadsWithItsShapes) {
  WeightStore store;
  const Status st =
      load_safetensors(std::string(HANPU_FIXTURES_DIR) + "/models/qwen35-tiny", &store);
  ASSERT_TRUE(st.ok()) << st.message();
  const StoredTensor* t = nullptr;
  ASSERT_TRUE(store.get("model.embed_tokens.weight", {384, 64}, &t).ok());
  EXPECT_EQ(t->dtype, DType::kF32);
  const Status wrong = store.get("model.embed_tokens.weight", {64, 384}, &t);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.message().find("[384, 64]"), std::string::npos) << wrong.message();
  EXPECT_NE(store.get("model.nothing", {1}, &t).message().find("no tensor 'model.nothing'"),
            std::string::npos);
}

TEST(Safetensors, GoodHeaderParsesAndConverts) {
  auto f = make_file(good_header(), 32);
  const float a[6] = {1, -2, 3.5f, 0, 1e-3f, 7};
  std::memcpy(f.data() + f.size() - 32, a, sizeof(a));
  const uint16_t b[4] = {0x3F80, 0xC000, 0x0000, 0x4040};  // 1, -2, 0, 3 in bf16
  std::memcpy(f.data() + f.size() - 8, b, sizeof(b));
  WeightStore store;
  ASSERT_TRUE(parse_safetensors(f.data(), f.size(), "x.safetensors", &store).ok());
  ASSERT_EQ(store.size(), 2u);
  std::vector<float> out(6);
  stored_to_f32(*store.find("a"), out.data());
  EXPECT_EQ(out, std::vector<float>(a, a + 6));
  stored_to_f32(*store.find("b"), out.data());
  EXPECT_EQ(std::vector<float>(out.begin(), out.begin() + 4), (std::vector<float>{1, -2, 0, 3}));
}

TEST(Safetensors, NonFiniteWeightsAreRefusedWithTheirIndex) {
  // get_f32 scans every weight of a checkpoint (the first bad element named), in each dtype.
  const json header{{"a", {{"dtype", "F32"}, {"shape", {2, 3}}, {"data_offsets", {0, 24}}}},
                    {"b", {{"dtype", "BF16"}, {"shape", {5}}, {"data_offsets", {24, 34}}}},
                    {"c", {{"dtype", "F16"}, {"shape", {3}}, {"data_offsets", {34, 40}}}},
                    {"d", {{"dtype", "BF16"}, {"shape", {3}}, {"data_offsets", {40, 46}}}}};
  auto f = make_file(header, 46);
  uint8_t* data = f.data() + f.size() - 46;
  const float a[6] = {1, 2, 3, 4, INFINITY, 6};
  const uint16_t b[5] = {0x3F80, 0x4000, 0x7FC0, 0x7F80, 0x0000};  // 1, 2, NaN, inf, 0
  const uint16_t c[3] = {0x3C00, 0xFC00, 0x3C00};                  // 1, -inf, 1 in f16
  const uint16_t d[3] = {0x3F80, 0xC000, 0x4040};                  // 1, -2, 3
  std::memcpy(data, a, sizeof(a));
  std::memcpy(data + 24, b, sizeof(b));
  std::memcpy(data + 34, c, sizeof(c));
  std::memcpy(data + 40, d, sizeof(d));
  WeightStore store;
  ASSERT_TRUE(parse_safetensors(f.data(), f.size(), "w.safetensors", &store).ok());
  std::vector<float> out;
  for (const auto& [name, shape, where] :
       {std::tuple{"a", Shape{2, 3}, 4}, {"b", Shape{5}, 2}, {"c", Shape{3}, 1}}) {
    const Status st = store.get_f32(name, shape, &out);
    ASSERT_FALSE(st.ok()) << name;
    EXPECT_NE(
        st.message().find(fmt::format(
            "tensor '{}' in w.safetensors holds a non-finite value at element {}", name, where)),
        std::string::npos)
        << st.message();
  }
  ASSERT_TRUE(store.get_f32("d", {3}, &out).ok());
  EXPECT_EQ(out, (std::vector<float>{1, -2, 3}));
}

struct BadCase {
  const char* what;
  std::function<std::vector<uint8_t>()> file;
  const char* expect;
};

TEST(Safetensors, MalformedHeadersAreRefusedByName) {
  const std::vector<BadCase> cases = {
      {"too short", [] { return std::vector<uint8_t>(5, 0); }, "too short"},
      {"header past end",
       [] {
         auto f = make_file(good_header(), 32);
         f[0] = 0xFF;
         f[1] = 0xFF;
         return f;
       },
       "runs past the end of the file"},
      {"absurd header length",
       [] {
         auto f = make_file(good_header(), 32);
         f[7] = 0x7F;
         return f;
       },
       "exceeds"},
      {"truncated data", [] { return make_file(good_header(), 20); },
       "run past the end of the data"},
      {"overlap",
       [] {
         auto h = good_header();
         h["b"]["data_offsets"] = {16, 24};
         return make_file(h, 32);
       },
       "overlap"},
      {"size mismatch",
       [] {
         auto h = good_header();
         h["a"]["shape"] = {3, 3};
         return make_file(h, 32);
       },
       "needs 36"},
      {"quantised dtype",
       [] {
         auto h = good_header();
         h["b"]["dtype"] = "I8";
         return make_file(h, 32);
       },
       "dtype I8"},
      {"negative dim",
       [] {
         auto h = good_header();
         h["a"]["shape"] = {-2, 3};
         return make_file(h, 32);
       },
       "negative"},
      {"absurd shape",
       [] {
         auto h = good_header();
         h["a"]["shape"] = {1ull << 40, 1ull << 40};
         return make_file(h, 32);
       },
       "absurdly large"},
      {"zero hides a huge dim",  // no bytes, but an int64 element count that overflows
       [] {
         auto h = good_header();
         h["a"]["shape"] = {0, 1ull << 62, 8};
         h["a"]["data_offsets"] = {0, 0};
         return make_file(h, 32);
       },
       "absurdly large"},
      {"offsets reversed",
       [] {
         auto h = good_header();
         h["a"]["data_offsets"] = {24, 0};
         return make_file(h, 32);
       },
       "end before they begin"},
      {"bad json",
       [] {
         auto f = make_file(good_header(), 32);
         f[8] = 'x';
         return f;
       },
       "header (from byte 8): malformed JSON at byte 1"},
      {"not an object",
       [] {
         return make_file(json::array({1, 2}), 0);
       },
       "not a JSON object"},
      {"number out of range (found by the fuzzer)",
       [] {
         const std::string h = R"({"a":{"dtype":"F32","shape":[2e999],"data_offsets":[0,0]}})";
         std::vector<uint8_t> f(8 + h.size());
         f[0] = static_cast<uint8_t>(h.size());
         std::memcpy(f.data() + 8, h.data(), h.size());
         return f;
       },
       "malformed JSON"},
      {"no offsets",
       [] {
         auto h = good_header();
         h["a"].erase("data_offsets");
         return make_file(h, 32);
       },
       "data_offsets"},
  };
  for (const BadCase& c : cases) {
    const auto f = c.file();
    WeightStore store;
    const Status st = parse_safetensors(f.data(), f.size(), "bad.safetensors", &store);
    ASSERT_FALSE(st.ok()) << c.what;
    EXPECT_NE(st.message().find(c.expect), std::string::npos) << c.what << ": " << st.message();
    EXPECT_NE(st.message().find("bad.safetensors"), std::string::npos) << c.what;
    EXPECT_EQ(store.size(), 0u) << c.what << ": partial load";
  }
}

TEST(Safetensors, RandomCorruptionNeverCrashes) {
  // A small in-process fuzz (the libFuzzer target goes further): flip bytes of a good file's
  // header and cut it at random lengths; parsing must return, ok or with an error.
  const auto good = make_file(good_header(), 32);
  std::mt19937 rng(7);
  for (int it = 0; it < 3000; ++it) {
    auto f = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) f[rng() % (f.size() - 32)] = static_cast<uint8_t>(rng());
    f.resize(rng() % 3 == 0 ? rng() % f.size() : f.size());
    WeightStore store;
    const Status st = parse_safetensors(f.data(), f.size(), "fuzz", &store);
    if (st.ok()) {
      for (const auto& [name, t] : store.tensors()) {
        EXPECT_LE(t.file_offset + shape_numel(t.shape) * dtype_size(t.dtype), f.size());
      }
    }
  }
}

TEST(Safetensors, MissingFileAndFolderAreNamed) {
  WeightStore store;
  EXPECT_NE(load_safetensors("/nonexistent/x.safetensors", &store).message().find("cannot open"),
            std::string::npos);
  EXPECT_NE(load_safetensors(HANPU_FIXTURES_DIR, &store).message().find("no model.safetensors"),
            std::string::npos);
}

}  // namespace
}  // namespace hanpu::model
