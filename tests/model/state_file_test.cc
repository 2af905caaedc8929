// The sequence state file: a saved state loads back equal (ids, position, every layer's
// state), and each kind of damage is refused by the reader with an error naming it, `out`
// untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include "fixtures.h"
#include "model/model.h"
#include "model/model_weights.h"
#include "model/state_file.h"

namespace hanpu::model {
namespace {

// Offsets of the version-3 layout (state_file_format.h).
constexpr size_t kVersionAt = 8, kFingerprintAt = 12,
                 kPositionAt = 8 + 4 + 4 * kStateFingerprintSize, kIdsAt = kPositionAt + 8;

struct Saved {
  std::unique_ptr<Model> model;
  SequenceState state;
  std::string path;
  std::vector<char> bytes;
};

Saved save_fixture_state(const std::vector<int>& ids) {
  Saved s;
  EXPECT_TRUE(load_model(testing::fixture_dir("qwen35-tiny"), {}, &s.model).ok());
  s.state = s.model->new_state();
  std::vector<float> logits;
  EXPECT_TRUE(
      s.model->forward(ids.data(), static_cast<int64_t>(ids.size()), &s.state, {}, &logits).ok());
  // Each test is its own process under ctest, run side by side: a per-process folder.
  s.path = testing::temp_file("state_file", "saved.bin");
  EXPECT_TRUE(save_state(*s.model, s.state, s.path).ok());
  const std::string text = testing::read_text(s.path);
  s.bytes.assign(text.begin(), text.end());
  return s;
}

template <typename T>
std::vector<char> with(std::vector<char> bytes, size_t at, T value) {
  std::memcpy(bytes.data() + at, &value, sizeof(value));
  return bytes;
}

// Parses `bytes` into a sequence holding a marker position: an error must name `want` and
// leave the marker in place.
void expect_refused(const Model& m, std::vector<char> bytes, const std::string& want) {
  SavedSequence out;
  out.position = 12345;
  const Status st = parse_state_file(m.config(), std::move(bytes), "s.bin", &out);
  EXPECT_NE(st.message().find(want), std::string::npos) << st.message();
  EXPECT_EQ(out.position, 12345);
}

TEST(StateFile, ReadsBackWhatWasSaved) {
  const std::vector<int> ids = {5, 9, 17, 33, 2, 71, 383};
  const Saved s = save_fixture_state(ids);
  SequenceState back;
  const Status st = load_state(*s.model, s.path, &back);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(back.position, 7);
  EXPECT_EQ(back.tokens, ids);
  std::vector<int> only_ids;
  ASSERT_TRUE(read_state_tokens(s.model->config(), s.path, &only_ids).ok());
  EXPECT_EQ(only_ids, ids);
  const ModelConfig& c = s.model->config();
  for (int i = 0; i < c.layers; ++i) {
    if (c.layer_kinds[i] == LayerKind::kLinearAttention) {
      EXPECT_EQ(back.conv[i], s.state.conv[i]) << i;
      EXPECT_TRUE(std::equal(back.recurrent[i].begin(), back.recurrent[i].end(),
                             s.state.recurrent[i].begin()))
          << i;
    } else {
      const int64_t row = int64_t{c.kv_heads} * c.head_dim;
      std::vector<float> k0(7 * row), v0(k0.size()), k1(k0.size()), v1(k0.size());
      ASSERT_TRUE(s.state.kv[i]->read_f32(0, 7, k0.data(), v0.data()).ok());
      ASSERT_TRUE(back.kv[i]->read_f32(0, 7, k1.data(), v1.data()).ok());
      EXPECT_EQ(k0, k1) << i;
      EXPECT_EQ(v0, v1) << i;
    }
  }
}

TEST(StateFile, DamageIsRefusedByName) {
  const Saved s = save_fixture_state({5, 9, 17, 33});
  const Model& m = *s.model;
  expect_refused(m, with<uint32_t>(s.bytes, kVersionAt, 1),
                 "version 1, saved before the token ids were kept");
  expect_refused(m, with<uint32_t>(s.bytes, kVersionAt, 2),
                 "version 2, whose fingerprint lacks the architecture");
  // Another architecture of the same shapes (a Qwen3-Next state on a Qwen3.5 model) and
  // another layer pattern are refused by the fingerprint.
  expect_refused(m, with<uint32_t>(s.bytes, kFingerprintAt, 1),
                 "architecture (0 Qwen3.5, 1 Qwen3-Next) 1, this model has 0");
  expect_refused(m, with<uint32_t>(s.bytes, kFingerprintAt + 4, 12345), "layer pattern hash 12345");
  expect_refused(m, with<uint32_t>(s.bytes, kVersionAt, 7),
                 "state format version 7 (this build reads 3)");
  expect_refused(m, with<int64_t>(s.bytes, kPositionAt, -1), "position -1 at byte 64 does not fit");
  expect_refused(m, with<int64_t>(s.bytes, kPositionAt, int64_t{1} << 61), "does not fit the file");
  expect_refused(m, with<int64_t>(s.bytes, kPositionAt, 3),
                 "does not fit the file or the position 3");
  expect_refused(m, with<int32_t>(s.bytes, kIdsAt + 8, 384),
                 "token id 384 at position 2 is outside the vocabulary");
  expect_refused(m, with<int32_t>(s.bytes, kIdsAt, -3), "token id -3 at position 0");
  // Layer 0 is GDN: its conv state follows the ids.
  const size_t conv0 = kIdsAt + 4 * sizeof(int32_t);
  expect_refused(m, with<float>(s.bytes, conv0 + 8, std::numeric_limits<float>::quiet_NaN()),
                 "layer 0 conv state holds nan at byte " + std::to_string(conv0 + 8));
  expect_refused(m,
                 with<float>(s.bytes, s.bytes.size() - 4, std::numeric_limits<float>::infinity()),
                 "layer 3 values holds inf");
  std::vector<char> longer = s.bytes;
  longer.push_back(0);
  expect_refused(m, longer, "1 unexpected bytes after the state");
  const auto cut = [&](size_t n) {
    return std::vector<char>(s.bytes.begin(), s.bytes.begin() + n);
  };
  expect_refused(m, cut(3), "file ends at byte 3 inside the magic");
  expect_refused(m, cut(kIdsAt + 2), "position 4 at byte 64 does not fit the file (2 bytes left)");
  expect_refused(m, cut(conv0 + 2),
                 "file ends at byte " + std::to_string(conv0 + 2) + " inside conv state");
  expect_refused(m, cut(s.bytes.size() - 1), "KV length 4 does not fit the file");

  // Through the file: the error names it and the state given is left alone.
  const std::vector<char> bad = with<int32_t>(s.bytes, kIdsAt, 999);
  std::ofstream(s.path, std::ios::binary | std::ios::trunc)
      .write(bad.data(), static_cast<std::streamsize>(bad.size()));
  SequenceState kept = m.new_state();
  kept.position = 77;
  Status st = load_state(m, s.path, &kept);
  EXPECT_NE(st.message().find(s.path + ": token id 999 at position 0"), std::string::npos)
      << st.message();
  EXPECT_EQ(kept.position, 77);
  std::vector<int> ids = {1};
  st = read_state_tokens(m.config(), s.path, &ids);
  EXPECT_NE(st.message().find(s.path + ": token id 999 at position 0"), std::string::npos)
      << st.message();
  EXPECT_EQ(ids, std::vector<int>{1});
  // The ids alone: a position past the file and a file cut inside the header, by name.
  for (const auto& [bytes, want] :
       {std::pair{with<int64_t>(s.bytes, kPositionAt, int64_t{1} << 40),
                  std::string("position 1099511627776 at byte 64 does not fit the file")},
        std::pair{cut(20), std::string("file ends at byte 20 inside the model fingerprint")}}) {
    std::ofstream(s.path, std::ios::binary | std::ios::trunc)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    st = read_state_tokens(m.config(), s.path, &ids);
    EXPECT_NE(st.message().find(want), std::string::npos) << st.message();
  }
}

TEST(StateFile, ASaveWithoutItsIdsIsRefusedAndLeavesNoFile) {
  Saved s = save_fixture_state({5, 9});
  s.state.tokens.pop_back();
  const std::string path = ::testing::TempDir() + "/hanpu_state_no_ids.bin";
  std::remove(path.c_str());
  const Status st = save_state(*s.model, s.state, path);
  EXPECT_NE(st.message().find("holds 1 token ids for position 2"), std::string::npos)
      << st.message();
  EXPECT_FALSE(std::ifstream(path).good());
  EXPECT_FALSE(std::ifstream(path + ".tmp").good());
}

}  // namespace
}  // namespace hanpu::model
