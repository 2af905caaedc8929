// "Did you mean": the closest of a set of names to what was typed, for an unknown subcommand or
// a mistyped flag (CLI11 names what it did not expect but suggests nothing).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace hanpu::cli {

// The name of `names` nearest to `typed` by edit distance, or "" when none is within a third
// of its length (at least 2 edits).
std::string closest_name(const std::string& typed, const std::vector<std::string>& names);

// Before parsing: an argv[1] that is no subcommand of `app` is named, with the closest one and
// the list. Returns the exit code to leave with (2), or 0 to go on.
int check_subcommand(const CLI::App& app, int argc, char** argv);

// After CLI11 refused the command line with `e`: the flags of the subcommand that was parsed
// which are nearest to each unknown one, as a hint on stderr.
void suggest_flags(const CLI::App& app, int argc, char** argv);

}  // namespace hanpu::cli
