// The pinned pool runs a job once per worker and carries exceptions back.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
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

TEST(ThreadPool, WorkerZeroIsTheCallerAndTheOthersAreNot) {
  ThreadPool pool(3);
  std::vector<std::thread::id> ids(3);
  pool.run_on_all([&](int w) { ids[w] = std::this_thread::get_id(); });
  EXPECT_EQ(ids[0], std::this_thread::get_id());
  EXPECT_NE(ids[1], std::this_thread::get_id());
  EXPECT_NE(ids[2], std::this_thread::get_id());
  EXPECT_NE(ids[1], ids[2]);
}

TEST(ThreadPool, APoolOfOneRunsOnTheCallerAlone) {
  ThreadPool pool(1);
  int calls = 0;
  std::thread::id id;
  const auto busy = pool.run_on_all([&](int w) {
    EXPECT_EQ(w, 0);
    ++calls;
    id = std::this_thread::get_id();
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(id, std::this_thread::get_id());
  EXPECT_EQ(busy.size(), 1u);
}

// Workers spin a while after each job, then sleep: a job after a long gap must wake them,
// and a job whose workers finish long after the caller must be waited for.
TEST(ThreadPool, WakesWorkersThatFellAsleepAndWaitsForSlowOnes) {
  ThreadPool pool(2);
  for (int rep = 0; rep < 3; ++rep) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // far past the spin
    std::vector<std::atomic<int>> hits(2);
    pool.run_on_all([&](int w) {
      if (w == 1) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      hits[w]++;
    });
    EXPECT_EQ(hits[0].load(), 1);
    EXPECT_EQ(hits[1].load(), 1);  // written before run_on_all returned
  }
}

TEST(ThreadPool, RethrowsTheCallersOwnException) {
  ThreadPool pool(2);
  std::atomic<int> other{0};
  EXPECT_THROW(pool.run_on_all([&](int w) {
    if (w == 0) throw std::invalid_argument("caller");
    other++;
  }),
               std::invalid_argument);
  EXPECT_EQ(other.load(), 1);  // the other worker's share still ran before the rethrow
}

}  // namespace
}  // namespace hanpu
