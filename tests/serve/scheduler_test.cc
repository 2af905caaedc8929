// The scheduler runs several requests in turns, a forward call each: every reply equals the
// same request run alone through Engine::generate, and a cancelled one is dropped without
// touching the others.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <thread>

#include "serve/scheduler.h"

namespace hanpu::serve {
namespace {

std::unique_ptr<Engine> tiny() {
  std::unique_ptr<Engine> e;
  EXPECT_TRUE(Engine::load(default_model_dir(), &e).ok());
  return e;
}

std::shared_ptr<Job> job_of(const std::vector<int>& prompt, int max_tokens, int chunk) {
  auto j = std::make_shared<Job>();
  j->prompt = prompt;
  j->options.max_tokens = max_tokens;
  j->options.prefill_chunk = chunk;
  j->options.stop_at_eos = false;
  return j;
}

void wait(Job& j) {
  std::unique_lock<std::mutex> lock(j.mu);
  j.changed.wait(lock, [&] { return j.finished; });
}

TEST(Scheduler, InterleavedRepliesEqualEachRunAlone) {
  std::unique_ptr<Engine> engine = tiny();
  std::vector<std::shared_ptr<Job>> jobs;
  std::vector<std::vector<int>> alone;
  for (int i = 0; i < 6; ++i) {
    const std::vector<int> prompt = engine->random_prompt(5 + 13 * i, 100 + i);
    jobs.push_back(job_of(prompt, 7 + i, 8));  // chunks of 8: prefill interleaves with decode
    std::vector<int> ids;
    ASSERT_TRUE(
        engine->generate(prompt, jobs.back()->options, nullptr, nullptr, nullptr, &ids).ok());
    alone.push_back(ids);
  }
  {
    Scheduler s(engine.get(), {3, 8});
    for (auto& j : jobs) ASSERT_TRUE(s.submit(j));
    for (auto& j : jobs) wait(*j);
    const SchedulerMetrics m = s.metrics();
    EXPECT_EQ(m.requests, 6);
    EXPECT_EQ(m.failed, 0);
  }
  for (size_t i = 0; i < jobs.size(); ++i) {
    EXPECT_TRUE(jobs[i]->error.ok()) << jobs[i]->error.message();
    EXPECT_EQ(jobs[i]->stats.generated_tokens, 7 + static_cast<int>(i));
  }
  for (size_t i = 0; i < jobs.size(); ++i) {
    std::vector<int> ids;
    for (const GeneratedToken& t : jobs[i]->tokens) ids.push_back(t.id);
    EXPECT_EQ(ids, alone[i]) << i;
  }
}

TEST(Scheduler, APromptThatExtendsAnEarlierOneResumesFromTheCacheExactly) {
  std::unique_ptr<Engine> engine = tiny();
  const std::vector<int> first = engine->random_prompt(40, 5);
  auto a = job_of(first, 6, 16);
  Scheduler s(engine.get(), {2, 4, int64_t{64} << 20, 16});
  ASSERT_TRUE(s.submit(a));
  wait(*a);
  ASSERT_TRUE(a->error.ok()) << a->error.message();
  EXPECT_EQ(a->cached_tokens, 0);
  // The next request: the first prompt, its reply, and more (a conversation's next turn).
  std::vector<int> next = first;
  for (const GeneratedToken& t : a->tokens) next.push_back(t.id);
  const std::vector<int> more = engine->random_prompt(9, 6);
  next.insert(next.end(), more.begin(), more.end());
  std::vector<int> cold;
  ASSERT_TRUE(
      engine->generate(next, job_of(next, 7, 16)->options, nullptr, nullptr, nullptr, &cold).ok());
  auto b = job_of(next, 7, 16);
  ASSERT_TRUE(s.submit(b));
  wait(*b);
  ASSERT_TRUE(b->error.ok()) << b->error.message();
  EXPECT_EQ(b->cached_tokens, 40 + 6);  // the reply's checkpoint
  std::vector<int> got;
  for (const GeneratedToken& t : b->tokens) got.push_back(t.id);
  EXPECT_EQ(got, cold);
  // A prompt sharing only the first 16 tokens resumes from the checkpoint every 16 tokens.
  std::vector<int> branch(first.begin(), first.begin() + 20);
  branch[19] = (branch[19] + 1) % engine->info().vocab;
  auto c = job_of(branch, 3, 16);
  ASSERT_TRUE(s.submit(c));
  wait(*c);
  EXPECT_EQ(c->cached_tokens, 16);
  EXPECT_GE(s.metrics().prefix_hits, 2);
  EXPECT_GT(s.metrics().prefix_bytes, 0);
}

TEST(Scheduler, AChatsNextTurnPrefixIsPrefilledAfterTheReplyAndTheNextTurnResumesPastIt) {
  std::unique_ptr<Engine> engine = tiny();
  const std::vector<int> first = engine->random_prompt(30, 7);
  // The next turn as a template would render it: the prompt, then tokens other than the
  // generated ones (a past reply rendered anew), known once the reply is.
  const std::vector<int> rerendered = engine->random_prompt(11, 8);
  std::vector<int> prefix = first;
  prefix.insert(prefix.end(), rerendered.begin(), rerendered.end());
  std::vector<int> next = prefix;
  const std::vector<int> user = engine->random_prompt(6, 9);
  next.insert(next.end(), user.begin(), user.end());
  std::vector<int> cold;  // before the scheduler runs: one call at a time per Engine
  ASSERT_TRUE(
      engine->generate(next, job_of(next, 6, 16)->options, nullptr, nullptr, nullptr, &cold).ok());
  auto a = job_of(first, 5, 16);
  std::string seen_reply = "unset";
  a->next_turn = [&](const std::string& reply) {
    seen_reply = reply;
    return prefix;
  };
  Scheduler s(engine.get(), {2, 4, int64_t{64} << 20, 0});
  ASSERT_TRUE(s.submit(a));
  wait(*a);  // the warm-up was queued before the reply was handed back
  ASSERT_TRUE(a->error.ok()) << a->error.message();
  EXPECT_NE(seen_reply, "unset");
  auto b = job_of(next, 6, 16);
  ASSERT_TRUE(s.submit(b));
  wait(*b);
  ASSERT_TRUE(b->error.ok()) << b->error.message();
  EXPECT_EQ(b->cached_tokens, static_cast<int64_t>(prefix.size()));  // past the reply
  std::vector<int> got;
  for (const GeneratedToken& t : b->tokens) got.push_back(t.id);
  EXPECT_EQ(got, cold);
  const SchedulerMetrics m = s.metrics();
  EXPECT_EQ(m.warm_tokens, 11);  // the re-rendered reply alone: the prompt came from the cache
  EXPECT_EQ(m.requests, 2);      // the warm-up is not a request
}

TEST(PrefixCache, KeepsTheLongestPrefixAndEvictsTheLeastRecentlyUsed) {
  std::unique_ptr<Engine> engine = tiny();
  // Sequences of the first 4, 8 and 12 tokens of one prompt, through checkpoints.
  const std::vector<int> prompt = engine->random_prompt(12, 9);
  std::vector<std::unique_ptr<Sequence>> taken;
  GenerateOptions o;
  o.max_tokens = 0;
  o.checkpoints = {4, 8, 12};
  o.on_checkpoint = [&](std::unique_ptr<Sequence> s) { taken.push_back(std::move(s)); };
  ASSERT_TRUE(engine->generate(prompt, o, nullptr, nullptr, nullptr).ok());
  ASSERT_EQ(taken.size(), 3u);
  const int64_t each = taken[0]->bytes();
  PrefixCache cache(engine.get(), 2 * each + each / 2);  // room for two
  for (auto& t : taken) cache.insert(std::move(t));
  EXPECT_EQ(cache.entries(), 2);  // the 4-token one, least recently used, went
  EXPECT_LE(cache.bytes(), 2 * each + each / 2);
  int64_t cached = -1;
  std::vector<int> longer = prompt;
  longer.push_back(1);
  EXPECT_NE(cache.resume(longer, &cached), nullptr);
  EXPECT_EQ(cached, 12);
  EXPECT_NE(cache.resume(prompt, &cached), nullptr);  // a proper prefix: the 8-token one
  EXPECT_EQ(cached, 8);
  EXPECT_EQ(cache.resume(std::vector<int>(prompt.begin(), prompt.begin() + 6), &cached), nullptr);
  EXPECT_EQ(cached, 0);
  EXPECT_EQ(cache.hits(), 2);
  EXPECT_EQ(checkpoint_offsets({7, 1, 7, 2, 3}, 1, {7}, 2), (std::vector<int64_t>{1, 2, 3, 4}));
}

TEST(PrefixCache, CountsTheKvRowsCheckpointsShareOnce) {
  std::unique_ptr<Engine> engine = tiny();
  const std::vector<int> prompt = engine->random_prompt(40, 5);
  std::vector<std::unique_ptr<Sequence>> taken;
  GenerateOptions o;
  o.max_tokens = 0;
  o.checkpoints = {32, 36, 40};  // the later two go on from the first one's rows
  o.on_checkpoint = [&](std::unique_ptr<Sequence> s) { taken.push_back(std::move(s)); };
  ASSERT_TRUE(engine->generate(prompt, o, nullptr, nullptr, nullptr).ok());
  ASSERT_EQ(taken.size(), 3u);
  // Their bytes with each shared block counted once: all three, and the last two.
  const auto once = [&](size_t from) {
    int64_t bytes = 0;
    std::map<const void*, int64_t> blocks;
    for (size_t i = from; i < taken.size(); ++i)
      bytes += taken[i]->bytes([&](const void* id, int64_t b) { blocks[id] = b; });
    for (const auto& [id, b] : blocks) bytes += b;
    return bytes;
  };
  int64_t whole = 0;
  for (const auto& t : taken) whole += t->bytes();
  const int64_t all = once(0), last_two = once(1);
  ASSERT_LT(all, whole);  // they do share
  {
    PrefixCache cache(engine.get(), whole);
    for (const auto& t : taken) cache.insert(engine->copy_sequence(*t));
    EXPECT_EQ(cache.entries(), 3);
    EXPECT_EQ(cache.bytes(), all);
  }
  // Room for the last two: the first goes, and the blocks only it held leave the count.
  PrefixCache cache(engine.get(), last_two);
  for (auto& t : taken) cache.insert(std::move(t));
  EXPECT_EQ(cache.entries(), 2);
  EXPECT_EQ(cache.bytes(), last_two);
}

TEST(Scheduler, ACancelledJobIsDroppedAndAFullQueueRefuses) {
  std::unique_ptr<Engine> engine = tiny();
  Scheduler s(engine.get(), {1, 1});
  auto long_one = job_of(engine->random_prompt(4, 1), 100000, 64);
  auto waiting = job_of(engine->random_prompt(4, 2), 3, 64);
  auto refused = job_of(engine->random_prompt(4, 3), 3, 64);
  ASSERT_TRUE(s.submit(long_one));
  // The long job is admitted at once, leaving the one queue place to `waiting`.
  while (s.metrics().running == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(s.submit(waiting));
  EXPECT_FALSE(s.submit(refused));
  long_one->cancelled = true;
  wait(*long_one);
  EXPECT_FALSE(long_one->error.ok());
  wait(*waiting);
  EXPECT_TRUE(waiting->error.ok());
  EXPECT_EQ(waiting->stats.generated_tokens, 3);
  EXPECT_EQ(s.metrics().cancelled, 1);
}

TEST(Scheduler, AnEngineErrorEndsOnlyItsJob) {
  std::unique_ptr<Engine> engine = tiny();
  Scheduler s(engine.get(), {2, 4});
  auto bad = job_of({1, 2, 3}, 4, 8);
  bad->options.temperature = -1;  // refused by Engine::start
  auto good = job_of({1, 2, 3}, 4, 8);
  ASSERT_TRUE(s.submit(bad));
  ASSERT_TRUE(s.submit(good));
  wait(*bad);
  wait(*good);
  EXPECT_NE(bad->error.message().find("temperature"), std::string::npos);
  EXPECT_TRUE(good->error.ok());
  EXPECT_EQ(s.metrics().failed, 1);
}

}  // namespace
}  // namespace hanpu::serve
