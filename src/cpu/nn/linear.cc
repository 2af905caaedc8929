// Threaded dense projection on the micro-kernel (see linear.h).
#include "cpu/nn/linear.h"

#include <algorithm>
#include <atomic>
#include <utility>
#include <vector>

#include "parallel/speed_balance.h"
#include "parallel/thread_pool.h"
#include "simd/gemm.h"
#include "simd/gemv.h"
#include "simd/vec_ops.h"
#include "simd/fp_mode.h"

namespace hanpu::cpu {

PackedLinear PackedLinear::from_rows(const float* w, int in, const std::vector<int>& rows, DType dtype) {
  PackedLinear l;
  l.in = in;
  l.out = static_cast<int>(rows.size());
  l.dtype = dtype;
  const size_t total = static_cast<size_t>(in) * l.out;
  if (dtype == DType::kF32) {
    l.data.resize(total);
  } else {
    l.half.resize(total);
  }
  for (int p = 0; p < l.panels(); ++p) {
    const int n = l.panel_cols(p);
    const size_t base = l.panel_offset(p);
    for (int c = 0; c < n; ++c) {
      const float* src = w + static_cast<size_t>(rows[p * kLinearPanel + c]) * in;
      for (int i = 0; i < in; ++i) {
        const size_t at = base + static_cast<size_t>(i) * n + c;
        if (dtype == DType::kF32) {
          l.data[at] = src[i];
        } else {
          store_from_f32(l.half.data(), dtype, at, src[i]);
        }
      }
    }
  }
  return l;
}

float PackedLinear::at(int i, int o) const {
  const int p = o / kLinearPanel;
  const size_t at = panel_offset(p) + static_cast<size_t>(i) * panel_cols(p) + (o - p * kLinearPanel);
  return dtype == DType::kF32 ? data[at] : load_as_f32(half.data(), dtype, at);
}

int linear_row_ranges(int64_t T, int panels, int cores) {
  constexpr int kUnitsPerCore = 4;
  const int64_t slabs = (T + kLinearRowSlab - 1) / kLinearRowSlab;
  const int64_t wanted = (static_cast<int64_t>(kUnitsPerCore) * cores + panels - 1) / std::max(panels, 1);
  return static_cast<int>(std::clamp<int64_t>(wanted, 1, std::max<int64_t>(slabs, 1)));
}

void linear(const float* x, int64_t ldx, int64_t T, const PackedLinear& w, float* y, int64_t ldy, int threads) {
  if (T <= 0 || w.out <= 0) return;
  ThreadPool& pool = ThreadPool::shared(threads);
  const int P = pool.size(), panels = w.panels(), in = w.in;
  const bool wide = w.dtype == DType::kF32;
  // Units (panel, row range) are claimed from a shared counter rather than dealt: a core
  // slowed by other load (or a LITTLE core) simply claims fewer, where a fixed deal would
  // make the fast core wait for it.
  const int ranges = T == 1 ? 1 : linear_row_ranges(T, panels, P);
  const int64_t slabs = (T + kLinearRowSlab - 1) / kLinearRowSlab;
  std::atomic<int> next_unit{0};
  const bool claim = speed_balancing_enabled();  // HANPU_BALANCE=0: the fixed deal u = core mod P
  pool.run_on_all([&](int core) {
    int dealt = core;
    auto next = [&] { return claim ? next_unit.fetch_add(1) : std::exchange(dealt, dealt + P); };
    simd::ensure_flush_denormals();
    // 16-bit weights: one [512 x 256] fp32 block per core, widened once per (unit, slice)
    // and used by every row slab of the unit.
    thread_local std::vector<float> block;
    for (int u = next(); u < panels * ranges; u = next()) {
      const int p = u / ranges, range = u % ranges;
      const int n = w.panel_cols(p);
      if (!wide && T == 1) {  // decode: widen in registers, read each weight once
        simd::gemv_16(x, in, w.panel_16(p), w.dtype, n, y + p * kLinearPanel);
        continue;
      }
      const int64_t row_begin = slabs * range / ranges * kLinearRowSlab;
      const int64_t row_end = std::min(T, slabs * (range + 1) / ranges * kLinearRowSlab);
      for (int k0 = 0; k0 < in; k0 += kLinearDepth) {
        const int kd = std::min(kLinearDepth, in - k0);
        const float* b = nullptr;
        if (wide) {
          b = w.panel(p) + static_cast<size_t>(k0) * n;
        } else {
          block.resize(static_cast<size_t>(kLinearDepth) * kLinearPanel);
          simd::load_f32(block.data(), w.panel_16(p) + static_cast<size_t>(k0) * n, w.dtype, static_cast<size_t>(kd) * n);
          b = block.data();
        }
        for (int64_t r0 = row_begin; r0 < row_end; r0 += kLinearRowSlab) {
          const int rows = static_cast<int>(std::min(kLinearRowSlab, row_end - r0));
          simd::gemm(rows, n, kd, simd::row_major(x + r0 * ldx + k0, ldx), b, n, y + r0 * ldy + p * kLinearPanel,
                     ldy, 1.0f, k0 == 0 ? 0.0f : 1.0f);
        }
      }
    }
  });
}

}  // namespace hanpu::cpu
