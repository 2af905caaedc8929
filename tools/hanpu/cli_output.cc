// The CLI's verbosity (see cli_output.h).
#include "cli_output.h"

namespace hanpu::cli {

namespace {
Verbosity current = Verbosity::kNormal;  // one per process: set before a command runs
}  // namespace

void set_verbosity(Verbosity v) { current = v; }
Verbosity verbosity() { return current; }

void add_verbosity_flags(CLI::App& app, VerbosityFlags& flags) {
  auto* verbose =
      app.add_flag("-v,--verbose", flags.verbose,
                   "more on stderr: the prompt as the model reads it, stop tokens, time splits");
  app.add_flag("-q,--quiet", flags.quiet, "nothing on stderr but warnings and errors")
      ->excludes(verbose);
}

void apply_verbosity(const VerbosityFlags& flags) {
  set_verbosity(flags.quiet     ? Verbosity::kQuiet
                : flags.verbose ? Verbosity::kVerbose
                                : Verbosity::kNormal);
}

}  // namespace hanpu::cli
