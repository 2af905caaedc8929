// Where the committed model fixtures live and how tests read their reference outputs.
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace hanpu::model::testing {

// tests/fixtures/models/<name>
inline std::string fixture_dir(const std::string& name) { return std::string(HANPU_FIXTURES_DIR) + "/models/" + name; }

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// reference.json of a fixture: prompts with ids, last_logits and greedy16 from transformers.
inline nlohmann::json reference(const std::string& name) {
  return nlohmann::json::parse(read_text(fixture_dir(name) + "/reference.json"));
}

}  // namespace hanpu::model::testing
