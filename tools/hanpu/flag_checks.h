// The ranges and value sets every numeric or named flag is checked against as the command
// line is parsed, so a bad flag is refused before any model loads, naming the flag and the
// range (docs/limits.md lists them).
#pragma once

#include <CLI/CLI.hpp>

namespace hanpu::cli {

// Worker threads: 0 (every core) up to this; more than a machine has only adds contention,
// and each asks the system for a stack.
inline constexpr int kMaxThreads = 1024;
// Token counts of one flag (prompt tokens, --seq, --max-tokens, a context, a prefill chunk):
// far past any context hanpu's models are trained for, well inside every int64 product.
inline constexpr int kMaxTokensFlag = 1 << 22;
// --top-k: at most a vocabulary's size (model_config.h's kMaxVocab).
inline constexpr int kMaxVocabFlag = 1 << 24;

// CLI11 checks: a thread count; a token count in [lo, kMaxTokensFlag]; a head count or a head
// dim of a benchmark or simulator shape (1-4096, as model_config.h bounds models); timed runs.
CLI::Validator thread_range();
CLI::Validator token_range(int lo);
CLI::Validator shape_range(int lo = 1);
CLI::Validator repeat_range();
// An unsigned integer flag (--seed): "-1" would otherwise wrap to 2^64 - 1.
CLI::Validator non_negative();
// An existing file, or "-" for standard input (llama.cpp's -f -).
CLI::Validator file_or_stdin();
// The names la_strategies() and attn_placements() list, and the dtypes of --kv-cache and
// --weights (auto, f32, bf16, f16), and --attn-products (auto, f32, bf16).
CLI::Validator la_strategy_names();
CLI::Validator placement_names();
CLI::Validator storage_names();
// --weights of run and perplexity: the storage dtypes, or q8_0 / q4_0 (quantized at load).
CLI::Validator weight_names();
CLI::Validator projection_names();  // projection_kernel_summaries (hanpu/machine.h)
CLI::Validator attn_product_names();

}  // namespace hanpu::cli
