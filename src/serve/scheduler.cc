#include "serve/scheduler.h"

#include <algorithm>

namespace hanpu::serve {

Scheduler::Scheduler(Engine* engine, SchedulerOptions options)
    : engine_(engine),
      options_(options),
      end_tokens_(engine->info().stop_tokens),
      cache_(options.cache_bytes > 0 ? std::make_unique<PrefixCache>(engine, options.cache_bytes)
                                     : nullptr),
      thread_([this] { loop(); }) {}

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
  SchedulerMetrics m;
  {
    std::lock_guard<std::mutex> lock(mu_);
    m = metrics_;
  }
  if (cache_) {
    m.prefix_hits = cache_->hits();
    m.prefix_bytes = cache_->bytes();
    m.prefix_entries = cache_->entries();
  }
  return m;
}

// Starts a job's generation: its text and tokens go into the job as they come.
void Scheduler::admit(std::shared_ptr<Job> job, bool warm) {
  Job* j = job.get();
  GenerateOptions o = j->options;
  o.on_token = [j](const GeneratedToken& t) {
    {
      std::lock_guard<std::mutex> lock(j->mu);
      j->tokens.push_back(t);
    }
    j->changed.notify_all();
  };
  Running r{std::move(job), nullptr, nullptr, warm};
  // Resume from the longest cached prefix; checkpoints at the prompt's message ends, every
  // cache_every tokens, its end and the reply's end fill the cache for the next requests.
  int64_t cached = 0;
  if (cache_) {
    r.resumed = cache_->resume(j->prompt, &cached);
    o.sequence = r.resumed.get();
    o.checkpoints = checkpoint_offsets(j->prompt, cached, end_tokens_, options_.cache_every);
    o.checkpoint_reply = !warm;  // a warm-up has no reply: its prompt's end is the checkpoint
    o.on_checkpoint = [this](std::unique_ptr<Sequence> s) { cache_->insert(std::move(s)); };
  }
  {
    std::lock_guard<std::mutex> lock(j->mu);
    j->cached_tokens = cached;
  }
  const std::vector<int> rest(j->prompt.begin() + cached, j->prompt.end());
  const Status st = engine_->start(
      rest, o,
      [j](std::string_view piece) {
        {
          std::lock_guard<std::mutex> lock(j->mu);
          j->text.append(piece);
          if (j->next_turn) j->reply.append(piece);
        }
        j->changed.notify_all();
      },
      nullptr, &r.generation);
  if (!st.ok()) return finish(r, st);
  running_.push_back(std::move(r));
}

std::shared_ptr<Job> Scheduler::warm_job(Job& j) {
  if (!cache_ || !j.next_turn || j.cancelled.load()) return nullptr;
  std::string reply;
  {
    std::lock_guard<std::mutex> lock(j.mu);
    reply = j.reply;
  }
  std::vector<int> next = j.next_turn(reply);
  if (next.empty() || cache_->holds(next)) return nullptr;
  auto w = std::make_shared<Job>();
  w->prompt = std::move(next);
  w->options = j.options;  // the same model run (threads, kernels, chunk)
  w->options.max_tokens = 0;
  w->options.on_token = nullptr;
  w->options.logprobs = false;
  return w;
}

bool Scheduler::waits_for_warm(const Job& j) const {
  return std::any_of(running_.begin(), running_.end(), [&](const Running& r) {
    const std::vector<int>& w = r.job->prompt;
    return r.warm && w.size() < j.prompt.size() && std::equal(w.begin(), w.end(), j.prompt.begin());
  });
}

void Scheduler::finish(Running& r, Status st) {
  Job& j = *r.job;
  if (r.warm) {  // nobody waits for it; its checkpoint is in the cache
    std::lock_guard<std::mutex> lock(mu_);
    if (st.ok() && r.generation) metrics_.warm_tokens += r.generation->prefilled();
    r.generation.reset();
    r.resumed.reset();
    return;
  }
  // Queued before the reply is handed back, so a client's next turn comes after it; none while
  // stopping (no next turn will come).
  bool stopping = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping = stopping_;
  }
  if (st.ok() && !stopping) {
    if (std::shared_ptr<Job> w = warm_job(j)) {
      std::lock_guard<std::mutex> lock(mu_);
      warm_queue_.push_back(std::move(w));
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++metrics_.requests;
    if (j.cancelled.load())
      ++metrics_.cancelled;
    else if (!st.ok())
      ++metrics_.failed;
    metrics_.cached_tokens += j.cached_tokens;
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
  r.resumed.reset();
}

void Scheduler::loop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] {
        return stopping_ || !queue_.empty() || !warm_queue_.empty() || !running_.empty() ||
               !deferred_.empty();
      });
      if (queue_.empty() && warm_queue_.empty() && running_.empty() && deferred_.empty())
        return;  // stopping, nothing left
      // Warm-ups first (they are short, and the next turns wait for them), then the queue in
      // order, through deferred_: a job whose prompt a running warm-up prefills waits there.
      std::vector<std::shared_ptr<Job>> warm;
      while (!warm_queue_.empty() &&
             static_cast<int>(running_.size() + warm.size()) < options_.parallel) {
        warm.push_back(std::move(warm_queue_.front()));
        warm_queue_.pop_front();
      }
      while (!queue_.empty() && static_cast<int>(running_.size() + warm.size() + deferred_.size()) <
                                    options_.parallel) {
        deferred_.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      metrics_.queued = static_cast<int64_t>(queue_.size() + warm_queue_.size() + deferred_.size());
      lock.unlock();
      for (auto& job : warm) admit(std::move(job), true);
      for (auto it = deferred_.begin(); it != deferred_.end();) {
        if (static_cast<int>(running_.size()) >= options_.parallel || waits_for_warm(**it)) {
          ++it;
          continue;
        }
        admit(std::move(*it), false);
        it = deferred_.erase(it);
      }
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
