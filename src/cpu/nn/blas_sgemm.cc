// OpenBLAS's sgemm behind hanpu's pool (see blas_sgemm.h).
#include "cpu/nn/blas_sgemm.h"

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

#ifdef HANPU_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace hanpu::cpu {

namespace {

struct Decision {
  bool use = false;
  std::string why;
};

Decision decide() {
#ifdef HANPU_HAVE_OPENBLAS
  // OpenBLAS's x86 cores with AVX2 (or AVX-512) sgemm kernels, as its DYNAMIC_ARCH names them.
  constexpr std::array<std::string_view, 5> kWide = {"Haswell", "Zen", "SkylakeX", "Cooperlake",
                                                     "SapphireRapids"};
  const std::string core = openblas_get_corename();
  for (std::string_view w : kWide) {
    if (core == w) {
      openblas_set_num_threads(1);  // hanpu's workers are the threads
      return {true, fmt::format("OpenBLAS sgemm ({} kernels)", core)};
    }
  }
  return {false, fmt::format("hanpu's micro-kernel (OpenBLAS detected {}: no AVX2 kernels)", core)};
#else
  return {false, "hanpu's micro-kernel (built without OpenBLAS)"};
#endif
}

const Decision& decision() {
  static const Decision d = decide();
  return d;
}

}  // namespace

bool blas_sgemm_in_use() { return decision().use; }

std::string blas_sgemm_describe() { return decision().why; }

void blas_sgemm(int M, int N, int K, const float* a, int64_t lda, const float* b, int64_t ldb,
                float* c, int64_t ldc, float beta) {
#ifdef HANPU_HAVE_OPENBLAS
  if (M <= 0 || N <= 0) return;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, a, static_cast<int>(lda), b,
              static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
#else
  std::abort();  // blas_sgemm_in_use() is false: nothing calls this
#endif
}

void blas_set_own_threads(int threads) {
  decision();  // decided first, so its own setting of one thread does not come after this
#ifdef HANPU_HAVE_OPENBLAS
  openblas_set_num_threads(threads);
#endif
}

}  // namespace hanpu::cpu
