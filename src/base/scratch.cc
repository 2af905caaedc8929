// Per-thread recycling of aligned scratch blocks (see scratch.h).
#include "base/scratch.h"

#include <cstdlib>
#include <new>
#include <vector>

namespace hanpu {

namespace {

struct ThreadCache {
  std::vector<std::pair<size_t, void*>> blocks;
  size_t bytes = 0;
  ~ThreadCache() {
    for (auto& [n, p] : blocks) std::free(p);
  }
};

ThreadCache& cache() {
  thread_local ThreadCache c;
  return c;
}

}  // namespace

void* scratch_acquire(size_t bytes) {
  ThreadCache& c = cache();
  for (size_t i = 0; i < c.blocks.size(); ++i) {
    if (c.blocks[i].first == bytes) {
      void* p = c.blocks[i].second;
      c.blocks[i] = c.blocks.back();
      c.blocks.pop_back();
      c.bytes -= bytes;
      return p;
    }
  }
  void* p = std::aligned_alloc(kScratchAlign, bytes);
  if (!p) throw std::bad_alloc();
  return p;
}

void scratch_release(void* p, size_t bytes) {
  ThreadCache& c = cache();
  if (c.bytes + bytes > kScratchCacheBytes) {
    std::free(p);
    return;
  }
  c.blocks.emplace_back(bytes, p);
  c.bytes += bytes;
}

}  // namespace hanpu
