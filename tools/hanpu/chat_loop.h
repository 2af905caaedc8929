// `hanpu run --interactive`: a conversation on the terminal (or lines on stdin), each line a
// user turn, each reply streamed as it is generated, the sequence kept in memory between turns.
#pragma once

#include "hanpu/engine.h"
#include "run_cmd.h"

namespace hanpu::cli {

// Runs the conversation until end of input or a line "/exit" (the engine has a tokenizer:
// run_model checks), then saves it to --save-state, if given. `g` holds the resolved
// generation options (sampling from the checkpoint where no flag said otherwise). Returns the
// process exit code.
int run_chat_loop(Engine& engine, const RunOptions& o, GenerateOptions g);

}  // namespace hanpu::cli
