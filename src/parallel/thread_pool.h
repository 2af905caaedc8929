// A pool of pinned worker threads: each worker is one "AI core" of the HA-NPU mapping.
// Work is dealt by the caller (a schedule decides who does what, re-dealt between phases in
// proportion to each worker's measured speed where a kernel asks for it), so the pool only
// needs "run this on every worker and wait".
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hanpu {

class ThreadPool {
 public:
  // n workers, pinned round-robin to the CPUs this process may run on (unless HANPU_PIN=0).
  explicit ThreadPool(int n);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()); }

  // Runs fn(worker) on every worker 0..size()-1 and returns when all are done. The first
  // exception thrown by fn is rethrown here. Returns each worker's busy time in ms.
  std::vector<double> run_on_all(const std::function<void(int)>& fn);

  // Relative speeds of the workers as the last speed-balanced job measured them (see
  // speed_balance.h); 1.0 each for a new pool. Read and written by the caller between runs.
  std::vector<double> speed_hints() const;
  void set_speed_hints(std::vector<double> speeds);

  // A pool shared by all callers for a given thread count (0: default_threads()).
  static ThreadPool& shared(int n);
  // HANPU_THREADS if set and valid, else the number of CPUs this process may use.
  static int default_threads();

 private:
  void worker_main(int index);

  std::vector<std::thread> workers_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(int)>* job_ = nullptr;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
  std::vector<double> busy_ms_;
  std::vector<double> speed_hints_;
  std::exception_ptr error_;
  std::mutex run_mu_;  // one run_on_all at a time
};

}  // namespace hanpu
