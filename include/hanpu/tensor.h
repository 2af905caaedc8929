// Tensor views: a pointer, a dtype and a row-major shape. hanpu never owns caller memory.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "hanpu/dtype.h"

namespace hanpu {

using Shape = std::vector<int64_t>;

std::string shape_str(const Shape& s);  // "[4096, 16, 128]"
int64_t shape_numel(const Shape& s);

// Read-only view of a contiguous row-major tensor.
struct TensorView {
  const void* data = nullptr;
  DType dtype = DType::kF32;
  Shape shape;

  bool empty() const { return data == nullptr; }
  int64_t numel() const { return shape_numel(shape); }
};

// Writable view of a contiguous row-major tensor.
struct MutTensorView {
  void* data = nullptr;
  DType dtype = DType::kF32;
  Shape shape;

  bool empty() const { return data == nullptr; }
  int64_t numel() const { return shape_numel(shape); }
};

}  // namespace hanpu
