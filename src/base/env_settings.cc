// The HANPU_* table (see env_settings.h).
#include "base/env_settings.h"

#include <cstdlib>
#include <cstring>

namespace hanpu {

namespace {

constexpr EnvVarInfo kVars[] = {
    {EnvVar::kThreads, "HANPU_THREADS",
     "worker threads when a call asks for 0 (default: every CPU this process may use; 1-1024)"},
    {EnvVar::kPin, "HANPU_PIN", "0: do not pin the pool's threads to CPUs"},
    {EnvVar::kSpinUs, "HANPU_SPIN_US",
     "microseconds a pool thread spins for the next job before it sleeps (default 500; 0-1000000)"},
    {EnvVar::kBalance, "HANPU_BALANCE",
     "0: deal LA heads equally instead of by each core's measured speed"},
    {EnvVar::kProjection, "HANPU_PROJECTION",
     "the projections' fastest kernel where a run says auto: amx, dot, pairs, blas or fma"},
    {EnvVar::kAttnProducts, "HANPU_ATTN_PRODUCTS",
     "f32: the attention prefill's products in fp32 where a run says auto (default: bf16 on a "
     "bf16 KV cache where the CPU has the dot instruction)"},
    {EnvVar::kRepack, "HANPU_REPACK",
     "0: decode Q4_K, Q6_K and Q5_0 projections from the checkpoint's blocks, not from a copy "
     "repacked 16 rows to a group (the copy costs about those tensors' size in memory)"},
};

}  // namespace

std::span<const EnvVarInfo> env_vars() { return kVars; }

const EnvVarInfo& env_var_info(EnvVar var) {
  for (const EnvVarInfo& v : kVars) {
    if (v.var == var) return v;
  }
  return kVars[0];  // every EnvVar is in the table
}

const char* env_text(EnvVar var) { return std::getenv(env_var_info(var).name); }

bool env_switched_off(EnvVar var) {
  const char* text = env_text(var);
  return text != nullptr && std::strcmp(text, "0") == 0;
}

std::optional<long> env_integer(EnvVar var, long lo, long hi) {
  const char* text = env_text(var);
  // Digits only (strtol alone would take leading blanks and a '+').
  if (text == nullptr || !((*text >= '0' && *text <= '9') || *text == '-')) return std::nullopt;
  char* end = nullptr;
  const long n = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || n < lo || n > hi) return std::nullopt;
  return n;
}

}  // namespace hanpu
