// generation_config.json (stop tokens and the checkpoint's sampling, with transformers'
// meaning), the stop tokens a checkpoint names in its three files, and the repetition
// penalty against a double reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include <fmt/format.h>

#include "fixtures.h"
#include "hanpu/engine.h"
#include "model/generation_config.h"
#include "model/sampler.h"

namespace hanpu::model {
namespace {

GenerationConfig parsed(const std::string& text, int vocab = 100) {
  GenerationConfig g;
  const Status st = parse_generation_config(text, "gen.json", vocab, &g);
  EXPECT_TRUE(st.ok()) << st.message();
  return g;
}

// The error parsing `text` gives (empty if it parsed).
std::string error_of(const std::string& text) {
  GenerationConfig g;
  return parse_generation_config(text, "gen.json", 100, &g).message();
}

TEST(GenerationConfig, FieldsAndTransformersDefaults) {
  const GenerationConfig d = parsed("{}");
  EXPECT_FALSE(d.do_sample);
  EXPECT_EQ(d.temperature, 1.0f);
  EXPECT_EQ(d.top_k, 50);
  EXPECT_EQ(d.top_p, 1.0f);
  EXPECT_EQ(d.repetition_penalty, 1.0f);
  EXPECT_TRUE(d.eos_token_ids.empty());
  // What Qwen's chat checkpoints ship, fields hanpu does not use included.
  const GenerationConfig q =
      parsed(R"({"bos_token_id": 7, "do_sample": true, "eos_token_id": [12, 9],
      "pad_token_id": 9, "temperature": 0.7, "top_k": 20, "top_p": 0.8, "repetition_penalty": 1.05,
      "transformers_version": "4.57.0"})");
  EXPECT_TRUE(q.do_sample);
  EXPECT_FLOAT_EQ(q.temperature, 0.7f);
  EXPECT_EQ(q.top_k, 20);
  EXPECT_FLOAT_EQ(q.top_p, 0.8f);
  EXPECT_EQ(q.min_p, 0.0f);
  EXPECT_FLOAT_EQ(parsed(R"({"min_p": 0.05})").min_p, 0.05f);
  EXPECT_FLOAT_EQ(q.repetition_penalty, 1.05f);
  EXPECT_EQ(q.eos_token_ids, (std::vector<int>{12, 9}));
  EXPECT_EQ(parsed(R"({"eos_token_id": 5})").eos_token_ids, (std::vector<int>{5}));
  // Ids outside the vocabulary (and non-integers) are skipped, as config.json's are.
  EXPECT_EQ(parsed(R"({"eos_token_id": [3, 100, -1, 2.5, 99]})").eos_token_ids,
            (std::vector<int>{3, 99}));
  EXPECT_FALSE(parsed(R"({"temperature": null})").do_sample);
}

TEST(GenerationConfig, BadFieldsAreNamed) {
  EXPECT_NE(error_of("{\"top_k\": 3").find("gen.json: malformed JSON at byte"), std::string::npos)
      << error_of("{");
  EXPECT_NE(error_of("[1]").find("gen.json: not a JSON object"), std::string::npos);
  for (const auto& [text, key] : std::vector<std::pair<std::string, std::string>>{
           {R"({"temperature": "hot"})", "\"temperature\" is \"hot\""},
           {R"({"do_sample": 1})", "\"do_sample\" is 1"},
           {R"({"top_k": 2.5})", "\"top_k\" is 2.5"},
           {R"({"top_k": 1e30})", "\"top_k\" is 1e+30"},
           {R"({"temperature": -0.1})", "\"temperature\" is -0.1, not >= 0"},
           {R"({"top_k": -1})", "\"top_k\" is -1, not >= 0"},
           {R"({"top_p": 0})", "\"top_p\" is 0, not in (0, 1]"},
           {R"({"top_p": 1.5})", "\"top_p\" is 1.5, not in (0, 1]"},
           {R"({"repetition_penalty": 0})", "\"repetition_penalty\" is 0, not > 0"},
           {R"({"min_p": 1.5})", "\"min_p\" is 1.5, not in [0, 1]"},
           {R"({"min_p": -0.1})", "\"min_p\" is -0.1, not in [0, 1]"},
           {R"({"temperature": 1e300})", "out of float range"}}) {
    const std::string err = error_of(text);
    EXPECT_NE(err.find("gen.json: "), std::string::npos) << text << ": " << err;
    EXPECT_NE(err.find(key), std::string::npos) << text << ": " << err;
  }
}

// A scratch checkpoint: the qwen35 fixture's weights and tokenizer with the given
// generation_config.json and tokenizer_config.json (none where empty).
std::string checkpoint_with(const std::string& name, const std::string& generation,
                            const std::string& tokenizer_config) {
  return testing::scratch_checkpoint(
      "hanpu_gen_" + name,
      {{"generation_config.json", generation}, {"tokenizer_config.json", tokenizer_config}});
}

TEST(GenerationConfig, LoadsBesideTheWeightsOrIsAbsent) {
  std::optional<GenerationConfig> g;
  ASSERT_TRUE(load_generation_config(checkpoint_with("absent", "", ""), 100, &g).ok());
  EXPECT_FALSE(g.has_value());
  ASSERT_TRUE(
      load_generation_config(checkpoint_with("present", R"({"top_k": 7})", ""), 100, &g).ok());
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->top_k, 7);
  // A broken file stops the load, naming itself.
  const std::string dir = checkpoint_with("broken", R"({"top_p": 2})", "");
  std::unique_ptr<Engine> e;
  const Status st = Engine::load(dir, &e);
  EXPECT_NE(st.message().find(dir + "/generation_config.json: \"top_p\" is 2"), std::string::npos)
      << st.message();
}

// The fixture's first greedy token after its first prompt (transformers' reference).
int first_greedy_token() {
  return testing::reference("qwen35-tiny")["prompts"][0]["greedy16"][0].get<int>();
}

std::vector<int> first_prompt() {
  return testing::reference("qwen35-tiny")["prompts"][0]["ids"].get<std::vector<int>>();
}

TEST(GenerationConfig, StopTokensComeFromEveryFileThatNamesThem) {
  const int first = first_greedy_token();
  ASSERT_NE(first, 2);  // config.json's eos (<|im_end|>) must not be it, or this tests nothing
  // config.json: 2. generation_config.json: the first greedy token. tokenizer_config.json:
  // <|endoftext|> (id 0).
  const std::string dir =
      checkpoint_with("stops", fmt::format(R"({{"eos_token_id": [{}, 2]}})", first),
                      R"({"eos_token": "<|endoftext|>"})");
  std::unique_ptr<Engine> e;
  ASSERT_TRUE(Engine::load(dir, &e).ok());
  std::vector<int> want = {0, 2, first};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(e->info().stop_tokens, want);
  // Generation stops at once on the token only generation_config.json names.
  GenerateOptions o;
  o.max_tokens = 5;
  GenerateStats s;
  std::vector<int> out;
  ASSERT_TRUE(e->generate(first_prompt(), o, nullptr, nullptr, &s, &out).ok());
  EXPECT_EQ(s.stop_reason, "eos");
  EXPECT_TRUE(out.empty());
  // Without the file the same run goes on past it.
  ASSERT_TRUE(Engine::load(checkpoint_with("stops_none", "", ""), &e).ok());
  EXPECT_EQ(e->info().stop_tokens, (std::vector<int>{2}));
  ASSERT_TRUE(e->generate(first_prompt(), o, nullptr, nullptr, &s, &out).ok());
  EXPECT_EQ(out.front(), first);
  // The shipped fixture's tokenizer_config.json names <|im_end|>, already config.json's eos.
  ASSERT_TRUE(Engine::load(testing::fixture_dir("qwen35-tiny"), &e).ok());
  EXPECT_EQ(e->info().stop_tokens, (std::vector<int>{2}));
  EXPECT_EQ(e->token_text(2), "<|im_end|>");
  EXPECT_EQ(e->token_text(-1), "");
  EXPECT_EQ(e->token_text(1 << 30), "");
}

TEST(GenerationConfig, DefaultOptionsFollowTransformers) {
  std::unique_ptr<Engine> e;
  // do_sample: the file's values, transformers' defaults for the rest (top_k 50).
  ASSERT_TRUE(Engine::load(checkpoint_with("sample", R"({"do_sample": true, "temperature": 0.6,
      "top_p": 0.95, "min_p": 0.1, "repetition_penalty": 1.1})",
                                           ""),
                           &e)
                  .ok());
  GenerateOptions o = e->default_generate_options();
  EXPECT_FLOAT_EQ(o.min_p, 0.1f);
  EXPECT_FLOAT_EQ(o.temperature, 0.6f);
  EXPECT_EQ(o.top_k, 50);
  EXPECT_FLOAT_EQ(o.top_p, 0.95f);
  EXPECT_FLOAT_EQ(o.repetition_penalty, 1.1f);
  EXPECT_NE(e->info().sampling_origin.find("generation_config.json"), std::string::npos);
  // No do_sample: greedy whatever temperature says; the penalty still applies (a logits
  // processor in transformers, greedy or not).
  ASSERT_TRUE(
      Engine::load(checkpoint_with("greedy", R"({"temperature": 0.6, "top_k": 5, "min_p": 0.2,
      "repetition_penalty": 1.2})",
                                   ""),
                   &e)
          .ok());
  o = e->default_generate_options();
  EXPECT_EQ(o.min_p, 0.0f);
  EXPECT_EQ(o.temperature, 0.0f);
  EXPECT_EQ(o.top_k, 0);
  EXPECT_EQ(o.top_p, 1.0f);
  EXPECT_FLOAT_EQ(o.repetition_penalty, 1.2f);
  // No file, and synthetic models: greedy, no origin.
  ASSERT_TRUE(Engine::load(checkpoint_with("nofile", "", ""), &e).ok());
  o = e->default_generate_options();
  EXPECT_EQ(o.temperature, 0.0f);
  EXPECT_EQ(o.repetition_penalty, 1.0f);
  EXPECT_EQ(e->info().sampling_origin, "");
  // A bad penalty given to generate is an error, not a silent change.
  o.repetition_penalty = 0.0f;
  EXPECT_NE(e->generate(first_prompt(), o, nullptr, nullptr, nullptr)
                .message()
                .find("repetition_penalty 0"),
            std::string::npos);
  o = e->default_generate_options();
  o.min_p = 2.0f;
  EXPECT_NE(e->generate(first_prompt(), o, nullptr, nullptr, nullptr).message().find("min_p 2"),
            std::string::npos);
  o = e->default_generate_options();
  o.presence_penalty = NAN;
  EXPECT_NE(e->generate(first_prompt(), o, nullptr, nullptr, nullptr)
                .message()
                .find("presence_penalty nan"),
            std::string::npos);
}

TEST(GenerationConfig, RepetitionPenaltySeesThePromptAndTheOutput) {
  std::unique_ptr<Engine> e;
  ASSERT_TRUE(Engine::load(testing::fixture_dir("qwen35-tiny"), &e).ok());
  const std::vector<int> prompt = first_prompt();
  GenerateOptions o;
  o.max_tokens = 12;
  o.stop_at_eos = false;
  o.repetition_penalty = 3.0f;
  std::vector<int> once;
  ASSERT_TRUE(e->generate(prompt, o, nullptr, nullptr, nullptr, &once).ok());
  ASSERT_EQ(once.size(), 12u);
  // The penalty changes this run (else the checks below could not fail).
  const auto greedy16 =
      testing::reference("qwen35-tiny")["prompts"][0]["greedy16"].get<std::vector<int>>();
  EXPECT_NE(once, std::vector<int>(greedy16.begin(), greedy16.begin() + 12));
  // Token by token, each call prefilling the prompt and the output so far: the same tokens,
  // so one run penalises what it generated as it would the same tokens in a prompt.
  std::vector<int> sequence = prompt, by_token;
  o.max_tokens = 1;
  for (int i = 0; i < 12; ++i) {
    std::vector<int> next;
    ASSERT_TRUE(e->generate(sequence, o, nullptr, nullptr, nullptr, &next).ok());
    ASSERT_EQ(next.size(), 1u);
    by_token.push_back(next[0]);
    sequence.push_back(next[0]);
  }
  EXPECT_EQ(once, by_token);
}

TEST(GenerationConfig, PresencePenaltySeesTheOutputOnly) {
  std::unique_ptr<Engine> e;
  ASSERT_TRUE(Engine::load(testing::fixture_dir("qwen35-tiny"), &e).ok());
  const std::vector<int> prompt = first_prompt();
  const int first = first_greedy_token();
  // The fixture's greedy output starts with a token of the prompt and then repeats tokens.
  ASSERT_NE(std::find(prompt.begin(), prompt.end(), first), prompt.end());
  GenerateOptions o;
  o.max_tokens = 12;
  o.stop_at_eos = false;
  o.presence_penalty = 1e6f;  // no token of the output can come again
  std::vector<int> out;
  ASSERT_TRUE(e->generate(prompt, o, nullptr, nullptr, nullptr, &out).ok());
  ASSERT_EQ(out.size(), 12u);
  EXPECT_EQ(out[0], first);  // the prompt's tokens are not penalised
  EXPECT_EQ(std::set<int>(out.begin(), out.end()).size(), out.size());
}

// The penalised argmax in double: transformers' repetition processor over the distinct ids of
// prompt and output, then vLLM's presence penalty over the output's.
// (-1 where the two best are within float rounding of each other: the sampler works in float,
// so such a near-tie may go either way.)
int reference_penalised_argmax(const std::vector<float>& logits, const std::set<int>& seen,
                               double penalty, const std::set<int>& output = {},
                               double presence = 0.0) {
  int best = 0;
  double best_v = -INFINITY, second_v = -INFINITY;
  for (int i = 0; i < static_cast<int>(logits.size()); ++i) {
    double v = logits[i];
    if (seen.count(i)) v = v < 0 ? v * penalty : v / penalty;
    if (output.count(i)) v -= presence;
    if (v > best_v) {
      second_v = best_v;
      best_v = v;
      best = i;
    } else if (v > second_v) {
      second_v = v;
    }
  }
  return best_v - second_v < 1e-5 * (1 + std::fabs(best_v)) ? -1 : best;
}

// Fresh logits of a random size (1-300) and a repetition penalty in [0.5, 3).
std::vector<float> random_logits(std::mt19937& rng, double* penalty) {
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> logits(1 + rng() % 300);
  for (float& l : logits) l = normal(rng);
  *penalty = 0.5 + (rng() % 1000) / 400.0;
  return logits;
}

TEST(Sampler, RepetitionPenaltyMatchesADoubleReference) {
  std::mt19937 rng(std::random_device{}());
  for (int trial = 0; trial < 200; ++trial) {
    double penalty = 1;
    const std::vector<float> logits = random_logits(rng, &penalty);
    const int n = static_cast<int>(logits.size());
    Sampler s({0.0f, 0, 1.0f, 1, static_cast<float>(penalty)});
    std::set<int> seen;
    const int observed = static_cast<int>(rng() % 8);
    for (int i = 0; i < observed; ++i) {
      const int id = static_cast<int>(rng() % (n + 3));  // some past the logits: never penalised
      s.observe_prompt(id);
      s.observe_prompt(id);  // twice: penalised once, as transformers gathers distinct ids
      if (id < n) seen.insert(id);
    }
    const int want = reference_penalised_argmax(logits, seen, penalty);
    if (want >= 0) {
      EXPECT_EQ(s.sample(logits), want) << "trial " << trial;
    }
  }
  // A hand case: 2.0 seen (2.0 / 1.1 = 1.82) loses to 1.9; -1.0 seen goes to -1.5 (x 1.5).
  Sampler flip({0.0f, 0, 1.0f, 1, 1.1f});
  flip.observe_prompt(0);
  EXPECT_EQ(flip.sample({2.0f, 1.9f}), 1);
  Sampler neg({0.0f, 0, 1.0f, 1, 1.5f});
  neg.observe_prompt(0);
  EXPECT_EQ(neg.sample({-1.0f, -1.4f}), 1);
  EXPECT_EQ(neg.sample({-1.0f, -1.6f}), 0);
  // Off (1.0): observing changes nothing.
  Sampler off({0.0f, 0, 1.0f, 1, 1.0f});
  off.observe_prompt(0);
  EXPECT_EQ(off.sample({2.0f, 1.9f}), 0);
}

TEST(Sampler, PresencePenaltyMatchesADoubleReferenceAndSparesThePrompt) {
  std::mt19937 rng(std::random_device{}());
  for (int trial = 0; trial < 200; ++trial) {
    double penalty = 1;
    const std::vector<float> logits = random_logits(rng, &penalty);
    const int n = static_cast<int>(logits.size());
    const double presence = -1.0 + (rng() % 1000) / 250.0;  // OpenAI's range is [-2, 2]
    Sampler s({0.0f, 0, 1.0f, 1, static_cast<float>(penalty), 0.0f, static_cast<float>(presence)});
    std::set<int> seen, output;
    for (int i = 0, count = static_cast<int>(rng() % 10); i < count; ++i) {
      const int id = static_cast<int>(rng() % (n + 3));
      const bool in_output = rng() % 2;
      in_output ? s.observe_output(id) : s.observe_prompt(id);
      if (id < n) {
        seen.insert(id);
        if (in_output) output.insert(id);
      }
    }
    const int want = reference_penalised_argmax(logits, seen, penalty, output, presence);
    if (want >= 0) {
      EXPECT_EQ(s.sample(logits), want) << "trial " << trial;
    }
  }
  // By hand: 2.0 in the output loses to 1.9 once 0.5 is taken off; in the prompt it does not.
  Sampler out({0.0f, 0, 1.0f, 1, 1.0f, 0.0f, 0.5f});
  out.observe_output(0);
  EXPECT_EQ(out.sample({2.0f, 1.9f}), 1);
  Sampler prompt({0.0f, 0, 1.0f, 1, 1.0f, 0.0f, 0.5f});
  prompt.observe_prompt(0);
  EXPECT_EQ(prompt.sample({2.0f, 1.9f}), 0);
}

TEST(Sampler, FrequencyPenaltyCountsEachTimeTheOutputHoldsAToken) {
  std::mt19937 rng(std::random_device{}());
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 5 + static_cast<int>(rng() % 40);
    std::vector<float> logits(n);
    for (float& l : logits) l = static_cast<float>(rng() % 2000) / 500.0f - 2.0f;
    const double presence = -1.0 + (rng() % 1000) / 500.0, frequency = (rng() % 1000) / 500.0 - 1.0;
    Sampler s({0.0f, 0, 1.0f, 1, 1.0f, 0.0f, static_cast<float>(presence),
               static_cast<float>(frequency)});
    std::map<int, int> count;
    for (int i = 0, k = static_cast<int>(rng() % 12); i < k; ++i) {
      const int id = static_cast<int>(rng() % (n + 2));  // some outside the logits
      s.observe_output(id);
      if (id < n) ++count[id];
    }
    std::vector<double> v(logits.begin(), logits.end());
    for (const auto& [id, c] : count) v[id] -= presence + frequency * c;
    std::vector<double> sorted = v;
    std::sort(sorted.rbegin(), sorted.rend());
    if (sorted[0] - sorted[1] < 1e-4) continue;  // a near-tie: float may go either way
    EXPECT_EQ(s.sample(logits), std::max_element(v.begin(), v.end()) - v.begin()) << trial;
  }
  // By hand: 2.0 beats 1.9 after one occurrence at 0.06 a time, not after two.
  Sampler once({0.0f, 0, 1.0f, 1, 1.0f, 0.0f, 0.0f, 0.06f});
  once.observe_output(0);
  EXPECT_EQ(once.sample({2.0f, 1.9f}), 0);
  once.observe_output(0);
  EXPECT_EQ(once.sample({2.0f, 1.9f}), 1);
}

TEST(Sampler, MinPKeepsTokensAboveAShareOfTheTopOne) {
  // Temperature 1: probabilities relative to the top are 1, e^-1 = 0.37, e^-3 = 0.05.
  const std::vector<float> logits = {0.0f, -1.0f, -3.0f};
  Sampler s({1.0f, 0, 1.0f, 11, 1.0f, 0.3f});
  std::vector<int> count(3, 0);
  for (int i = 0; i < 20000; ++i) count[s.sample(logits)]++;
  EXPECT_EQ(count[2], 0);  // 0.05 < 0.3: dropped
  const double want0 = 1.0 / (1.0 + std::exp(-1.0));
  EXPECT_NEAR(count[0] / 20000.0, want0, 0.015);
  // At temperature 2 the third holds e^-1.5 = 0.22 of the top: still out at 0.3, in at 0.2.
  Sampler hot({2.0f, 0, 1.0f, 11, 1.0f, 0.2f});
  int third = 0;
  for (int i = 0; i < 20000; ++i) third += hot.sample(logits) == 2;
  const double z = 1.0 + std::exp(-0.5) + std::exp(-1.5);
  EXPECT_NEAR(third / 20000.0, std::exp(-1.5) / z, 0.015);
  // min_p 1 keeps only the top token (ties aside).
  Sampler top({1.0f, 0, 1.0f, 11, 1.0f, 1.0f});
  for (int i = 0; i < 100; ++i) EXPECT_EQ(top.sample(logits), 0);
}

// The tokens a draw may return and their probabilities, in double over a full sort:
// temperature, top-k, top-p, min-p in transformers' order.
std::map<int, double> reference_candidates(const std::vector<float>& logits, double t, int top_k,
                                           double top_p, double min_p) {
  std::vector<int> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::sort(ids.begin(), ids.end(), [&](int a, int b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  if (top_k > 0 && top_k < static_cast<int>(ids.size())) ids.resize(top_k);
  std::vector<double> w(ids.size());
  double total = 0;
  for (size_t i = 0; i < ids.size(); ++i)
    total += (w[i] = std::exp((logits[ids[i]] - logits[ids[0]]) / t));
  size_t keep = ids.size();
  double acc = 0;
  for (size_t i = 0; i < ids.size() && top_p < 1; ++i) {
    if ((acc += w[i] / total) >= top_p) {
      keep = i + 1;
      break;
    }
  }
  size_t above = 1;
  while (min_p > 0 && above < keep && w[above] >= min_p) ++above;
  if (min_p > 0) keep = above;
  double mass = 0;
  for (size_t i = 0; i < keep; ++i) mass += w[i];
  std::map<int, double> out;
  for (size_t i = 0; i < keep; ++i) out[ids[i]] = w[i] / mass;
  return out;
}

TEST(Sampler, FiltersMatchAFullSortOnLargeVocabularies) {
  // Vocabularies large enough that top-p and min-p rank past several of the sampler's
  // growing prefixes (64, 256, 1024, ...), against the reference's full sort.
  std::mt19937 rng(std::random_device{}());
  struct Case {
    int n;
    float t;
    int top_k;
    float top_p, min_p;
  };
  for (const Case c : {Case{3000, 1.0f, 0, 0.9f, 0.0f}, Case{3000, 0.7f, 0, 0.95f, 0.0f},
                       Case{3001, 1.0f, 0, 1.0f, 0.02f}, Case{3000, 1.3f, 0, 0.8f, 0.05f},
                       Case{2000, 1.0f, 700, 0.9f, 0.0f}, Case{999, 0.5f, 0, 0.5f, 0.0f},
                       Case{3000, 1.0f, 0, 0.5f, 0.001f}, Case{3000, 1.0f, 0, 1.0f, 0.0f}}) {
    std::normal_distribution<float> normal(0.0f, 1.5f);
    std::vector<float> logits(c.n);
    for (float& l : logits) l = normal(rng);
    // No weight within float rounding of the min-p cut (exp((l - max) / T) against min_p): the
    // sampler's fp32 weights and the reference's doubles may fall on either side of it there.
    const float top = *std::max_element(logits.begin(), logits.end());
    for (float& l : logits) {
      const double ratio = std::exp((double(l) - top) / c.t);
      if (c.min_p > 0 && std::fabs(ratio - c.min_p) < 1e-4 * c.min_p) l -= 1e-2f;
    }
    const auto want = reference_candidates(logits, c.t, c.top_k, c.top_p, c.min_p);
    Sampler s({c.t, c.top_k, c.top_p, static_cast<uint64_t>(rng()), 1.0f, c.min_p});
    std::map<int, int> count;
    constexpr int kDraws = 10000;
    // Five standard deviations of a share p measured over kDraws draws (a false alarm in
    // one run of ~10^6), plus a little for the weights' float rounding.
    const auto five_sigma = [&](double p) {
      p = std::clamp(p, 0.0, 1.0);  // a sum of shares may round past 1
      return 5 * std::sqrt(p * (1 - p) / kDraws) + 1e-3;
    };
    for (int i = 0; i < kDraws; ++i) count[s.sample(logits)]++;
    const std::string what =
        fmt::format("n {} T {} top-k {} top-p {} min-p {}", c.n, c.t, c.top_k, c.top_p, c.min_p);
    // The candidate set is the reference's, id for id.
    std::vector<int> want_ids;
    for (const auto& [id, p] : want) want_ids.push_back(id);
    EXPECT_EQ(s.candidates(logits), want_ids) << what;
    for (const auto& [id, hits] : count)
      EXPECT_TRUE(want.count(id)) << what << ": drew " << id << ", outside the filters";
    double in_top = 0, want_top = 0;  // the ten most likely candidates' share
    std::vector<std::pair<double, int>> by_p;
    for (const auto& [id, p] : want) by_p.push_back({p, id});
    std::sort(by_p.rbegin(), by_p.rend());
    for (size_t i = 0; i < by_p.size() && i < 10; ++i) {
      want_top += by_p[i].first;
      in_top += count[by_p[i].second] / static_cast<double>(kDraws);
      EXPECT_NEAR(count[by_p[i].second] / static_cast<double>(kDraws), by_p[i].first,
                  five_sigma(by_p[i].first))
          << what;
    }
    EXPECT_NEAR(in_top, want_top, five_sigma(want_top)) << what;
  }
}

TEST(Sampler, RepetitionPenaltyReachesSampledDraws) {
  // Temperature 1 over two tokens: the seen one's weight drops by e^(2 - 2/2) = e.
  Sampler s({1.0f, 0, 1.0f, 3, 2.0f});
  s.observe_prompt(0);
  const std::vector<float> logits = {2.0f, 2.0f};
  int zeros = 0;
  for (int i = 0; i < 20000; ++i) zeros += s.sample(logits) == 0;
  const double want = std::exp(1.0) / (std::exp(1.0) + std::exp(2.0));
  EXPECT_NEAR(zeros / 20000.0, want, 0.015);
}

}  // namespace
}  // namespace hanpu::model
