// Loading a model for a command (see cli_engine.h).
#include "cli_engine.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <regex>

#include "base/file_read.h"
#include "cli_output.h"
#include "base/input_limits.h"
#include "cpu/nn/linear.h"
#include "hanpu/machine.h"

namespace hanpu::cli {

// "Qwen/Qwen3.5-0.8B": one slash between two names of letters, digits, '.', '-' and '_', as
// Hugging Face ids are written (a local path that exists is never taken for one).
bool looks_like_hub_id(const std::string& s) {
  static const std::regex id("[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*");
  return std::regex_match(s, id);
}

int load_cli_engine(const std::string& model, const std::string& synthetic, uint64_t seed,
                    const std::string& weights, std::unique_ptr<Engine>* out) {
  std::unique_ptr<Engine>& engine = *out;
  Status st;
  const bool tty = isatty(fileno(stderr)) != 0 && verbosity() != Verbosity::kQuiet;
  const auto on_load = [&](int done, int total) {
    if (tty)
      std::fprintf(stderr, "\rconverting weights: layer %d / %d%s", done, total,
                   done == total ? "\n" : "");
  };
  if (!synthetic.empty()) {
    note("building {} with random weights...\n", synthetic);
    st = Engine::synthetic(synthetic, seed, &engine, weights, on_load);
  } else {
    const std::string dir = model.empty() ? default_model_dir() : model;
    if (dir.empty()) {
      std::fprintf(stderr,
                   "error: no --model given and the shipped model "
                   "(tests/fixtures/models/qwen35-tiny) is not found\n");
      return 2;
    }
    if (model.empty())
      note("no --model: running the tiny random-weight model shipped with hanpu ({})\n", dir);
    std::error_code ec;
    if (!std::filesystem::exists(dir, ec) && looks_like_hub_id(dir)) {
      const std::string name = dir.substr(dir.find('/') + 1);
      std::fprintf(stderr,
                   "error: %s: no such file or folder. It looks like a Hugging Face model id: "
                   "hanpu reads local "
                   "checkpoints, so download it first, e.g.\n  huggingface-cli download %s "
                   "--local-dir %s\nthen run "
                   "with --model %s (a folder) or a .gguf file\n",
                   dir.c_str(), dir.c_str(), name.c_str(), name.c_str());
      return 2;
    }
    st = Engine::load(dir, &engine, weights, on_load);
  }
  if (!st.ok()) {
    std::fprintf(stderr, "error: %s\n", st.message().c_str());
    return 2;
  }
  const EngineInfo info = engine->info();
  // The bf16 unit a prefill's bf16 projections run on, if the CPU has one.
  const char* bf16_unit = cpu::linear_uses_amx()   ? "the AMX bf16 tiles"
                          : cpu::linear_uses_dot() ? "the bf16 dot instruction (AVX512-BF16)"
                                                   : nullptr;
  const std::string unit_note =
      info.weight_dtype == "bf16" && bf16_unit ? std::string("; prefill on ") + bf16_unit : "";
  const bool kda = info.architecture == "kimi-linear" || info.architecture == "ling";
  const std::string copies =
      info.decode_copy_bytes > 0
          ? fmt::format(", and {:.2f} GB of rows repacked for decode", info.decode_copy_bytes / 1e9)
          : "";
  note(
      "model: {}, {}, {} layers ({} {} + {} {}), hidden {}, {:.1f} M parameters, "
      "projections in {} "
      "({:.2f} GB in memory{}{})\n",
      info.name, info.architecture, info.layers, info.la_layers, kda ? "KDA" : "GDN",
      info.attn_layers, kda ? "MLA" : "attention", info.hidden, info.parameters / 1e6,
      info.weight_dtype, info.weight_bytes / 1e9, copies, unit_note);
  if (info.weight_dtype == "f16" &&
      bf16_unit) {  // llama.cpp's default GGUF type: say what is left on the table
    if (verbosity() != Verbosity::kQuiet)
      std::fprintf(stderr,
                   "note: f16 projections run on fp32 FMAs; --weights bf16 rounds them to bf16 (3 "
                   "fewer mantissa "
                   "bits) so a prefill runs on %s, about 2x faster (docs/performance.md)\n",
                   bf16_unit);
  }
  return 0;
}

Status read_text_file(const std::string& flag, const std::string& path, std::string* out) {
  if (path == "-") {  // standard input, bounded as a file is
    std::string text;
    char buf[1 << 16];
    while (std::cin.read(buf, sizeof(buf)) || std::cin.gcount() > 0) {
      text.append(buf, static_cast<size_t>(std::cin.gcount()));
      if (static_cast<int64_t>(text.size()) > kMaxTextFileBytes) {
        return Status::Error(fmt::format("{} -: standard input is over the limit of {} bytes", flag,
                                         kMaxTextFileBytes));
      }
    }
    *out = std::move(text);
    return Status::Ok();
  }
  return read_regular_file(path, kMaxTextFileBytes, flag.c_str(), out);
}

}  // namespace hanpu::cli
