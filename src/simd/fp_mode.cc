// Flush-to-zero / denormals-are-zero per thread (see fp_mode.h).
#include "simd/fp_mode.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace hanpu::simd {

void flush_denormals_on_this_thread() {
#if defined(__x86_64__) || defined(__i386__)
  constexpr unsigned kFtz = 1u << 15, kDaz = 1u << 6;  // MXCSR bits
  _mm_setcsr(_mm_getcsr() | kFtz | kDaz);
#elif defined(__aarch64__)
  unsigned long fpcr = 0;
  __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
  fpcr |= 1ul << 24;  // FZ
  __asm__ volatile("msr fpcr, %0" : : "r"(fpcr));
#endif
}

}  // namespace hanpu::simd
