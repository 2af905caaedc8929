// GatheredTensor (see gathered_tensor.h).
#include "model/gathered_tensor.h"

#include <cmath>
#include <vector>

namespace hanpu::model {

void GatheredTensor::read_row(int64_t r, float* out) const {
  const int64_t n = row_len();
  const Row& src = rows[static_cast<size_t>(r)];
  if (column_stride > 0) {
    for (int64_t i = 0; i < n; ++i)
      stored_to_f32(*src.from, src.row + i * column_stride, 1, out + i);
  } else if (columns.empty()) {
    stored_to_f32(*src.from, src.row * n, n, out);
  } else {
    thread_local std::vector<float> in;
    in.resize(static_cast<size_t>(n));
    stored_to_f32(*src.from, src.row * n, n, in.data());
    for (int64_t c = 0; c < n; ++c) out[c] = in[static_cast<size_t>(columns[c])];
  }
  switch (map) {
    case Map::kNone:
      break;
    case Map::kPlusOne:
      for (int64_t c = 0; c < n; ++c) out[c] += 1.0f;
      break;
    case Map::kNegExp:
      // In double, so the float result is correctly rounded whatever the libm.
      for (int64_t c = 0; c < n; ++c) out[c] = static_cast<float>(-std::exp(double{out[c]}));
      break;
  }
}

GatheredTensor gathered_as_stored(const std::string& name, const StoredTensor& t) {
  GatheredTensor g;
  g.name = name;
  g.shape = t.shape;
  g.kept = t.dtype;
  g.whole = &t;
  const int64_t n = g.row_len();
  g.rows.resize(static_cast<size_t>(n > 0 ? shape_numel(g.shape) / n : 0));
  for (size_t r = 0; r < g.rows.size(); ++r) g.rows[r] = {&t, static_cast<int64_t>(r)};
  return g;
}

}  // namespace hanpu::model
