// The floating-point mode every kernel worker runs in: denormal results flushed to zero and
// denormal inputs read as zero. Linear attention's decays make them common — a chunk's
// exp(Gam_i - Gam_j) and a strongly decayed state fall below 1e-38 — and each one costs a
// microcode assist: with strong gates the chunked GDN kernel ran several times slower
// without this (its share of the synthetic 0.8B model's prefill halved with it,
// docs/performance.md "End to end"). Values that small are zero for every purpose here
// (outputs are compared by NMSE against float64).
#pragma once

namespace hanpu::simd {

// Sets flush-to-zero and denormals-are-zero for the calling thread (x86 MXCSR, ARM FPCR.FZ).
void flush_denormals_on_this_thread();

// The same, once per thread: call first in every worker job (a thread-local check after that).
inline void ensure_flush_denormals() {
  thread_local bool done = false;
  if (!done) {
    flush_denormals_on_this_thread();
    done = true;
  }
}

}  // namespace hanpu::simd
