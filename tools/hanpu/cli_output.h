// Where the CLI's words go: stdout carries only a command's result (generated text, a JSON
// object, a table), stderr everything about it. How much of the latter is set once per run by
// -v/--verbose and --quiet; warnings and errors are printed whatever it is.
#pragma once

#include <cstdio>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace hanpu::cli {

enum class Verbosity { kQuiet, kNormal, kVerbose };

void set_verbosity(Verbosity v);
Verbosity verbosity();

// Adds -v/--verbose and --quiet to a command; `flags` holds what was given until the command
// calls apply_verbosity (CLI11 binds flags to variables, not to a function at parse time).
struct VerbosityFlags {
  bool verbose = false, quiet = false;
};
void add_verbosity_flags(CLI::App& app, VerbosityFlags& flags);
void apply_verbosity(const VerbosityFlags& flags);

// A line of what the command does (the model, the prompt, timings): stderr unless --quiet.
template <typename... Args>
void note(fmt::format_string<Args...> format, Args&&... args) {
  if (verbosity() >= Verbosity::kNormal) fmt::print(stderr, format, std::forward<Args>(args)...);
}
// Detail for -v: stderr only when verbose.
template <typename... Args>
void detail(fmt::format_string<Args...> format, Args&&... args) {
  if (verbosity() >= Verbosity::kVerbose) fmt::print(stderr, format, std::forward<Args>(args)...);
}

}  // namespace hanpu::cli
