// Pinned worker pool (see thread_pool.h).
#include "parallel/thread_pool.h"
#include "base/env_settings.h"

#include <pthread.h>
#include <sched.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "base/timer.h"

namespace hanpu {

namespace {

std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
    }
  }
  return cpus;
}

bool pinning_enabled() { return !env_switched_off(EnvVar::kPin); }

// HANPU_SPIN_US if set and valid, else 500 us: longer than the gaps between the jobs of a
// decode step (norms, the conv, the sampler), far shorter than a scheduler tick.
int64_t spin_budget_ns() {
  return int64_t{env_integer(EnvVar::kSpinUs, 0, 1000000).value_or(500)} * 1000;
}

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Spins until done() or budget_ns pass; whether done() came true. Every few hundred
// cycles it yields the core, so a thread that needs this core (another process, or the
// worker this one waits for, when the scheduler put both on one CPU) gets it.
template <class Done>
bool spin_until(const Done& done, int64_t budget_ns) {
  if (budget_ns <= 0) return done();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(budget_ns);
  for (;;) {
    for (int i = 0; i < 32; ++i) {
      if (done()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() >= deadline) return done();
    sched_yield();
  }
}

}  // namespace

int ThreadPool::default_threads() {
  // Once per process: every shared(0) asks, some 160 times a decode step, and the CPU mask
  // is a system call and a 1024-bit scan.
  static const int threads = [] {
    if (const auto n = env_integer(EnvVar::kThreads, 1, 1024)) return static_cast<int>(*n);
    const int n = static_cast<int>(allowed_cpus().size());
    return n > 0 ? n : 1;
  }();
  return threads;
}

ThreadPool::ThreadPool(int n)
    : size_(n > 0 ? n : 1),
      spin_ns_(spin_budget_ns()),
      busy_ms_(size_, 0.0),
      speed_hints_(size_, 1.0) {
  const std::vector<int> cpus = allowed_cpus();
  const bool pin = pinning_enabled() && !cpus.empty();
  workers_.reserve(size_ - 1);
  for (int i = 1; i < size_; ++i) {
    workers_.emplace_back([this, i] { worker_main(i); });
    if (pin) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpus[i % cpus.size()], &set);
      pthread_setaffinity_np(workers_.back().native_handle(), sizeof(set), &set);
    }
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_share(int index, const std::function<void(int)>& fn) {
  Timer timer;
  try {
    fn(index);
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!error_) error_ = std::current_exception();
  }
  busy_ms_[index] = timer.ms();
}

void ThreadPool::worker_main(int index) {
  uint64_t seen = 0;
  const auto news = [&] {
    return stop_.load(std::memory_order_relaxed) ||
           generation_.load(std::memory_order_acquire) != seen;
  };
  for (;;) {
    if (!spin_until(news, spin_ns_)) {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, news);
    }
    if (stop_.load()) return;
    seen = generation_.load(std::memory_order_acquire);
    run_share(index, *job_.load(std::memory_order_relaxed));
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // Under the lock, so a caller that found work pending and went to sleep hears this.
      std::lock_guard<std::mutex> lock(mu_);
      done_.notify_one();
    }
  }
}

std::vector<double> ThreadPool::run_on_all(const std::function<void(int)>& fn) {
  std::lock_guard<std::mutex> run_lock(run_mu_);
  error_ = nullptr;
  pending_.store(size_ - 1, std::memory_order_relaxed);
  job_.store(&fn, std::memory_order_relaxed);
  {
    // Under the lock, so a worker that saw no news and went to sleep hears this.
    std::lock_guard<std::mutex> lock(mu_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  run_share(0, fn);
  const auto finished = [&] { return pending_.load(std::memory_order_acquire) == 0; };
  if (!spin_until(finished, spin_ns_)) {
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, finished);
  }
  job_.store(nullptr, std::memory_order_relaxed);
  if (error_) std::rethrow_exception(error_);
  return busy_ms_;
}

std::vector<double> ThreadPool::speed_hints() const {
  std::lock_guard<std::mutex> lock(mu_);
  return speed_hints_;
}

void ThreadPool::set_speed_hints(std::vector<double> speeds) {
  std::lock_guard<std::mutex> lock(mu_);
  if (speeds.size() == speed_hints_.size()) speed_hints_ = std::move(speeds);
}

ThreadPool& ThreadPool::shared(int n) {
  if (n <= 0) n = default_threads();
  static std::mutex mu;
  static std::map<int, std::unique_ptr<ThreadPool>> pools;
  std::lock_guard<std::mutex> lock(mu);
  auto& pool = pools[n];
  if (!pool) pool = std::make_unique<ThreadPool>(n);
  return *pool;
}

}  // namespace hanpu
