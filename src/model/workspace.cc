// Workspace buffers (see workspace.h).
#include "model/workspace.h"

namespace hanpu::model {

float* Workspace::reuse(std::vector<float>& buf, size_t n) {
  if (buf.size() < n) {
    // Freed before it grows: resize would hold the old contents (garbage) beside the new
    // block for its copy, the two together a peak of the process's memory.
    std::vector<float>().swap(buf);
    buf.resize(n);
  }
  return buf.data();
}

int64_t Workspace::bytes() const {
  size_t floats = 0;
  for (const auto& b : layer_) floats += b.capacity();
  for (const auto& b : stack_) floats += b.capacity();
  return static_cast<int64_t>(floats * sizeof(float));
}

void Workspace::release() {
  for (auto& b : layer_) std::vector<float>().swap(b);
  for (auto& b : stack_) std::vector<float>().swap(b);
}

}  // namespace hanpu::model
