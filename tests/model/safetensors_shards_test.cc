// Checkpoints as they ship: the fixture re-written as two shards with an index loads to the
// same logits bit for bit; re-written in bf16 it loads with bf16 projections (auto) and
// close logits; a wrong or incomplete index is refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cpu/nn/linear.h"
#include "hanpu/dtype.h"
#include "model/model.h"
#include "model/safetensors.h"

namespace hanpu::model {
namespace {

namespace fs = std::filesystem;
const std::string kFixture = std::string(HANPU_FIXTURES_DIR) + "/models/qwen35-tiny";

struct OutTensor {
  std::string name;
  DType dtype;
  Shape shape;
  std::vector<uint8_t> bytes;
};

void write_safetensors(const fs::path& path, const std::vector<OutTensor>& ts) {
  nlohmann::json h = nlohmann::json::object();
  uint64_t off = 0;
  for (const auto& t : ts) {
    const char* name = t.dtype == DType::kF32 ? "F32" : t.dtype == DType::kF16 ? "F16" : "BF16";
    h[t.name] = {
        {"dtype", name}, {"shape", t.shape}, {"data_offsets", {off, off + t.bytes.size()}}};
    off += t.bytes.size();
  }
  const std::string hs = h.dump();
  std::ofstream out(path, std::ios::binary);
  const uint64_t n = hs.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << hs;
  for (const auto& t : ts)
    out.write(reinterpret_cast<const char*>(t.bytes.data()),
              static_cast<std::streamsize>(t.bytes.size()));
}

// The fixture's tensors, as fp32 or converted to `dtype`.
std::vector<OutTensor> fixture_tensors(DType dtype) {
  WeightStore store;
  EXPECT_TRUE(load_safetensors(kFixture, &store).ok());
  std::vector<OutTensor> out;
  for (const auto& [name, t] : store.tensors()) {
    std::vector<float> f(static_cast<size_t>(shape_numel(t.shape)));
    stored_to_f32(t, f.data());
    OutTensor o{name, dtype, t.shape, std::vector<uint8_t>(f.size() * dtype_size(dtype))};
    for (size_t i = 0; i < f.size(); ++i) store_from_f32(o.bytes.data(), dtype, i, f[i]);
    out.push_back(std::move(o));
  }
  return out;
}

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::path(::testing::TempDir()) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  fs::copy_file(fs::path(kFixture) / "config.json", d / "config.json");
  return d;
}

std::vector<float> last_logits(const std::string& dir, const LoadOptions& lo = {}) {
  std::unique_ptr<Model> m;
  const Status st = load_model(dir, lo, &m);
  EXPECT_TRUE(st.ok()) << st.message();
  if (!m) return {};
  SequenceState s = m->new_state();
  std::vector<float> logits;
  const int ids[] = {5, 77, 300, 12, 9, 140};
  EXPECT_TRUE(m->forward(ids, 6, &s, {}, &logits).ok());
  return logits;
}

void write_sharded(const fs::path& d, const std::vector<OutTensor>& ts, bool break_index) {
  std::vector<OutTensor> a, b;
  nlohmann::json map = nlohmann::json::object();
  for (size_t i = 0; i < ts.size(); ++i) {
    (i % 2 ? b : a).push_back(ts[i]);
    map[ts[i].name] =
        i % 2 ? "model-00002-of-00002.safetensors" : "model-00001-of-00002.safetensors";
  }
  if (break_index) map[ts[0].name] = "model-00002-of-00002.safetensors";  // it is in shard 1
  write_safetensors(d / "model-00001-of-00002.safetensors", a);
  write_safetensors(d / "model-00002-of-00002.safetensors", b);
  std::ofstream(d / "model.safetensors.index.json")
      << nlohmann::json{{"metadata", {}}, {"weight_map", map}}.dump();
}

TEST(SafetensorsShards, ShardedCheckpointGivesTheSameLogits) {
  const fs::path d = fresh_dir("hanpu_sharded");
  write_sharded(d, fixture_tensors(DType::kF32), false);
  const auto want = last_logits(kFixture), got = last_logits(d.string());
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(want, got);
}

TEST(SafetensorsShards, WrongIndexAndMissingShardAreNamed) {
  const fs::path d = fresh_dir("hanpu_bad_index");
  const auto ts = fixture_tensors(DType::kF32);
  write_sharded(d, ts, true);
  std::unique_ptr<Model> m;
  Status st = load_model(d.string(), {}, &m);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("is listed in model-00002-of-00002.safetensors but not found there"),
            std::string::npos)
      << st.message();
  write_sharded(d, ts, false);
  fs::remove(d / "model-00002-of-00002.safetensors");
  st = load_model(d.string(), {}, &m);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("model-00002-of-00002.safetensors: cannot open"), std::string::npos)
      << st.message();
}

TEST(SafetensorsShards, Bf16CheckpointLoadsAsBf16) {
  const fs::path d = fresh_dir("hanpu_bf16");
  write_safetensors(d / "model.safetensors", fixture_tensors(DType::kBF16));
  std::unique_ptr<Model> m;
  ASSERT_TRUE(load_model(d.string(), {}, &m).ok());
  EXPECT_EQ(m->weights().lm_head.dtype, DType::kBF16);  // auto: the checkpoint's dtype
  // The tied head holds the bf16 table exactly, so the fp32 copy is gone and embedding rows
  // come from the head; f16 projections would round it, so that load keeps the table. Both
  // give the checkpoint's values bit for bit.
  EXPECT_TRUE(m->weights().embed.empty());
  std::unique_ptr<Model> m16;
  ASSERT_TRUE(load_model(d.string(), LoadOptions{DType::kF16, nullptr}, &m16).ok());
  ASSERT_FALSE(m16->weights().embed.empty());
  const int hidden = m->config().hidden;
  std::vector<float> row(hidden), row16(hidden);
  for (const int token : {0, 1, m->config().vocab / 2, m->config().vocab - 1}) {
    m->weights().embedding_row(token, row.data());
    m16->weights().embedding_row(token, row16.data());
    EXPECT_EQ(row, row16) << "token " << token;
  }
  EXPECT_EQ(m->weights().parameters(true), m16->weights().parameters(true));
  const auto want = last_logits(kFixture), got = last_logits(d.string());
  ASSERT_EQ(want.size(), got.size());
  float diff = 0;
  for (size_t i = 0; i < want.size(); ++i) diff = std::max(diff, std::abs(want[i] - got[i]));
  EXPECT_GT(diff, 0.0f);
  EXPECT_LE(diff, 5e-2f);  // every weight rounded to 8 mantissa bits
  // Forcing fp32 projections on the bf16 file changes only the projections' storage: the
  // same bf16 values, widened at load instead of per block. On a machine with AMX tiles the
  // bf16 prefill also rounds the activations to bf16 (cpu/nn/linear.h): then the logits
  // move by about as much as the weights' own rounding moved them.
  const auto f32 = last_logits(d.string(), LoadOptions{DType::kF32, nullptr});
  float d2 = 0;
  for (size_t i = 0; i < got.size(); ++i) d2 = std::max(d2, std::abs(f32[i] - got[i]));
  EXPECT_LE(d2, cpu::linear_rounds_x_to_bf16() ? 5e-2f : 1e-4f);
}

TEST(SafetensorsShards, NonFiniteTiedEmbeddingIsNamed) {
  // The tied head is packed straight from the stored rows (load_tied_embedding), in parallel:
  // a NaN in the table still fails the load, naming the tensor and the first bad element.
  const fs::path d = fresh_dir("hanpu_bf16_nan");
  auto ts = fixture_tensors(DType::kBF16);
  for (auto& t : ts) {
    if (t.name != "model.embed_tokens.weight") continue;
    const int64_t hidden = t.shape[1];
    store_from_f32(t.bytes.data(), DType::kBF16, static_cast<size_t>(7 * hidden + 3), NAN);
    store_from_f32(t.bytes.data(), DType::kBF16, static_cast<size_t>(300 * hidden + 1), INFINITY);
  }
  write_safetensors(d / "model.safetensors", ts);
  std::unique_ptr<Model> m;
  for (const DType weights :
       {DType::kBF16, DType::kF16}) {  // from the stored rows / via the fp32 table
    const Status st = load_model(d.string(), LoadOptions{weights, nullptr}, &m);
    ASSERT_FALSE(st.ok());
    const std::string want = fmt::format(
        "tensor 'model.embed_tokens.weight' in {} holds a non-finite value at element {}",
        (d / "model.safetensors").string(), 7 * 64 + 3);
    EXPECT_NE(st.message().find(want), std::string::npos) << st.message();
  }
}

}  // namespace
}  // namespace hanpu::model
