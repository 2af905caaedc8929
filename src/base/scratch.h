// Aligned scratch buffers whose bytes are counted, so a strategy's extra memory is measured,
// not estimated: every workspace a kernel uses is a ScratchBuffer charged to a ScratchMeter.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>

namespace hanpu {

// Current and peak bytes held; safe to charge from many workers at once.
class ScratchMeter {
 public:
  void add(int64_t bytes) {
    const int64_t now = current_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    int64_t peak = peak_.load(std::memory_order_relaxed);
    while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
  }
  void sub(int64_t bytes) { current_.fetch_sub(bytes, std::memory_order_relaxed); }
  int64_t peak() const { return peak_.load(std::memory_order_relaxed); }
  int64_t current() const { return current_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> current_{0};
  std::atomic<int64_t> peak_{0};
};

inline constexpr size_t kScratchAlign = 64;  // one cache line, one AVX-512 vector

// Aligned blocks recycled per thread: kernels run once per layer and per token batch with the
// same workspace sizes, and handing megabytes back to the OS on every call costs page faults
// and TLB shootdowns across cores. A released block waits in its thread's cache (up to
// kScratchCacheBytes) for the next request of the same size.
void* scratch_acquire(size_t bytes);  // bytes: a multiple of kScratchAlign; throws bad_alloc
void scratch_release(void* p, size_t bytes);
inline constexpr size_t kScratchCacheBytes = size_t{64} << 20;

// Owns n elements of T, 64-byte aligned, uninitialised; charged to meter (may be null).
template <typename T>
class ScratchBuffer {
 public:
  ScratchBuffer() = default;
  ScratchBuffer(size_t n, ScratchMeter* meter) : n_(n), meter_(meter) {
    if (n == 0) return;
    const size_t bytes = (n * sizeof(T) + kScratchAlign - 1) / kScratchAlign * kScratchAlign;
    data_ = static_cast<T*>(scratch_acquire(bytes));
    bytes_ = static_cast<int64_t>(bytes);
    if (meter_) meter_->add(bytes_);
  }
  ~ScratchBuffer() { release(); }
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
  ScratchBuffer(ScratchBuffer&& o) noexcept { *this = std::move(o); }
  ScratchBuffer& operator=(ScratchBuffer&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      n_ = std::exchange(o.n_, 0);
      bytes_ = std::exchange(o.bytes_, 0);
      meter_ = std::exchange(o.meter_, nullptr);
    }
    return *this;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return n_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }

 private:
  void release() {
    if (data_) {
      scratch_release(data_, static_cast<size_t>(bytes_));
      if (meter_) meter_->sub(bytes_);
    }
    data_ = nullptr;
  }
  T* data_ = nullptr;
  size_t n_ = 0;
  int64_t bytes_ = 0;
  ScratchMeter* meter_ = nullptr;
};

}  // namespace hanpu
