// Every HANPU_* environment variable hanpu reads, in one table: the code asks here, never
// getenv itself, and `hanpu info` prints the table with the values this process sees.
#pragma once

#include <optional>
#include <span>

namespace hanpu {

enum class EnvVar { kThreads, kPin, kSpinUs, kBalance, kProjection, kAttnProducts, kRepack };

struct EnvVarInfo {
  EnvVar var;
  const char* name;     // "HANPU_THREADS"
  const char* meaning;  // one line for `hanpu info` and docs/cli.md
};

std::span<const EnvVarInfo> env_vars();
const EnvVarInfo& env_var_info(EnvVar var);

// The variable's text, or nullptr when it is not set.
const char* env_text(EnvVar var);
// Whether it is set to "0", the one value that turns a default-on behaviour off.
bool env_switched_off(EnvVar var);
// Its value as a whole number in [lo, hi]; nullopt when unset or not such a number (the
// caller keeps its default; `hanpu info` shows the value as ignored).
std::optional<long> env_integer(EnvVar var, long lo, long hi);

}  // namespace hanpu
