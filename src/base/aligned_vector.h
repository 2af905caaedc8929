// std::vector whose storage starts on a 64-byte boundary (one cache line, one AVX-512
// vector): for buffers a kernel reads and writes in place with full-width vectors, where a
// 16-byte-aligned block (what malloc gives) would split every vector access across two lines.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace hanpu {

template <typename T>
struct CacheAlignedAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlign{64};
  CacheAlignedAllocator() = default;
  template <typename U>
  CacheAlignedAllocator(const CacheAlignedAllocator<U>&) noexcept {}  // NOLINT: rebinding
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlign)); }
  void deallocate(T* p, size_t) noexcept { ::operator delete(p, kAlign); }
  template <typename U>
  bool operator==(const CacheAlignedAllocator<U>&) const noexcept {
    return true;
  }
};

using AlignedFloats = std::vector<float, CacheAlignedAllocator<float>>;

}  // namespace hanpu
