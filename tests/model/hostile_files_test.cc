// Hostile files around a checkpoint (issue classes 5 and 6): FIFOs, devices and directories
// where a loader expects a file are refused without blocking; a state file is read only up
// to the largest state the model can have; --save-state never follows or truncates a file it
// did not create, and leaves no temporary behind; a request whose KV cache no machine holds is
// refused before anything is reserved.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "fixtures.h"
#include "hanpu/engine.h"
#include "model/chat_template.h"
#include "model/generation_config.h"
#include "model/model_config.h"
#include "model/safetensors.h"
#include "model/state_file.h"
#include "model/tokenizer.h"

namespace hanpu::model {
namespace {

namespace fs = std::filesystem;

void expect_error(const Status& st, const std::string& want) {
  ASSERT_FALSE(st.ok()) << "wanted an error naming: " << want;
  EXPECT_NE(st.message().find(want), std::string::npos) << st.message();
}

// A copy of the fixture checkpoint whose `file` is a FIFO with no writer.
std::string checkpoint_with_fifo(const std::string& name, const std::string& file) {
  const std::string dir = testing::scratch_checkpoint(name, {});
  fs::remove(fs::path(dir) / file);
  EXPECT_EQ(mkfifo((fs::path(dir) / file).c_str(), 0600), 0);
  return dir;
}

TEST(HostileFiles, FifosWhereFilesBelongAreRefusedWithoutBlocking) {
  const std::string fifo_msg = "must be a regular file, this is a FIFO";
  std::string dir = checkpoint_with_fifo("hanpu_fifo_config", "config.json");
  ModelConfig c;
  expect_error(load_model_config(dir + "/config.json", &c), "config.json: config.json " + fifo_msg);
  std::unique_ptr<Engine> e;
  expect_error(Engine::load(dir, &e), fifo_msg);
  dir = checkpoint_with_fifo("hanpu_fifo_tokenizer", "tokenizer.json");
  Tokenizer t;
  expect_error(Tokenizer::load(dir + "/tokenizer.json", &t), fifo_msg);
  expect_error(Engine::load(dir, &e), fifo_msg);
  for (const char* file : {"tokenizer_config.json", "chat_template.jinja"}) {
    dir = checkpoint_with_fifo(std::string("hanpu_fifo_") + file, file);
    std::optional<ChatTemplate> tmpl;
    expect_error(load_hf_chat_template(dir, &tmpl), fifo_msg);
  }
  dir = checkpoint_with_fifo("hanpu_fifo_generation", "generation_config.json");
  std::optional<GenerationConfig> g;
  expect_error(load_generation_config(dir, 100, &g), fifo_msg);
  dir = checkpoint_with_fifo("hanpu_fifo_shard", "model.safetensors");
  WeightStore store;
  expect_error(load_safetensors(dir, &store), "the weights file " + fifo_msg);
}

TEST(HostileFiles, DevicesAndDirectoriesAreRefusedByKind) {
  // A directory as the shard index (it exists, so the folder is read as sharded).
  const std::string dir = testing::scratch_checkpoint("hanpu_dir_index", {});
  fs::create_directories(fs::path(dir) / "model.safetensors.index.json");
  WeightStore store;
  expect_error(load_safetensors(dir, &store),
               "the shard index must be a regular file, this is a directory");
  std::unique_ptr<Engine> e;
  ASSERT_TRUE(Engine::load(testing::fixture_dir("qwen35-tiny"), &e).ok());
  expect_error(e->set_chat_template_file("/dev/zero"), "this is a character device");
  const auto m = testing::load_fixture("qwen35-tiny");
  ASSERT_NE(m, nullptr);
  SequenceState s;
  expect_error(load_state(*m, "/dev/zero", &s),
               "/dev/zero: the state file must be a regular file, this is a character device");
  expect_error(load_state(*m, dir, &s), "this is a directory");
  std::vector<int> ids;
  expect_error(read_state_tokens(m->config(), "/dev/zero", &ids), "this is a character device");
  const std::string fifo = (fs::temp_directory_path() / "hanpu_state_fifo").string();
  fs::remove(fifo);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  expect_error(load_state(*m, fifo, &s), "this is a FIFO");
  expect_error(read_state_tokens(m->config(), fifo, &ids), "this is a FIFO");
}

// A state file bigger than any state of the model (a sparse file: no bytes written) is
// refused from its size, before a byte is read.
TEST(HostileFiles, AStateFileIsReadOnlyUpToTheModelsLargestState) {
  const auto m = testing::load_fixture("qwen35-tiny");
  ASSERT_NE(m, nullptr);
  const std::string path = (fs::temp_directory_path() / "hanpu_state_huge").string();
  const int64_t limit = state_file_bytes(m->config(), kMaxStatePositions);
  std::ofstream(path, std::ios::trunc).flush();
  fs::resize_file(path, static_cast<uintmax_t>(limit + 1));
  SequenceState s;
  expect_error(load_state(*m, path, &s),
               std::to_string(limit + 1) + " bytes, more than the " + std::to_string(limit));
  std::vector<int> ids;
  expect_error(read_state_tokens(m->config(), path, &ids), "more than the");
  fs::remove(path);
}

// Files in `dir` other than `keep`: what a save left behind.
std::vector<std::string> other_files(const fs::path& dir, const std::vector<std::string>& keep) {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (std::find(keep.begin(), keep.end(), name) == keep.end()) out.push_back(name);
  }
  return out;
}

TEST(HostileFiles, SaveStateNeverFollowsOrTruncatesAnotherFile) {
  const auto m = testing::load_fixture("qwen35-tiny");
  ASSERT_NE(m, nullptr);
  SequenceState s = m->new_state();
  const std::vector<int> ids = {5, 9, 17};
  std::vector<float> logits;
  ASSERT_TRUE(m->forward(ids.data(), 3, &s, {}, &logits).ok());
  const fs::path dir = fs::temp_directory_path() / "hanpu_save_state";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "s.bin").string();
  // An attacker's symlink where the old code wrote its temporary, and a user's own file of
  // that name: neither is followed, truncated or removed.
  std::ofstream(dir / "victim") << "precious";
  fs::create_symlink(dir / "victim", path + ".tmp");
  ASSERT_TRUE(save_state(*m, s, path).ok());
  EXPECT_EQ(testing::read_text((dir / "victim").string()), "precious");
  EXPECT_TRUE(fs::is_symlink(path + ".tmp"));
  EXPECT_EQ(other_files(dir, {"s.bin", "s.bin.tmp", "victim"}), std::vector<std::string>{});
  // The saved file reads back and is private to its owner.
  SequenceState back;
  ASSERT_TRUE(load_state(*m, path, &back).ok());
  EXPECT_EQ(back.tokens, ids);
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  // A save over an existing state replaces it whole; a save into a missing folder fails
  // naming it, leaving nothing.
  ASSERT_TRUE(save_state(*m, s, path).ok());
  EXPECT_EQ(other_files(dir, {"s.bin", "s.bin.tmp", "victim"}), std::vector<std::string>{});
  expect_error(save_state(*m, s, (dir / "missing" / "s.bin").string()),
               "cannot create a temporary file in");
  EXPECT_FALSE(fs::exists(dir / "missing"));
  // A symlink planted at the target itself is replaced, not written through.
  fs::remove(path);
  fs::create_symlink(dir / "victim", path);
  ASSERT_TRUE(save_state(*m, s, path).ok());
  EXPECT_EQ(testing::read_text((dir / "victim").string()), "precious");
  EXPECT_FALSE(fs::is_symlink(path));
}

}  // namespace
}  // namespace hanpu::model

namespace hanpu {
namespace {

// A max_tokens no machine holds the KV cache of is refused before anything is reserved, and
// the engine still runs a sane request after it.
TEST(HostileRequests, ASequenceLargerThanMemoryIsRefusedBeforeAllocating) {
  std::unique_ptr<Engine> e;
  ASSERT_TRUE(Engine::synthetic("qwen3-next-tiny", 1, &e).ok());
  GenerateOptions o;
  o.max_tokens = std::numeric_limits<int>::max();
  const Status st = e->generate({1, 2, 3}, o, nullptr, nullptr, nullptr);
  EXPECT_NE(
      st.message().find("a sequence of 2147483650 tokens (3 prompt + 2147483647 max_tokens) needs"),
      std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("GiB of KV cache, more than this machine's"), std::string::npos)
      << st.message();
  o.max_tokens = 2;
  EXPECT_TRUE(e->generate({1, 2, 3}, o, nullptr, nullptr, nullptr).ok());
}

}  // namespace
}  // namespace hanpu
