// Where the committed model fixtures live and how tests read their reference outputs.
#pragma once

#include <cmath>
#include <filesystem>
#include <gtest/gtest.h>
#include <memory>
#include <mutex>
#include <set>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include "model/model.h"

namespace hanpu::model::testing {

// sum (got - want)^2 / sum want^2, in double.
inline double nmse(const std::vector<float>& got, const std::vector<float>& want) {
  double e = 0, n = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    e += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    n += double(want[i]) * want[i];
  }
  return e / n;
}

// The folders temp_file made, removed when the test process ends so runs leave nothing
// behind in the system's temp folder.
class TempFolders {
 public:
  void add(const std::string& dir) {
    std::lock_guard<std::mutex> lock(mutex_);
    dirs_.insert(dir);
  }
  ~TempFolders() {
    std::error_code ignored;
    for (const std::string& d : dirs_) std::filesystem::remove_all(d, ignored);
  }

 private:
  std::mutex mutex_;
  std::set<std::string> dirs_;
};

inline TempFolders& temp_folders() {
  static TempFolders folders;
  return folders;
}

// `name` in a folder of this test process's own under the system's temp folder (`group`
// tells the tests' folders apart).
inline std::string temp_file(const std::string& group, const std::string& name) {
  const std::string dir = ::testing::TempDir() + group + "_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  temp_folders().add(dir);
  return dir + "/" + name;
}

// tests/fixtures/models/<name>
inline std::string fixture_dir(const std::string& name) {
  return std::string(HANPU_FIXTURES_DIR) + "/models/" + name;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The fixture checkpoint `name` loaded (null, with a test failure, if it does not load).
inline std::unique_ptr<Model> load_fixture(const std::string& name) {
  std::unique_ptr<Model> m;
  const Status st = load_model(fixture_dir(name), {}, &m);
  EXPECT_TRUE(st.ok()) << st.message();
  return m;
}

// reference.json of a fixture: prompts with ids, last_logits and greedy16 from transformers.
inline nlohmann::json reference(const std::string& name) {
  return nlohmann::json::parse(read_text(fixture_dir(name) + "/reference.json"));
}

// For each of fixture `name`'s prompts (reference.json): its text and the NMSE of model a's
// last-position logits against model b's, each run from a fresh sequence (a failed forward
// call fails the test and gives NaN).
inline std::vector<std::pair<std::string, double>> prompt_logit_nmse(const Model& a, const Model& b,
                                                                     const std::string& name) {
  std::vector<std::pair<std::string, double>> out;
  const nlohmann::json fixture = reference(name);  // alive for the loop, not just its header
  for (const auto& p : fixture["prompts"]) {
    const auto ids = p["ids"].get<std::vector<int>>();
    const auto n = static_cast<int64_t>(ids.size());
    SequenceState sa = a.new_state(), sb = b.new_state();
    std::vector<float> la, lb;
    const bool ok =
        a.forward(ids.data(), n, &sa, {}, &la).ok() && b.forward(ids.data(), n, &sb, {}, &lb).ok();
    EXPECT_TRUE(ok) << p["text"];
    out.emplace_back(p["text"].get<std::string>(), ok ? nmse(la, lb) : NAN);
  }
  return out;
}

// A scratch checkpoint folder (under the system's temp folder, emptied first) with copies of
// the qwen35 fixture's config.json, weights and tokenizer.json, plus `files` (name -> text;
// an empty text writes no file).
inline std::string scratch_checkpoint(const std::string& name,
                                      const std::map<std::string, std::string>& files) {
  namespace fs = std::filesystem;
  const fs::path d = fs::temp_directory_path() / name;
  fs::remove_all(d);
  fs::create_directories(d);
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json"}) {
    fs::copy_file(fixture_dir("qwen35-tiny") + "/" + f, d / f);
  }
  for (const auto& [file, text] : files) {
    if (!text.empty()) std::ofstream(d / file) << text;
  }
  return d.string();
}

}  // namespace hanpu::model::testing
