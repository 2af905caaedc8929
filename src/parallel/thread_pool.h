// A pool of pinned worker threads: each worker is one "AI core" of the HA-NPU mapping.
// Work is dealt by the caller (a schedule decides who does what, re-dealt between phases in
// proportion to each worker's measured speed where a kernel asks for it), so the pool only
// needs "run this on every worker and wait".
//
// Worker 0 is the thread that calls run_on_all; workers 1..n-1 are the pool's own threads.
// Between jobs they spin for a short while before they sleep: a decode step hands the pool
// some 160 small jobs a token, and waking a sleeping thread (and waiting to be woken) costs
// tens of microseconds a job on a VM (docs/performance.md, "Design measurements"). The spin yields
// the core often, so a busy machine loses little to it; HANPU_SPIN_US sets its length (0: never
// spin).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hanpu {

class ThreadPool {
 public:
  // n workers: the caller of run_on_all and n-1 threads, pinned round-robin to the CPUs this
  // process may run on from the second on (unless HANPU_PIN=0).
  explicit ThreadPool(int n);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return size_; }

  // Runs fn(worker) on every worker 0..size()-1 (0 on the calling thread) and returns when
  // all are done. The first exception thrown by fn is rethrown here. Returns each worker's
  // busy time in ms.
  std::vector<double> run_on_all(const std::function<void(int)>& fn);

  // Relative speeds of the workers as the last speed-balanced job measured them (see
  // speed_balance.h); 1.0 each for a new pool. Read and written by the caller between runs.
  std::vector<double> speed_hints() const;
  void set_speed_hints(std::vector<double> speeds);

  // A pool shared by all callers for a given thread count (0: default_threads()).
  static ThreadPool& shared(int n);
  // HANPU_THREADS if set and valid, else the number of CPUs this process may use (read once).
  static int default_threads();

 private:
  void worker_main(int index);
  void run_share(int index, const std::function<void(int)>& fn);

  const int size_;
  const int64_t spin_ns_;             // how long a waiting thread spins before it sleeps
  std::vector<std::thread> workers_;  // workers 1..size_-1
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::atomic<const std::function<void(int)>*> job_{nullptr};
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};  // pool threads still on the current job
  std::atomic<bool> stop_{false};
  std::vector<double> busy_ms_;  // each written by its worker before it counts itself done
  std::vector<double> speed_hints_;
  std::exception_ptr error_;  // under mu_
  std::mutex run_mu_;         // one run_on_all at a time
};

}  // namespace hanpu
