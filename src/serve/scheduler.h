// The server's scheduler: one thread owns the engine and runs every admitted request a
// forward call at a time, in turns, so running replies keep streaming while a new prompt is
// prefilled in chunks between their steps (at most `parallel` running, a bounded queue
// beyond). The HTTP threads hand requests in and read their text out through Job.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "hanpu/engine.h"
#include "serve/prefix_cache.h"

namespace hanpu::serve {

// One request between an HTTP thread and the scheduler. The scheduler appends text and
// tokens and finally sets `finished`; the HTTP thread takes them under `mu`.
struct Job {
  std::vector<int> prompt;
  GenerateOptions options;
  std::atomic<bool> cancelled{false};  // the client left: dropped at the next turn

  std::mutex mu;
  std::condition_variable changed;
  std::string text;                    // generated text not yet taken
  std::vector<GeneratedToken> tokens;  // generated tokens not yet taken
  bool finished = false;
  Status error = Status::Ok();  // a failure the engine reported
  GenerateStats stats;          // once finished
  int64_t cached_tokens = 0;    // of the prompt, resumed from the prefix cache

  // A chat's next turn starts with this turn's messages and the reply as the template renders
  // a past reply (Qwen's without its thinking block): not the tokens generated, so the reply's
  // checkpoint does not match it. Where set, next_turn gives those tokens from the whole reply
  // text, and after the reply the scheduler prefills them from the cache (a "warm-up", no
  // client waiting) so that the next turn resumes past the reply. `reply` keeps the text.
  std::function<std::vector<int>(const std::string& reply)> next_turn;
  std::string reply;
};

struct SchedulerOptions {
  int parallel = 4;                        // running sequences at most
  int queue = 32;                          // waiting requests at most
  int64_t cache_bytes = int64_t{1} << 30;  // the prefix cache's budget; 0: no cache
  int64_t cache_every = 1024;              // a checkpoint every this many prompt tokens (0: none)
};

struct SchedulerMetrics {
  int64_t requests = 0, prompt_tokens = 0, generated_tokens = 0, failed = 0, cancelled = 0;
  int64_t queued = 0, running = 0;
  double prefill_ms = 0, decode_ms = 0;  // summed over finished requests
  int64_t prefix_hits = 0, prefix_bytes = 0, prefix_entries = 0, cached_tokens = 0;
  int64_t warm_tokens = 0;  // next-turn prefixes prefilled after chat replies (Job::next_turn)
};

class Scheduler {
 public:
  Scheduler(Engine* engine, SchedulerOptions options);
  ~Scheduler();  // stops: waits for what is running and queued
  // Queues a job; false (nothing done) when the queue is full or the scheduler is stopping.
  bool submit(std::shared_ptr<Job> job);
  // Refuses new jobs, runs the admitted and queued ones to the end, and stops the thread.
  void drain();
  SchedulerMetrics metrics() const;

 private:
  struct Running {
    std::shared_ptr<Job> job;
    std::unique_ptr<Sequence> resumed;  // from the prefix cache; outlives the generation
    std::unique_ptr<Generation> generation;
    bool warm = false;  // a next turn's prefix prefilled for the cache (Job::next_turn)
  };
  void loop();
  void admit(std::shared_ptr<Job> job, bool warm);
  void finish(Running& r, Status st);
  // The warm-up job of a finished chat reply, or null (no cache, nothing new to prefill).
  std::shared_ptr<Job> warm_job(Job& j);
  // Whether a running warm-up prefills a prefix of the job's prompt: the job waits for it
  // rather than prefill the same tokens beside it.
  bool waits_for_warm(const Job& j) const;

  Engine* engine_;
  SchedulerOptions options_;
  std::vector<int> end_tokens_;         // a chat message ends after one of these
  std::unique_ptr<PrefixCache> cache_;  // null without a budget
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> queue_;
  std::deque<std::shared_ptr<Job>> warm_queue_;  // warm-ups, admitted before queue_
  bool stopping_ = false;
  std::deque<std::shared_ptr<Job>> deferred_;  // the scheduler thread's: waiting for a warm-up
  std::vector<Running> running_;               // the scheduler thread's own
  SchedulerMetrics metrics_;
  std::thread thread_;
};

}  // namespace hanpu::serve
