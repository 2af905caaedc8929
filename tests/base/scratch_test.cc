// Scratch buffers: aligned, metered, and recycled per thread.
#include <gtest/gtest.h>

#include <cstdint>
#include <thread>

#include "base/scratch.h"

namespace hanpu {
namespace {

TEST(Scratch, MeterCountsPeakAndBlocksAreAlignedAndRecycled) {
  ScratchMeter meter;
  const float* first = nullptr;
  {
    ScratchBuffer<float> a(1000, &meter), b(10, &meter);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % kScratchAlign, 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % kScratchAlign, 0u);
    EXPECT_EQ(meter.current(), 4032 + 64);  // rounded up to whole cache lines
    first = a.data();
  }
  EXPECT_EQ(meter.current(), 0);
  EXPECT_EQ(meter.peak(), 4032 + 64);
  ScratchBuffer<float> again(1000, &meter);  // same size on the same thread: the same block
  EXPECT_EQ(again.data(), first);
  EXPECT_EQ(meter.current(), 4032);
}

TEST(Scratch, BlocksMayBeReleasedOnAnotherThread) {
  ScratchBuffer<float> moved;
  std::thread([&] { moved = ScratchBuffer<float>(5000, nullptr); }).join();
  moved[4999] = 1.0f;  // still valid after its thread ended
  EXPECT_EQ(moved[4999], 1.0f);
}

}  // namespace
}  // namespace hanpu
