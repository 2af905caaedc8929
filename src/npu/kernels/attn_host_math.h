// Host-side arithmetic shared by the spatial attention dataflows (steel, dato, layer): the
// kernels' outputs are computed on the host while the simulator times the array. An fp32
// dot product in eight partial sums, as a vector MAC unit accumulates lanes (and so the
// compiler can vectorise it: a sequential sum cannot be reordered without -ffast-math).
#pragma once

namespace hanpu::npu {

inline float dot_lanes(const float* a, const float* b, int n) {
  float part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int d = 0;
  for (; d + 8 <= n; d += 8) {
    for (int l = 0; l < 8; ++l) part[l] += a[d + l] * b[d + l];
  }
  float sum =
      ((part[0] + part[4]) + (part[1] + part[5])) + ((part[2] + part[6]) + (part[3] + part[7]));
  for (; d < n; ++d) sum += a[d] * b[d];
  return sum;
}

}  // namespace hanpu::npu
