// The pinned pool runs a job once per worker and carries exceptions back.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>

#include "parallel/thread_pool.h"

namespace hanpu {
namespace {

TEST(ThreadPool, RunsEveryWorkerOnceEachTime) {
  ThreadPool pool(3);
  for (int rep = 0; rep < 50; ++rep) {
    std::vector<std::atomic<int>> hits(3);
    const auto busy = pool.run_on_all([&](int w) { hits[w]++; });
    EXPECT_EQ(busy.size(), 3u);
    for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  }
}

TEST(ThreadPool, RethrowsAWorkersException) {
  ThreadPool pool(2);
  EXPECT_THROW(pool.run_on_all([](int w) {
    if (w == 1) throw std::runtime_error("boom");
  }),
               std::runtime_error);
  int ran = 0;
  pool.run_on_all([&](int w) {
    if (w == 0) ran = 1;
  });
  EXPECT_EQ(ran, 1);
}

}  // namespace
}  // namespace hanpu
