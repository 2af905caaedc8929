#include "serve/scheduler.h"

#include <algorithm>

namespace hanpu::serve {

Scheduler::Scheduler(Engine* engine, SchedulerOptions options)
    : engine_(engine), options_(options), thread_([this] { loop(); }) {}

Scheduler::~Scheduler() { drain(); }

bool Scheduler::submit(std::shared_ptr<Job> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || static_cast<int>(queue_.size()) >= options_.queue) return false;
    queue_.push_back(std::move(job));
    metrics_.queued = static_cast<int64_t>(queue_.size());
  }
  wake_.notify_one();
  return true;
}

void Scheduler::drain() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

SchedulerMetrics Scheduler::metrics() const {
  std::lock_guard<std::mutex> lock(mu_);
  return metrics_;
}

// Starts a job's generation: its text and tokens go into the job as they come.
void Scheduler::admit(std::shared_ptr<Job> job) {
  Job* j = job.get();
  GenerateOptions o = j->options;
  o.on_token = [j](const GeneratedToken& t) {
    {
      std::lock_guard<std::mutex> lock(j->mu);
      j->tokens.push_back(t);
    }
    j->changed.notify_all();
  };
  Running r{std::move(job), nullptr};
  const Status st = engine_->start(
      j->prompt, o,
      [j](std::string_view piece) {
        {
          std::lock_guard<std::mutex> lock(j->mu);
          j->text.append(piece);
        }
        j->changed.notify_all();
      },
      nullptr, &r.generation);
  if (!st.ok()) return finish(r, st);
  running_.push_back(std::move(r));
}

void Scheduler::finish(Running& r, Status st) {
  Job& j = *r.job;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++metrics_.requests;
    if (j.cancelled.load())
      ++metrics_.cancelled;
    else if (!st.ok())
      ++metrics_.failed;
    if (r.generation) {
      const GenerateStats& s = r.generation->stats();
      metrics_.prompt_tokens += r.generation->prefilled();
      metrics_.generated_tokens += s.generated_tokens;
      metrics_.prefill_ms += s.prefill_ms;
      metrics_.decode_ms += s.decode_ms;
    }
  }
  {
    std::lock_guard<std::mutex> lock(j.mu);
    j.error = st;
    if (r.generation) j.stats = r.generation->stats();
    j.finished = true;
  }
  j.changed.notify_all();
  r.generation.reset();
}

void Scheduler::loop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty() || !running_.empty(); });
      if (queue_.empty() && running_.empty()) return;  // stopping, nothing left
      std::vector<std::shared_ptr<Job>> admitted;
      while (!queue_.empty() &&
             static_cast<int>(running_.size() + admitted.size()) < options_.parallel) {
        admitted.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      metrics_.queued = static_cast<int64_t>(queue_.size());
      lock.unlock();
      for (auto& job : admitted) admit(std::move(job));
    }
    // One turn: the cancelled are dropped; one prompt chunk (the oldest prompt's), then every
    // decoding sequence's next token, all through the model in one batched step.
    std::vector<Generation*> gens;
    std::vector<Running*> owners;
    for (Running& r : running_) {
      if (r.job->cancelled.load()) {
        finish(r, Status::Error("cancelled: the client disconnected"));
        continue;
      }
      gens.push_back(r.generation.get());
      owners.push_back(&r);
    }
    std::vector<Status> results;
    engine_->step_together(gens, 1, &results);
    for (size_t i = 0; i < gens.size(); ++i) {
      if (!results[i].ok() || gens[i]->done()) finish(*owners[i], results[i]);
    }
    running_.erase(std::remove_if(running_.begin(), running_.end(),
                                  [](const Running& r) { return r.generation == nullptr; }),
                   running_.end());
    std::lock_guard<std::mutex> lock(mu_);
    metrics_.running = static_cast<int64_t>(running_.size());
  }
}

}  // namespace hanpu::serve
