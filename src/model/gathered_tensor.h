// A tensor of a GGUF to be written, described as rows gathered from stored tensors rather than
// copied: output row r is row rows[r].row of rows[r].from, its values reordered by `columns`
// and mapped by `map`. Every change llama.cpp's converter makes to a Hugging Face checkpoint
// (value heads into tiled order, Qwen3-Next's qkvz split, experts stacked, norms stored as
// 1 + w, A_log as -exp(A_log), conv weights squeezed) is one of these, so a checkpoint is
// converted and quantized a row at a time, never held whole in fp32.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hanpu/dtype.h"
#include "model/weight_store.h"

namespace hanpu::model {

struct GatheredTensor {
  enum class Map { kNone, kPlusOne, kNegExp };
  struct Row {
    const StoredTensor* from = nullptr;
    // In `from` seen as rows of row_len() values; with `column_stride`, the element index of
    // the row's first value.
    int64_t row = 0;
  };

  std::string name;
  std::vector<int64_t> shape;  // row-major, outermost first
  DType kept = DType::kF32;    // written in this type when not quantized
  std::vector<Row> rows;
  std::vector<int32_t> columns;  // out[c] = in[columns[c]]; empty: in order
  Map map = Map::kNone;
  // > 0: each row is a column of `from` seen as rows of column_stride values: row r holds
  // from's elements rows[r].row + i column_stride (MLA's key half of kv_b, which llama.cpp
  // stores transposed).
  int64_t column_stride = 0;
  // Set when the tensor is `whole` as stored (rows in order, nothing changed): kept tensors
  // are then copied byte for byte.
  const StoredTensor* whole = nullptr;

  int64_t row_len() const { return shape.empty() ? 1 : shape.back(); }
  // Row r in fp32 at out[row_len()].
  void read_row(int64_t r, float* out) const;
};

// `t` as it is stored (rows in order, its own type kept).
GatheredTensor gathered_as_stored(const std::string& name, const StoredTensor& t);

}  // namespace hanpu::model
