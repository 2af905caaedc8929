// Whether the AMX bf16 tiles may be used (see amx.h). Compiled without the AMX flags: this
// runs on every machine, the kernels only where it says yes.
#include "simd/amx.h"

#include <cstdlib>
#include <cstring>

#include <hwy/detect_targets.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace hanpu::simd {

namespace {

// Not in a build that leaves Highway's AVX-512 target out (HWY_DISABLED_TARGETS, as for an
// AVX2-only binary): such a build runs no AVX-512-era instruction anywhere.
bool detect() {
#if defined(__x86_64__) && defined(HANPU_HAVE_AMX_KERNELS) && (HWY_TARGETS & HWY_AVX3)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  const bool amx_bf16 = (edx >> 22) & 1, amx_tile = (edx >> 24) & 1;
  if (!amx_bf16 || !amx_tile) return false;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !((ecx >> 27) & 1)) return false;  // OSXSAVE
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  if (((xcr0_lo >> 17) & 3) != 3) return false;  // XTILECFG and XTILEDATA enabled by the OS
  // Linux hands out the 8 KB tile state per process on request (kernel 5.16+).
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

}  // namespace

bool amx_bf16_usable() {
  static const bool usable = detect();
  return usable;
}

#if !defined(HANPU_HAVE_AMX_KERNELS)
// Built without the kernel: amx_bf16_usable() is false, so nothing reaches this.
void amx_gemm_bf16(const uint16_t*, int, const uint16_t*, int, int, int, float*, int64_t) {
  std::abort();
}
double amx_bf16_loop(int64_t) { std::abort(); }
#endif

}  // namespace hanpu::simd
