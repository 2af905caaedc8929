// Pinned worker pool (see thread_pool.h).
#include "parallel/thread_pool.h"

#include <pthread.h>
#include <sched.h>

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

bool pinning_enabled() {
  const char* env = std::getenv("HANPU_PIN");
  return !(env && std::string(env) == "0");
}

}  // namespace

int ThreadPool::default_threads() {
  if (const char* env = std::getenv("HANPU_THREADS")) {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && n > 0 && n <= 1024) return static_cast<int>(n);
  }
  const int n = static_cast<int>(allowed_cpus().size());
  return n > 0 ? n : 1;
}

ThreadPool::ThreadPool(int n) : busy_ms_(n > 0 ? n : 1, 0.0), speed_hints_(n > 0 ? n : 1, 1.0) {
  if (n < 1) n = 1;
  const std::vector<int> cpus = allowed_cpus();
  const bool pin = pinning_enabled() && !cpus.empty();
  workers_.reserve(n);
  for (int i = 0; i < n; ++i) {
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
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::worker_main(int index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    Timer timer;
    std::exception_ptr err;
    try {
      (*job)(index);
    } catch (...) {
      err = std::current_exception();
    }
    const double ms = timer.ms();
    {
      std::lock_guard<std::mutex> lock(mu_);
      busy_ms_[index] = ms;
      if (err && !error_) error_ = err;
      if (--pending_ == 0) done_.notify_one();
    }
  }
}

std::vector<double> ThreadPool::run_on_all(const std::function<void(int)>& fn) {
  std::lock_guard<std::mutex> run_lock(run_mu_);
  std::unique_lock<std::mutex> lock(mu_);
  job_ = &fn;
  pending_ = size();
  error_ = nullptr;
  ++generation_;
  wake_.notify_all();
  done_.wait(lock, [&] { return pending_ == 0; });
  job_ = nullptr;
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
