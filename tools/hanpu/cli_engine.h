// What the commands that run a checkpoint share: loading it (or the model shipped with the
// repository) with progress on a terminal and the model line, and reading a text file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "hanpu/engine.h"
#include "hanpu/status.h"

namespace hanpu::cli {

// Loads `model` (a checkpoint folder or .gguf; empty: the shipped tiny model), or builds the
// synthetic model `synthetic` when that is non-empty (seeded with `seed`), holding the
// projections as `weights`. Prints what it does and the model line to stderr; an error is
// printed there too. Returns 0, or the exit code to leave with (2).
int load_cli_engine(const std::string& model, const std::string& synthetic, uint64_t seed,
                    const std::string& weights, std::unique_ptr<Engine>* out);

// The whole file as text, or an error naming `flag` and the path.
Status read_text_file(const std::string& flag, const std::string& path,
                      std::string* out);  // "-": stdin

}  // namespace hanpu::cli
