// hanpu quantize (hanpu/quantize.h, model/quant_recipe.h): llama-quantize's per-tensor types
// on the real Qwen3.5-0.8B tensor list (tests/fixtures/quant/qwen35-0.8b-*.types: what
// llama-quantize chose for each mix, scripts/make_quant_recipe_lists.sh), and whole files from
// the fixtures: metadata carried over with its types, each tensor's bytes those of the
// quantizer on the input, the result loads and runs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "base/quant_quantize.h"
#include "fixtures.h"
#include "hanpu/quantize.h"
#include "model/gguf.h"
#include "model/gguf_writer.h"
#include "model/model.h"
#include "model/quant_recipe.h"

namespace hanpu::model {
namespace {

const std::string kFixtures = std::string(HANPU_FIXTURES_DIR);

struct Listed {
  std::string name, type;
  std::vector<int64_t> shape;
};

std::vector<Listed> read_types(const std::string& file) {
  std::ifstream in(kFixtures + "/quant/" + file);
  std::vector<Listed> out;
  std::string name, type, dims;
  while (in >> name >> type >> dims) {
    Listed l{name, type, {}};
    std::stringstream ss(dims);
    for (std::string d; std::getline(ss, d, ',');) l.shape.push_back(std::stoll(d));
    out.push_back(l);
  }
  return out;
}

std::string choice_name(const TensorChoice& c, const std::string& stored) {
  switch (c.kind) {
    case TensorChoice::kQuantize:
      return std::string(quant_type_info(c.type).name);
    case TensorChoice::kF16:
      return "F16";
    default:
      return stored;
  }
}

// Qwen3.5-0.8B: 24 layers, 8 query heads per 2 KV heads, tied embedding, no experts.
TEST(QuantRecipe, ChoosesWhatLlamaQuantizeChoseForTheRealModel) {
  for (const QuantFileType& ft : quant_file_types()) {
    std::string lower(ft.name);
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const std::vector<Listed> listed = read_types("qwen35-0.8b-" + lower + ".types");
    ASSERT_EQ(listed.size(), 320u) << ft.name;
    std::vector<std::string> names;
    for (const Listed& l : listed) names.push_back(l.name);
    std::vector<std::string> ordered = names;
    llama_tensor_order(&ordered);
    EXPECT_EQ(ordered, names) << ft.name << ": llama-quantize writes tensors in its own order";
    std::vector<RecipeTensor> tensors;
    for (const Listed& l : listed) tensors.push_back({l.name, l.shape});
    const std::vector<TensorChoice> got =
        plan_quantization(ft, {.n_layer = 24, .n_gqa = 4, .n_expert = 0}, tensors);
    int quantized = 0;
    for (size_t i = 0; i < listed.size(); ++i) {
      // What is not quantized stays as the input stored it: F32 norms and biases here.
      EXPECT_EQ(choice_name(got[i], "F32"), listed[i].type) << ft.name << " " << listed[i].name;
      quantized += got[i].kind == TensorChoice::kQuantize;
    }
    EXPECT_EQ(quantized, 187) << ft.name;
  }
}

TEST(QuantRecipe, FileTypesByName) {
  ASSERT_NE(find_quant_file_type("q4_k_m"), nullptr);
  EXPECT_EQ(find_quant_file_type("Q4_K_M")->ftype, 15u);
  EXPECT_EQ(find_quant_file_type("IQ4_XS")->ftype, 30u);
  EXPECT_EQ(find_quant_file_type("Q3_K_M"), nullptr);
  EXPECT_EQ(find_quant_file_type(""), nullptr);
}

class QuantizeFile : public ::testing::TestWithParam<const char*> {
 protected:
  std::string tmp(const std::string& name) { return testing::temp_file("hanpu_quantize", name); }
};

// Every mix of the fixture: the output parses, every input key is there with its type and
// value, general.file_type and general.quantization_version are llama-quantize's, every
// tensor is there in llama.cpp's order with the recipe's type, quantized tensors hold exactly
// quantize_blocks of the input's rows and the rest the input's bytes.
TEST_P(QuantizeFile, WritesTheRecipeBitForBit) {
  const std::string in = kFixtures + "/models/" + GetParam() + "/model.gguf";
  GgufMetadata in_meta;
  WeightStore in_store;
  ASSERT_TRUE(load_gguf(in, &in_meta, &in_store).ok());
  for (const std::string& type : quantize_file_type_names()) {
    SCOPED_TRACE(type);
    const std::string out = tmp(type + ".gguf");
    int reported = 0;
    QuantizeSummary sum;
    const Status s = quantize_model(
        in, out, type, [&](const QuantizedTensorReport&) { ++reported; }, &sum);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(static_cast<size_t>(reported), in_store.size());
    EXPECT_EQ(sum.tensors, in_store.size());
    EXPECT_FALSE(std::filesystem::exists(out + ".partial"));
    GgufMetadata meta;
    WeightStore store;
    const Status ls = load_gguf(out, &meta, &store);
    ASSERT_TRUE(ls.ok()) << ls.message();
    for (const auto& [key, value] : in_meta) {
      if (key == "general.file_type" || key == "general.quantization_version") continue;
      ASSERT_TRUE(meta.count(key)) << key;
      EXPECT_EQ(meta.at(key).type, value.type) << key;
      EXPECT_EQ(meta.at(key).v, value.v) << key;
    }
    EXPECT_EQ(meta.at("general.file_type").type, kGgufU32);
    EXPECT_EQ(meta.at("general.file_type").as_int(), find_quant_file_type(type)->ftype);
    EXPECT_EQ(meta.at("general.quantization_version").as_int(), 2);
    ASSERT_EQ(store.size(), in_store.size());
    size_t quantized = 0;
    for (const auto& [name, t] : store.tensors()) {
      const StoredTensor& src = *in_store.find(name);
      // Dims of 1 past ggml's dimension count are dropped, as llama-quantize writes them.
      const auto squeezed = [](Shape s) {
        std::erase(s, 1);
        return s;
      };
      ASSERT_EQ(squeezed(t.shape), squeezed(src.shape)) << name;
      const int64_t numel = shape_numel(t.shape);
      if (!t.quant && t.dtype != src.dtype) {  // a row no block type fits: F16, as llama.cpp
        ASSERT_EQ(t.dtype, DType::kF16) << name;
        std::vector<float> x(static_cast<size_t>(numel));
        stored_to_f32(src, x.data());
        for (size_t i = 0; i < x.size(); ++i) {
          uint16_t h;
          std::memcpy(&h, t.data + 2 * i, 2);
          ASSERT_EQ(h, f32_to_f16_bits(x[i])) << name << " element " << i;
        }
        continue;
      }
      if (!t.quant) {
        EXPECT_EQ(std::memcmp(t.data, src.data, stored_bytes(t, numel)), 0) << name;
        continue;
      }
      ++quantized;
      std::vector<float> x(static_cast<size_t>(numel));
      stored_to_f32(src, x.data());
      const QuantTypeInfo& q = quant_type_info(*t.quant);
      std::vector<uint8_t> want(stored_bytes(t, numel));
      quantize_blocks(*t.quant, x.data(), static_cast<size_t>(numel / q.block_elems), want.data());
      EXPECT_EQ(std::memcmp(t.data, want.data(), want.size()), 0) << name << " " << q.name;
    }
    EXPECT_EQ(quantized, sum.quantized);
    EXPECT_GT(quantized, 20u);
  }
}

// The Q8_0 file hanpu writes loads and runs: its logits are as close to the fp32 model's as
// the fixture's own Q8_0 GGUF's are (gguf_quant_test.cc's bounds: 3e-2, 0.2 with experts).
TEST_P(QuantizeFile, TheQ8_0FileRuns) {
  const bool moe = std::string(GetParam()) != "qwen35-tiny";
  const std::string dir = kFixtures + "/models/" + GetParam();
  const std::string out = tmp("run-q8_0.gguf");
  ASSERT_TRUE(quantize_model(dir + "/model.gguf", out, "q8_0").ok());
  std::unique_ptr<Model> q, ref;
  const Status s = load_model(out, {}, &q);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_TRUE(load_model(dir + "/model.gguf", {.weights = DType::kF32}, &ref).ok());
  EXPECT_EQ(q->weights().lm_head.quant, QuantType::kQ8_0);
  for (const auto& [text, e] : testing::prompt_logit_nmse(*q, *ref, GetParam()))
    EXPECT_LE(e, moe ? 0.2 : 3e-2) << text;
}

TEST_P(QuantizeFile, BadRequestsAreRefusedAndWriteNothing) {
  const std::string dir = kFixtures + "/models/" + GetParam();
  const std::string out = tmp("refused.gguf");
  const struct {
    std::string in, type, message;
  } cases[] = {
      {dir + "/model.gguf", "Q3_K_M", "is not one of"},
      {dir + "/model-q8_0.gguf", "Q4_K_M", "already quantized (Q8_0)"},
      {dir + "/model.gguf", "", "is not one of"},
      {dir + "/config.json", "Q8_0", "not a GGUF file"},
  };
  for (const auto& c : cases) {
    if (!std::filesystem::exists(c.in)) continue;  // a fixture without a quantized GGUF
    const Status s = quantize_model(c.in, out, c.type);
    ASSERT_FALSE(s.ok()) << c.in << " " << c.type;
    EXPECT_NE(s.message().find(c.message), std::string::npos) << s.message();
    EXPECT_FALSE(std::filesystem::exists(out)) << c.in;
    EXPECT_FALSE(std::filesystem::exists(out + ".partial")) << c.in;
  }
  const Status same = quantize_model(dir + "/model.gguf", dir + "/model.gguf", "Q8_0");
  EXPECT_NE(same.message().find("overwrite the input"), std::string::npos) << same.message();
}

// A projection of layer 0 each fixture has.
std::string first_projection(const std::string& fixture) {
  return fixture == "kimi-linear-tiny" ? "blk.0.attn_q.weight" : "blk.0.attn_qkv.weight";
}

// The fixture rewritten (model/gguf_writer.h) with one value of `tensor` set to `poison`.
std::string poisoned_copy(const std::string& in, const std::string& out, const std::string& tensor,
                          float poison) {
  GgufMetadata meta;
  WeightStore store;
  EXPECT_TRUE(load_gguf(in, &meta, &store).ok());
  std::vector<GgufTensorOut> tensors;
  for (const auto& [name, t] : store.tensors()) {
    const uint64_t bytes = stored_bytes(t, static_cast<uint64_t>(shape_numel(t.shape)));
    tensors.push_back({name, t.shape, 0, bytes, [&t, name, bytes, tensor, poison](uint8_t* dst) {
                         std::memcpy(dst, t.data, bytes);
                         if (name == tensor) std::memcpy(dst + 4 * 37, &poison, 4);
                         return Status::Ok();
                       }});
    EXPECT_EQ(t.dtype, DType::kF32) << name;
  }
  EXPECT_TRUE(write_gguf(out, meta, tensors).ok());
  return out;
}

// A NaN in the input is refused by tensor and element; a value so large a block's f16 scale
// overflows is refused by tensor and row; neither leaves a file.
TEST_P(QuantizeFile, NonFiniteAndHugeValuesAreRefused) {
  const std::string in = kFixtures + "/models/" + GetParam() + "/model.gguf";
  const std::string out = tmp("poisoned-out.gguf");
  const std::string tensor = first_projection(GetParam());
  const std::string nan_in = poisoned_copy(in, tmp("nan.gguf"), tensor, std::nanf(""));
  Status s = quantize_model(nan_in, out, "Q4_K_M");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'" + tensor + "'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("non-finite value at element 37"), std::string::npos) << s.message();
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(std::filesystem::exists(out + ".partial"));
  const std::string huge_in = poisoned_copy(in, tmp("huge.gguf"), tensor, 1e30f);
  s = quantize_model(huge_in, out, "Q8_0");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'" + tensor + "'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("row 0 holds values too large for Q8_0"), std::string::npos)
      << s.message();
  EXPECT_FALSE(std::filesystem::exists(out));
}

INSTANTIATE_TEST_SUITE_P(Models, QuantizeFile,
                         ::testing::Values("qwen35-tiny", "qwen3next-tiny", "kimi-linear-tiny"));

}  // namespace
}  // namespace hanpu::model
