// GGUF: the fixtures' GGUF (written the way llama.cpp's converter writes them) gives the same
// logits and tokens as the safetensors checkpoint and transformers; malformed headers are
// refused with the byte offset; random corruption never crashes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <tuple>

#include "hanpu/engine.h"
#include "fixtures.h"
#include "model/gguf.h"
#include "model/gguf_model.h"
#include "model/model.h"

namespace hanpu::model {
namespace {

const std::string kDir = std::string(HANPU_FIXTURES_DIR) + "/models/";

class GgufFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(GgufFixture, SameLogitsAsSafetensorsAndTransformers) {
  std::unique_ptr<Model> st, gg;
  ASSERT_TRUE(load_model(kDir + GetParam(), {}, &st).ok());
  const Status s = load_model(kDir + GetParam() + "/model.gguf", {}, &gg);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(gg->config().layers, st->config().layers);
  EXPECT_EQ(gg->config().rotary_dims(), st->config().rotary_dims());
  EXPECT_EQ(gg->config().max_positions, st->config().max_positions);  // context_length
  EXPECT_EQ(gg->config().max_positions, 4096);
  const auto ref = testing::reference(GetParam());
  for (const auto& p : ref["prompts"]) {
    const auto ids = p["ids"].get<std::vector<int>>();
    const auto want = p["last_logits"].get<std::vector<float>>();
    SequenceState a = st->new_state(), b = gg->new_state();
    std::vector<float> la, lb;
    ASSERT_TRUE(st->forward(ids.data(), static_cast<int64_t>(ids.size()), &a, {}, &la).ok());
    ASSERT_TRUE(gg->forward(ids.data(), static_cast<int64_t>(ids.size()), &b, {}, &lb).ok());
    float d_st = 0, d_ref = 0;
    for (size_t i = 0; i < la.size(); ++i) {
      ASSERT_TRUE(std::isfinite(lb[i]));
      d_st = std::max(d_st, std::abs(la[i] - lb[i]));
      d_ref = std::max(d_ref, std::abs(lb[i] - want[i]));
    }
    EXPECT_LE(d_st, 1e-5f) << p["text"];
    EXPECT_LE(d_ref, 1e-4f) << p["text"];
  }
}

TEST_P(GgufFixture, EngineTokenizesFromTheGgufAndGeneratesTheSameTokens) {
  std::unique_ptr<Engine> e;
  const Status s = Engine::load(kDir + GetParam() + "/model.gguf", &e);
  ASSERT_TRUE(s.ok()) << s.message();
  const auto ref = testing::reference(GetParam());
  for (const auto& p : ref["prompts"]) {
    std::vector<int> ids;
    ASSERT_TRUE(e->tokenize(p["text"].get<std::string>(), &ids).ok());
    EXPECT_EQ(ids, p["ids"].get<std::vector<int>>()) << p["text"];
    GenerateOptions o;
    o.max_tokens = 16;
    o.stop_at_eos = false;
    std::vector<int> out;
    ASSERT_TRUE(e->generate(ids, o, nullptr, nullptr, nullptr, &out).ok());
    EXPECT_EQ(out, p["greedy16"].get<std::vector<int>>()) << p["text"];
  }
}

INSTANTIATE_TEST_SUITE_P(Models, GgufFixture,
                         ::testing::Values("qwen35-tiny", "qwen3next-tiny", "kimi-linear-tiny"));

// A minimal GGUF: one metadata string and tensors described by (name, ne, type, offset).
struct TensorSpec {
  std::string name;
  std::vector<uint64_t> ne;
  uint32_t type;
  uint64_t offset;
};

template <class T>
void put(std::vector<uint8_t>& f, T x) {
  const auto* p = reinterpret_cast<const uint8_t*>(&x);
  f.insert(f.end(), p, p + sizeof(T));
}
void put_str(std::vector<uint8_t>& f, const std::string& s) {
  put<uint64_t>(f, s.size());
  f.insert(f.end(), s.begin(), s.end());
}

std::vector<uint8_t> make_gguf(const std::vector<TensorSpec>& tensors, size_t data_bytes) {
  std::vector<uint8_t> f = {'G', 'G', 'U', 'F'};
  put<uint32_t>(f, 3);
  put<uint64_t>(f, tensors.size());
  put<uint64_t>(f, 1);
  put_str(f, "general.architecture");
  put<uint32_t>(f, 8);
  put_str(f, "qwen35");
  for (const auto& t : tensors) {
    put_str(f, t.name);
    put<uint32_t>(f, static_cast<uint32_t>(t.ne.size()));
    for (uint64_t n : t.ne) put<uint64_t>(f, n);
    put<uint32_t>(f, t.type);
    put<uint64_t>(f, t.offset);
  }
  f.resize((f.size() + 31) / 32 * 32 + data_bytes, 0);
  return f;
}

TEST(Gguf, GoodHeaderParses) {
  const auto f = make_gguf({{"a", {3, 2}, 0, 0}, {"b", {4}, 30, 32}}, 64);
  GgufMetadata meta;
  WeightStore store;
  const Status st = parse_gguf(f.data(), f.size(), "x.gguf", &meta, &store);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(std::get<std::string>(meta.at("general.architecture").v), "qwen35");
  EXPECT_EQ(store.find("a")->shape, (Shape{2, 3}));  // ne reversed: outermost first
  EXPECT_EQ(store.find("b")->dtype, DType::kBF16);
}

// Every block type of base/quant_blocks.h loads, in one file (a per-tensor mix), as rows of
// whole blocks; stored_to_f32 decodes them as dequantize_blocks does.
TEST(Gguf, QuantizedTensorsOfEveryTypeLoadAsBlocks) {
  std::vector<TensorSpec> specs;
  uint64_t offset = 0;
  for (const QuantTypeInfo& q : quant_types()) {
    specs.push_back(
        {std::string(q.name), {static_cast<uint64_t>(q.block_elems), 2}, q.ggml_type, offset});
    offset += (2 * q.bytes + 31) / 32 * 32;
  }
  auto f = make_gguf(specs, offset);
  const size_t data = f.size() - offset;
  std::mt19937 rng(7);
  for (size_t i = data; i < f.size(); ++i) f[i] = static_cast<uint8_t>(rng());
  // Finite f16 scales: clear each block's bytes the decoder reads as scales' top exponent bits
  // by making every byte small (f16 with exponent < 31 needs byte 1 of the scale < 0x7c).
  for (size_t i = data; i < f.size(); ++i) f[i] &= 0x3f;
  GgufMetadata meta;
  WeightStore store;
  const Status st = parse_gguf(f.data(), f.size(), "q.gguf", &meta, &store);
  ASSERT_TRUE(st.ok()) << st.message();
  for (const QuantTypeInfo& q : quant_types()) {
    const StoredTensor* t = store.find(std::string(q.name));
    ASSERT_NE(t, nullptr) << q.name;
    ASSERT_TRUE(t->quant.has_value());
    EXPECT_EQ(*t->quant, q.type);
    EXPECT_EQ(t->shape, (Shape{2, q.block_elems}));
    std::vector<float> got(2 * q.block_elems, std::nanf("")), want(2 * q.block_elems);
    stored_to_f32(*t, got.data());
    dequantize_blocks(q.type, t->data, 2, want.data());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << q.name << " " << i;
    // The second row alone, as the weight converters read rows.
    stored_to_f32(*t, q.block_elems, q.block_elems, got.data());
    for (int i = 0; i < q.block_elems; ++i)
      ASSERT_EQ(got[i], want[q.block_elems + i]) << q.name << " " << i;
  }
}

TEST(Gguf, MalformedHeadersAreRefusedByName) {
  struct Case {
    const char* what;
    std::function<std::vector<uint8_t>()> file;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {"bad magic",
       [] {
         auto f = make_gguf({}, 0);
         f[0] = 'X';
         return f;
       },
       "bad magic"},
      {"too short",
       [] {
         return std::vector<uint8_t>{'G', 'G'};
       },
       "file ends inside the magic"},
      {"version",
       [] {
         auto f = make_gguf({}, 0);
         f[4] = 9;
         return f;
       },
       "version 9"},
      {"absurd tensor count",
       [] {
         auto f = make_gguf({}, 0);
         f[15] = 0x7f;
         return f;
       },
       "tensor count"},
      {"truncated metadata",
       [] {
         auto f = make_gguf({}, 0);
         f.resize(40);
         return f;
       },
       "runs past the end"},
      // Q4_K blocks hold 256 values: a row of 32 is not a whole block.
      {"row not whole blocks",
       [] {
         return make_gguf({{"a", {32, 2}, 12, 0}}, 512);
       },
       "rows of 32 values are not whole Q4_K blocks of 256"},
      {"unsupported type named",
       [] {
         return make_gguf({{"a", {256}, 16, 0}}, 512);
       },
       "type IQ2_XXS is not supported; hanpu loads F32, F16, BF16, Q4_0"},
      {"unknown type",
       [] {
         return make_gguf({{"a", {32}, 99, 0}}, 64);
       },
       "type id 99 is not supported"},
      // Two Q8_0 rows of 64 values: 4 blocks of 34 bytes, 136 bytes; the data holds 128.
      {"blocks past the end",
       [] {
         return make_gguf({{"a", {64, 2}, 8, 0}}, 128);
       },
       "data [0, 136) runs past the end"},
      // Block 3 of two Q8_0 rows (row 1) has an f16 NaN scale.
      {"NaN scale",
       [] {
         auto f = make_gguf({{"a", {64, 2}, 8, 0}}, 160);
         const size_t block3 = f.size() - 160 + 3 * 34;
         f[block3] = 0x00;
         f[block3 + 1] = 0x7e;
         return f;
       },
       "Q8_0 block 3 (row 1, file offset"},
      {"infinite scale",
       [] {
         auto f = make_gguf({{"a", {32}, 8, 0}}, 64);
         f[f.size() - 64 + 1] = 0x7c;
         return f;
       },
       "Q8_0 block 0 (row 0"},
      {"past the end",
       [] {
         return make_gguf({{"a", {100}, 0, 0}}, 64);
       },
       "runs past the end of the data"},
      {"misaligned",
       [] {
         return make_gguf({{"a", {4}, 0, 4}}, 64);
       },
       "not a multiple of the alignment"},
      {"overlap",
       [] {
         return make_gguf({{"a", {16}, 0, 0}, {"b", {8}, 0, 32}}, 128);
       },
       "overlap"},
      {"too many dims",
       [] {
         return make_gguf({{"a", {1, 1, 1, 1, 1}, 0, 0}}, 64);
       },
       "5 dimensions"},
      {"absurd shape",
       [] {
         return make_gguf({{"a", {1ull << 40, 1ull << 40}, 0, 0}}, 64);
       },
       "absurdly large"},
      // No bytes, but a shape whose int64 element count overflows (found by gguf_fuzz).
      {"zero hides a huge dim",
       [] {
         return make_gguf({{"a", {0, 1ull << 62, 8}, 0, 0}}, 64);
       },
       "absurdly large"},
      {"duplicate",
       [] {
         return make_gguf({{"a", {8}, 0, 0}, {"a", {8}, 0, 32}}, 64);
       },
       "appears twice"},
  };
  for (const Case& c : cases) {
    const auto f = c.file();
    GgufMetadata meta;
    WeightStore store;
    const Status st = parse_gguf(f.data(), f.size(), "bad.gguf", &meta, &store);
    ASSERT_FALSE(st.ok()) << c.what;
    EXPECT_NE(st.message().find(c.expect), std::string::npos) << c.what << ": " << st.message();
    EXPECT_NE(st.message().find("bad.gguf"), std::string::npos) << c.what;
    EXPECT_EQ(store.size(), 0u) << c.what;
  }
}

// A zero-size tensor holds no bytes, so its offset may point anywhere inside the data (even
// into another tensor) without overlapping; one of bytes nested in another's is an overlap.
TEST(Gguf, ZeroSizeTensorsOverlapNothingAndNestedOverlapsAreFound) {
  for (uint64_t offset : {0ull, 32ull, 64ull}) {
    const auto f =
        make_gguf({{"a", {16}, 0, 0}, {"empty", {0, 4}, 0, offset}, {"b", {8}, 0, 64}}, 128);
    GgufMetadata meta;
    WeightStore store;
    const Status st = parse_gguf(f.data(), f.size(), "z.gguf", &meta, &store);
    ASSERT_TRUE(st.ok()) << offset << ": " << st.message();
    EXPECT_EQ(store.find("empty")->shape, (Shape{4, 0}));
  }
  const auto f =
      make_gguf({{"long", {32}, 0, 0}, {"short", {4}, 0, 32}, {"next", {8}, 0, 64}}, 128);
  GgufMetadata meta;
  WeightStore store;
  const Status st = parse_gguf(f.data(), f.size(), "n.gguf", &meta, &store);
  EXPECT_NE(st.message().find("tensors 'long' and 'short' overlap"), std::string::npos)
      << st.message();
}

// llama.cpp's end-of-generation set: eos, eot and eom ids, each where the GGUF has it and
// inside the vocabulary.
TEST(Gguf, StopTokensAreEosEotAndEom) {
  GgufMetadata meta;
  WeightStore store;
  ASSERT_TRUE(load_gguf(kDir + "qwen35-tiny/model.gguf", &meta, &store).ok());
  ModelConfig c;
  ASSERT_TRUE(gguf_model_config(meta, store, "fixture", &c).ok());
  EXPECT_EQ(c.eos_token_ids, (std::vector<int>{2}));
  meta["tokenizer.ggml.eot_token_id"] = GgufValue{uint64_t{4}};
  meta["tokenizer.ggml.eom_token_id"] = GgufValue{uint64_t{3}};
  ASSERT_TRUE(gguf_model_config(meta, store, "fixture", &c).ok());
  EXPECT_EQ(c.eos_token_ids, (std::vector<int>{2, 4, 3}));
  meta["tokenizer.ggml.eom_token_id"] =
      GgufValue{uint64_t{1} << 40};  // past the vocabulary: not a token
  ASSERT_TRUE(gguf_model_config(meta, store, "fixture", &c).ok());
  EXPECT_EQ(c.eos_token_ids, (std::vector<int>{2, 4}));
}

// llama.cpp's embedded sampling defaults (general.sampling.*): sampling when temp > 0, the
// rest off where absent; bad values are refused by key.
TEST(Gguf, SamplingDefaultsFromGeneralSampling) {
  GgufMetadata meta;
  std::optional<GenerationConfig> g;
  ASSERT_TRUE(gguf_generation_config(meta, "m.gguf", &g).ok());
  EXPECT_FALSE(g.has_value());
  meta["general.sampling.temp"] = GgufValue{0.6};
  meta["general.sampling.top_k"] = GgufValue{int64_t{20}};
  ASSERT_TRUE(gguf_generation_config(meta, "m.gguf", &g).ok());
  ASSERT_TRUE(g.has_value());
  EXPECT_TRUE(g->do_sample);
  EXPECT_FLOAT_EQ(g->temperature, 0.6f);
  EXPECT_EQ(g->top_k, 20);
  EXPECT_EQ(g->top_p, 1.0f);
  EXPECT_EQ(g->min_p, 0.0f);
  EXPECT_EQ(g->repetition_penalty, 1.0f);
  meta["general.sampling.temp"] = GgufValue{0.0};  // greedy, as llama.cpp reads temp <= 0
  meta["general.sampling.min_p"] = GgufValue{0.05};
  ASSERT_TRUE(gguf_generation_config(meta, "m.gguf", &g).ok());
  EXPECT_FALSE(g->do_sample);
  EXPECT_FLOAT_EQ(g->min_p, 0.05f);
  for (const auto& [key, value, want] :
       std::vector<std::tuple<std::string, GgufValue, std::string>>{
           {"top_p", GgufValue{2.0}, "'general.sampling.top_p' is 2, not in (0, 1]"},
           {"min_p", GgufValue{-1.0}, "'general.sampling.min_p' is -1, not in [0, 1]"},
           {"temp", GgufValue{-0.5}, "'general.sampling.temp' is -0.5, not in [0, 1e6]"},
           {"top_k", GgufValue{int64_t{-3}}, "'general.sampling.top_k' is -3, not >= 0"},
           {"top_k", GgufValue{std::string("many")},
            "'general.sampling.top_k' is not an integer"}}) {
    GgufMetadata bad = meta;
    bad["general.sampling." + key] = value;
    const Status st = gguf_generation_config(bad, "m.gguf", &g);
    EXPECT_NE(st.message().find("m.gguf: metadata " + want), std::string::npos) << st.message();
  }
}

// The fixture GGUF with general.sampling.temp 0.6 and top_k 20 put first among its metadata
// (and a padding string, so the header grows by 128 bytes and the data stays aligned).
std::string gguf_with_sampling() {
  std::ifstream in(kDir + "qwen35-tiny/model.gguf", std::ios::binary);
  std::vector<uint8_t> f((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<uint8_t> kv;
  const auto put = [&](const void* p, size_t n) {
    kv.insert(kv.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
  };
  const auto key = [&](const std::string& k, uint32_t type) {
    const uint64_t n = k.size();
    put(&n, 8);
    put(k.data(), k.size());
    put(&type, 4);
  };
  const float temp = 0.6f;
  const int32_t top_k = 20;
  key("general.sampling.temp", 6);  // GGUF_TYPE_FLOAT32
  put(&temp, 4);
  key("general.sampling.top_k", 5);  // GGUF_TYPE_INT32
  put(&top_k, 4);
  const std::string pad(128 - kv.size() - 23, 'x');
  key("pad", 8);  // GGUF_TYPE_STRING
  const uint64_t n = pad.size();
  put(&n, 8);
  put(pad.data(), pad.size());
  EXPECT_EQ(kv.size(), 128u);
  uint64_t kv_count;
  std::memcpy(&kv_count, f.data() + 16, 8);
  kv_count += 3;
  std::memcpy(f.data() + 16, &kv_count, 8);
  f.insert(f.begin() + 24, kv.begin(), kv.end());
  const std::string path = ::testing::TempDir() + "/hanpu_sampling.gguf";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(f.data()), static_cast<std::streamsize>(f.size()));
  return path;
}

TEST(Gguf, EngineTakesItsSamplingDefaults) {
  std::unique_ptr<Engine> e;
  const Status st = Engine::load(gguf_with_sampling(), &e);
  ASSERT_TRUE(st.ok()) << st.message();
  const GenerateOptions o = e->default_generate_options();
  EXPECT_FLOAT_EQ(o.temperature, 0.6f);
  EXPECT_EQ(o.top_k, 20);
  EXPECT_EQ(o.top_p, 1.0f);
  EXPECT_NE(e->info().sampling_origin.find("general.sampling"), std::string::npos);
  // The fixture itself has none: greedy.
  ASSERT_TRUE(Engine::load(kDir + "qwen35-tiny/model.gguf", &e).ok());
  EXPECT_EQ(e->default_generate_options().temperature, 0.0f);
  EXPECT_EQ(e->info().sampling_origin, "");
}

TEST(Gguf, RandomCorruptionOfTheFixtureNeverCrashes) {
  std::ifstream in(kDir + "qwen35-tiny/model.gguf", std::ios::binary);
  std::vector<uint8_t> good((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(good.size(), 1000u);
  std::mt19937 rng(9);
  size_t header = 0;
  {  // the header is what the parser reads; corrupt within it
    GgufMetadata meta;
    WeightStore store;
    ASSERT_TRUE(parse_gguf(good.data(), good.size(), "ok", &meta, &store).ok());
    header = static_cast<size_t>(store.find("token_embd.weight")->file_offset);
  }
  for (int it = 0; it < 300; ++it) {
    auto f = good;
    for (int k = 0; k < 3; ++k) f[rng() % header] = static_cast<uint8_t>(rng());
    if (it % 4 == 0) f.resize(rng() % f.size());
    GgufMetadata meta;
    WeightStore store;
    const Status st = parse_gguf(f.data(), f.size(), "fuzz", &meta, &store);
    if (!st.ok()) continue;
    std::optional<GenerationConfig> g;  // its sampling defaults too
    (void)gguf_generation_config(meta, "fuzz", &g);
    ModelConfig c;  // a header that parses must still convert or fail cleanly
    if (gguf_model_config(meta, store, "fuzz", &c).ok()) {
      ModelWeights w;
      (void)convert_gguf_weights(c, store, DType::kF32, false, &w);
    }
  }
}

}  // namespace
}  // namespace hanpu::model
