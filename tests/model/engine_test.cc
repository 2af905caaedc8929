// The public Engine on the shipped fixture: greedy generation reproduces transformers' 16
// tokens through tokenizer + prefill + decode, chunked prefill changes nothing, and the
// sampler's options behave as documented.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hanpu/attn.h"
#include "hanpu/engine.h"
#include "fixtures.h"
#include "model/sampler.h"

namespace hanpu {
namespace {

const std::string kDir = std::string(HANPU_FIXTURES_DIR) + "/models/";

TEST(Engine, GreedyGenerationMatchesTransformers) {
  for (const char* name : {"qwen35-tiny", "qwen3next-tiny"}) {
    std::unique_ptr<Engine> e;
    ASSERT_TRUE(Engine::load(kDir + name, &e).ok());
    const auto ref = model::testing::reference(name);
    for (const auto& p : ref["prompts"]) {
      std::vector<int> ids;
      ASSERT_TRUE(e->tokenize(p["text"].get<std::string>(), &ids).ok());
      for (int chunk : {1000, 3}) {  // one prefill call, or many small ones
        GenerateOptions o;
        o.max_tokens = 16;
        o.stop_at_eos = false;
        o.prefill_chunk = chunk;
        std::vector<int> out;
        std::string text;
        GenerateStats s;
        ASSERT_TRUE(e->generate(
                         ids, o, [&](std::string_view t) { text += t; }, nullptr, &s, &out)
                        .ok());
        EXPECT_EQ(out, p["greedy16"].get<std::vector<int>>()) << name << " chunk " << chunk;
        EXPECT_EQ(s.generated_tokens, 16);
        EXPECT_EQ(s.prompt_tokens, static_cast<int64_t>(ids.size()));
        EXPECT_FALSE(text.empty());
        // The splits cover the forward calls: inside prefill_ms and decode_ms, kernels inside their
        // blocks.
        for (const auto& [split, total] :
             {std::pair{&s.prefill_split, s.prefill_ms}, std::pair{&s.decode_split, s.decode_ms}}) {
          EXPECT_GT(split->la_ms, 0.0) << name;
          EXPECT_GT(split->attn_ms, 0.0) << name;
          EXPECT_GT(split->mlp_ms, 0.0) << name;
          EXPECT_GT(split->other_ms, 0.0) << name;
          EXPECT_GT(split->la_kernel_ms, 0.0) << name;
          EXPECT_LE(split->la_kernel_ms, split->la_ms) << name;
          EXPECT_LE(split->attn_kernel_ms, split->attn_ms) << name;
          EXPECT_LE(split->total_ms(), total) << name;
        }
      }
    }
  }
}

// Generates 5 tokens after p1 and saves the sequence; resumes it with p2 and generates 8: the
// same tokens as one run over p1, the first 5 tokens and p2. Leaves o's resume_state = path.
void expect_resume_equals_one_run(Engine& e, GenerateOptions& o, const std::vector<int>& p1,
                                  const std::vector<int>& p2, const std::string& path) {
  o.max_tokens = 5;
  o.stop_at_eos = false;
  o.save_state = path;
  std::vector<int> g1, g2, g_ref;
  ASSERT_TRUE(e.generate(p1, o, nullptr, nullptr, nullptr, &g1).ok());
  o.save_state.clear();
  o.resume_state = path;
  o.max_tokens = 8;
  GenerateStats s;
  ASSERT_TRUE(e.generate(p2, o, nullptr, nullptr, &s, &g2).ok());
  EXPECT_EQ(s.resumed_tokens, static_cast<int64_t>(p1.size() + g1.size()));
  std::vector<int> all = p1;
  all.insert(all.end(), g1.begin(), g1.end());
  all.insert(all.end(), p2.begin(), p2.end());
  o.resume_state.clear();
  ASSERT_TRUE(e.generate(all, o, nullptr, nullptr, nullptr, &g_ref).ok());
  EXPECT_EQ(g2, g_ref);
  o.resume_state = path;
}

TEST(Engine, ErrorsAreNamed) {
  std::unique_ptr<Engine> e;
  EXPECT_NE(Engine::load("/nonexistent", &e).message().find("cannot open"), std::string::npos);
  EXPECT_NE(Engine::synthetic("qwen9", 1, &e).message().find("unknown synthetic model 'qwen9'"),
            std::string::npos);
  ASSERT_TRUE(Engine::load(kDir + "qwen35-tiny", &e).ok());
  GenerateOptions o;
  EXPECT_FALSE(e->generate({}, o, nullptr, nullptr, nullptr).ok());
  o.top_p = 0.0f;
  EXPECT_NE(e->generate({1, 2}, o, nullptr, nullptr, nullptr).message().find("top_p"),
            std::string::npos);
  o.top_p = 1.0f;
  o.kv_cache = "q8";
  EXPECT_NE(e->generate({1, 2}, o, nullptr, nullptr, nullptr)
                .message()
                .find("kv cache 'q8' is not auto, f32, bf16 or f16"),
            std::string::npos);
}

TEST(Engine, KvCacheAutoFollowsTheProjections) {
  std::unique_ptr<Engine> e;
  std::string kv;
  ASSERT_TRUE(Engine::load(kDir + "qwen35-tiny", &e).ok());  // fp32 checkpoint
  ASSERT_TRUE(e->kv_cache_dtype("auto", &kv).ok());
  EXPECT_EQ(kv, "f32");
  ASSERT_TRUE(Engine::load(kDir + "qwen35-tiny", &e, "bf16").ok());
  ASSERT_TRUE(e->kv_cache_dtype("auto", &kv).ok());
  EXPECT_EQ(kv, "bf16");
  ASSERT_TRUE(e->kv_cache_dtype("f16", &kv).ok());
  EXPECT_EQ(kv, "f16");
  GenerateOptions o;
  o.max_tokens = 2;
  GenerateStats st;
  ASSERT_TRUE(e->generate({1, 2, 3}, o, nullptr, nullptr, &st).ok());
  EXPECT_EQ(st.kv_cache, "bf16");
}

// GenerateOptions::attn_products reaches the attention prefill: the synthetic Qwen3-Next
// layout has attention layers before its last (4 and 8), so a prompt of several tokens runs
// a fused prefill, and the "layer" placement, which has no bf16 products, refuses "bf16" from
// inside the prefill. Without the instruction "bf16" is refused up front; a bad name is named.
TEST(Engine, AttnProductsReachThePrefillAndAreChecked) {
  std::unique_ptr<Engine> e;
  ASSERT_TRUE(Engine::synthetic("qwen3-next-tiny", 3, &e).ok());  // bf16 weights and cache
  const std::vector<int> prompt = e->random_prompt(40, 5);
  GenerateOptions o;
  o.max_tokens = 2;
  GenerateStats st;
  o.attn_products = "q8";
  EXPECT_NE(e->generate(prompt, o, nullptr, nullptr, &st)
                .message()
                .find("attention products 'q8' are not auto, f32 or bf16"),
            std::string::npos);
  o.attn_products = "f32";
  ASSERT_TRUE(e->generate(prompt, o, nullptr, nullptr, &st).ok());
  EXPECT_FALSE(st.attn_bf16_products);
  o.attn_products = "auto";
  ASSERT_TRUE(e->generate(prompt, o, nullptr, nullptr, &st).ok());
  EXPECT_EQ(st.attn_bf16_products, attn_auto_bf16_products(DType::kBF16));
  o.kv_cache = "f32";
  ASSERT_TRUE(e->generate(prompt, o, nullptr, nullptr, &st).ok());
  EXPECT_FALSE(st.attn_bf16_products) << "auto rounds no fp32 cache";
  o.attn_products = "bf16";
  const Status bf16 = e->generate(prompt, o, nullptr, nullptr, &st);
  if (!attn_auto_bf16_products(DType::kBF16)) {
    EXPECT_NE(bf16.message().find("no bf16 dot instruction"), std::string::npos) << bf16.message();
    return;
  }
  ASSERT_TRUE(bf16.ok()) << bf16.message();  // a prefill rounds an fp32 cache's rows itself
  EXPECT_TRUE(st.attn_bf16_products);
  o.attn_placement = "layer";
  const Status layer = e->generate(prompt, o, nullptr, nullptr, &st);
  EXPECT_NE(layer.message().find(
                "attn_prefill: bf16 products cannot run: the layer placement is fp32 only"),
            std::string::npos)
      << layer.message();
}

// The benchmarks' hook runs once before each decode step's forward call and is not decode
// time; every such call is timed on its own. Greedy tokens do not depend on the hook. No
// wall-time threshold (a loaded 2-core machine stretches a step of this model from 0.2 ms to
// tens of ms): the checks are identities that hold however slow the run was. The call's
// wall time holds the prefill, the decode and the hook's own time (measured here), so had
// decode_ms counted the hook, prefill + decode + hook would pass the wall time by the hook's
// 100 ms; and had the steps counted it, their sum would pass decode_ms.
TEST(Engine, BetweenDecodeStepsHookIsNotDecodeTimeAndEachStepIsTimed) {
  std::unique_ptr<Engine> e;
  ASSERT_TRUE(Engine::load(kDir + "qwen35-tiny", &e).ok());
  GenerateOptions o;
  o.max_tokens = 6;
  o.stop_at_eos = false;
  std::vector<int> plain, hooked;
  GenerateStats st_plain, st;
  ASSERT_TRUE(e->generate({1, 2, 3}, o, nullptr, nullptr, &st_plain, &plain).ok());
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
  int calls = 0;
  double hook_ms = 0;
  o.between_decode_steps = [&] {
    ++calls;
    const auto h0 = Clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    hook_ms += ms(Clock::now() - h0);
  };
  const auto w0 = Clock::now();
  ASSERT_TRUE(e->generate({1, 2, 3}, o, nullptr, nullptr, &st, &hooked).ok());
  const double wall_ms = ms(Clock::now() - w0);
  EXPECT_EQ(hooked, plain);
  EXPECT_EQ(calls, 5);  // the last token is sampled, never run through the model
  ASSERT_EQ(st.decode_step_ms.size(), 5u);
  ASSERT_EQ(st_plain.decode_step_ms.size(), 5u);
  double steps = 0;
  for (double t : st.decode_step_ms) {
    EXPECT_GT(t, 0.0);
    steps += t;
  }
  EXPECT_GE(hook_ms, 100.0);
  EXPECT_LE(st.prefill_ms + st.decode_ms + hook_ms, wall_ms) << "the hook's time counted as decode";
  EXPECT_GE(st.decode_ms, steps) << "the steps hold time outside decode_ms";
}

// The per-token state sizes bench e2e adds to the weights, against the checkpoint's own
// config.json fields (Hugging Face names), counted here independently of ModelConfig.
TEST(Engine, InfoCountsTheStateADecodeStepMoves) {
  for (const std::string name : {"qwen35-tiny", "qwen3next-tiny"}) {
    SCOPED_TRACE(name);
    std::unique_ptr<Engine> e;
    ASSERT_TRUE(Engine::load(kDir + name, &e).ok());
    std::ifstream f(kDir + name + "/config.json");
    nlohmann::json c = nlohmann::json::parse(f);
    if (c.contains("text_config")) c = c["text_config"];
    int64_t la = 0, attn = 0;
    for (const auto& t : c["layer_types"]) (t == "linear_attention" ? la : attn)++;
    const int64_t hk = c["linear_num_key_heads"], hv = c["linear_num_value_heads"];
    const int64_t dk = c["linear_key_head_dim"], dv = c["linear_value_head_dim"],
                  kernel = c["linear_conv_kernel_dim"];
    const int64_t kv_heads = c["num_key_value_heads"], head_dim = c["head_dim"];
    const int64_t per_la_layer =
        hv * dk * dv + (kernel - 1) * (2 * hk * dk + hv * dv);  // recurrent + conv floats
    const EngineInfo i = e->info();
    ASSERT_GT(la, 0);
    ASSERT_GT(attn, 0);
    EXPECT_EQ(i.la_state_bytes, la * per_la_layer * 4);
    EXPECT_EQ(i.kv_values_per_position, attn * 2 * kv_heads * head_dim);
  }
}

TEST(Engine, SixteenBitCacheStateResumesExactly) {
  // The file holds fp32 rows; a bf16 cache widens and rounds back exactly.
  std::unique_ptr<Engine> e;
  ASSERT_TRUE(Engine::load(kDir + "qwen35-tiny", &e).ok());
  const std::string path = ::testing::TempDir() + "/hanpu_state_bf16.bin";
  GenerateOptions o;
  o.kv_cache = "bf16";
  expect_resume_equals_one_run(*e, o, {5, 9, 17, 33, 2, 71}, {8, 13, 21}, path);
}

// The state file keeps the sequence's ids, so a repetition penalty after a resume weighs the
// earlier tokens as one longer run does. The first prompt holds every even id: a penalty that
// saw only the new prompt would favour other tokens.
TEST(Engine, ResumedPenaltySeesTheEarlierTokens) {
  std::unique_ptr<Engine> e;
  ASSERT_TRUE(Engine::load(kDir + "qwen35-tiny", &e).ok());
  const std::string path = ::testing::TempDir() + "/hanpu_state_penalty.bin";
  std::vector<int> evens;
  for (int id = 0; id < e->info().vocab; id += 2) evens.push_back(id);
  GenerateOptions o;
  o.repetition_penalty = 1.8f;
  expect_resume_equals_one_run(*e, o, evens, {7, 13, 21}, path);
}

// A run that stops at a stop token saves it as the sequence's last token: the model closed its
// turn with it, and what is resumed follows it. The fixture's greedy tokens name the stop.
TEST(Engine, AStopTokenEndsTheSavedSequence) {
  std::unique_ptr<Engine> plain;
  ASSERT_TRUE(Engine::load(kDir + "qwen35-tiny", &plain).ok());
  const std::vector<int> p1 = {5, 9, 17, 33, 2, 71}, p2 = {8, 13, 21};
  GenerateOptions o;
  o.max_tokens = 12;
  o.stop_at_eos = false;
  std::vector<int> free_run;
  ASSERT_TRUE(plain->generate(p1, o, nullptr, nullptr, nullptr, &free_run).ok());
  size_t j = 1;  // the first token after the first that has not come before
  while (j < free_run.size() && std::count(free_run.begin(), free_run.begin() + j, free_run[j]) > 0)
    ++j;
  ASSERT_LT(j, free_run.size());
  const int stop = free_run[j];
  std::unique_ptr<Engine> e;
  const std::string dir = model::testing::scratch_checkpoint(
      "hanpu_stop_state",
      {{"generation_config.json", "{\"eos_token_id\": " + std::to_string(stop) + "}"}});
  ASSERT_TRUE(Engine::load(dir, &e).ok());
  const std::string path = ::testing::TempDir() + "/hanpu_state_stop.bin";
  o.stop_at_eos = true;
  o.save_state = path;
  std::vector<int> g1, g2, g_ref;
  GenerateStats s;
  ASSERT_TRUE(e->generate(p1, o, nullptr, nullptr, &s, &g1).ok());
  EXPECT_EQ(s.stop_reason, "eos");
  EXPECT_EQ(g1, std::vector<int>(free_run.begin(), free_run.begin() + j));
  EXPECT_EQ(s.saved_tokens, static_cast<int64_t>(p1.size() + j + 1));
  o.save_state.clear();
  o.resume_state = path;
  o.max_tokens = 6;
  o.stop_at_eos = false;
  ASSERT_TRUE(e->generate(p2, o, nullptr, nullptr, &s, &g2).ok());
  EXPECT_EQ(s.resumed_tokens, static_cast<int64_t>(p1.size() + j + 1));
  std::vector<int> all = p1;
  all.insert(all.end(), free_run.begin(), free_run.begin() + j + 1);  // the stop token included
  all.insert(all.end(), p2.begin(), p2.end());
  o.resume_state.clear();
  ASSERT_TRUE(e->generate(all, o, nullptr, nullptr, nullptr, &g_ref).ok());
  EXPECT_EQ(g2, g_ref);
}

// --chat after --resume-state: the new turn is rendered as Qwen3.5's template renders it after
// an assistant reply, opened by what the saved reply lacks of its ending.
TEST(Engine, AChatContinuesTheSavedConversation) {
  std::unique_ptr<Engine> e;
  ASSERT_TRUE(Engine::load(kDir + "qwen35-tiny", &e).ok());
  const std::string path = ::testing::TempDir() + "/hanpu_chat_state.bin";
  std::string first;
  ASSERT_TRUE(e->apply_chat_template({{"user", "Hi"}}, {}, &first).ok());
  const auto save = [&](const std::string& reply) {
    std::vector<int> ids;
    ASSERT_TRUE(e->tokenize(first + reply, &ids).ok());
    GenerateOptions o;
    o.max_tokens = 0;
    o.save_state = path;
    ASSERT_TRUE(e->generate(ids, o, nullptr, nullptr, nullptr).ok());
  };
  const std::string next_turn =
      "<|im_start|>user\nMore<|im_end|>\n<|im_start|>assistant\n<think>\n";
  std::string text;
  save("Hello<|im_end|>");  // the reply stopped at its stop token
  ASSERT_TRUE(e->continue_chat(path, {{"user", "More"}}, {}, &text).ok());
  EXPECT_EQ(text, "\n" + next_turn);
  save("Hello");  // cut off by max_tokens
  ASSERT_TRUE(e->continue_chat(path, {{"user", "More"}}, {}, &text).ok());
  EXPECT_EQ(text, "<|im_end|>\n" + next_turn);
  ChatOptions no_think;
  no_think.enable_thinking = false;
  ASSERT_TRUE(e->continue_chat(path, {{"user", "More"}}, no_think, &text).ok());
  EXPECT_EQ(text,
            "<|im_end|>\n<|im_start|>user\nMore<|im_end|>\n<|im_start|>assistant\n<think>\n\n</"
            "think>\n\n");

  // The template's own errors, a template that drops replies, and a bad file are named.
  Status st = e->continue_chat(path, {{"system", "Be brief."}, {"user", "More"}}, {}, &text);
  EXPECT_NE(st.message().find("System message must be at the beginning"), std::string::npos)
      << st.message();
  const std::string users_only = ::testing::TempDir() + "/hanpu_users_only.jinja";
  std::ofstream(users_only)
      << "{% for m in messages %}{% if m.role == 'user' %}{{ m.content }}{% endif %}{% endfor %}";
  ASSERT_TRUE(e->set_chat_template_file(users_only).ok());
  st = e->continue_chat(path, {{"user", "More"}}, {}, &text);
  EXPECT_NE(st.message().find("an assistant reply is not in its text"), std::string::npos)
      << st.message();
  st = e->continue_chat("/nonexistent/state.bin", {{"user", "More"}}, {}, &text);
  EXPECT_NE(st.message().find("/nonexistent/state.bin: cannot open"), std::string::npos)
      << st.message();
}

// An in-memory sequence continues across calls as one longer run does, and holds every token
// (the last one sampled run through too); continue_chat reads its end as it reads a file's.
TEST(Engine, ASequenceContinuesAcrossCalls) {
  std::unique_ptr<Engine> e;
  ASSERT_TRUE(Engine::load(kDir + "qwen35-tiny", &e).ok());
  const std::vector<int> p1 = {5, 9, 17, 33, 2, 71}, p2 = {8, 13, 21};
  const auto seq = e->new_sequence();
  EXPECT_TRUE(seq->tokens().empty());
  GenerateOptions o;
  o.stop_at_eos = false;
  o.sequence = seq.get();
  o.max_tokens = 5;
  std::vector<int> g1, g2, g_ref;
  GenerateStats s;
  ASSERT_TRUE(e->generate(p1, o, nullptr, nullptr, &s, &g1).ok());
  EXPECT_EQ(s.resumed_tokens, 0);
  o.max_tokens = 8;
  ASSERT_TRUE(e->generate(p2, o, nullptr, nullptr, &s, &g2).ok());
  EXPECT_EQ(s.resumed_tokens, static_cast<int64_t>(p1.size() + g1.size()));
  std::vector<int> all = p1;
  all.insert(all.end(), g1.begin(), g1.end());
  all.insert(all.end(), p2.begin(), p2.end());
  o.sequence = nullptr;
  ASSERT_TRUE(e->generate(all, o, nullptr, nullptr, nullptr, &g_ref).ok());
  EXPECT_EQ(g2, g_ref);
  all.insert(all.end(), g2.begin(), g2.end());
  EXPECT_EQ(seq->tokens(), all);

  // continue_chat: an empty sequence renders a new chat; a filled one continues as its file does.
  const auto empty = e->new_sequence();
  std::string from_empty, from_new, from_seq, from_file;
  ASSERT_TRUE(e->continue_chat(*empty, {{"user", "Hi"}}, {}, &from_empty).ok());
  ASSERT_TRUE(e->apply_chat_template({{"user", "Hi"}}, {}, &from_new).ok());
  EXPECT_EQ(from_empty, from_new);
  const std::string path = ::testing::TempDir() + "/hanpu_sequence.bin";
  o.sequence = seq.get();
  o.save_state = path;
  o.max_tokens = 2;
  ASSERT_TRUE(e->generate({7}, o, nullptr, nullptr, &s).ok());
  EXPECT_EQ(s.saved_tokens, static_cast<int64_t>(seq->tokens().size()));
  ASSERT_TRUE(e->continue_chat(*seq, {{"user", "More"}}, {}, &from_seq).ok());
  ASSERT_TRUE(e->continue_chat(path, {{"user", "More"}}, {}, &from_file).ok());
  EXPECT_EQ(from_seq, from_file);
  const std::string saved_after = ::testing::TempDir() + "/hanpu_sequence_saved.bin";
  ASSERT_TRUE(e->save_sequence(*seq, saved_after).ok());  // the same sequence through save_sequence
  std::string from_saved;
  ASSERT_TRUE(e->continue_chat(saved_after, {{"user", "More"}}, {}, &from_saved).ok());
  EXPECT_EQ(from_saved, from_file);
  EXPECT_EQ(model::testing::read_text(saved_after), model::testing::read_text(path));
  EXPECT_NE(
      e->save_sequence(*empty, saved_after).message().find("the sequence holds no tokens yet"),
      std::string::npos);
  EXPECT_NE(from_seq.find("<|im_start|>user\nMore"), std::string::npos) << from_seq;

  // Resuming a file into a sequence replaces what it held.
  o.save_state.clear();
  o.resume_state = path;
  const auto other = e->new_sequence();
  o.sequence = other.get();
  o.max_tokens = 1;
  ASSERT_TRUE(e->generate({3}, o, nullptr, nullptr, &s).ok());
  EXPECT_EQ(s.resumed_tokens, static_cast<int64_t>(seq->tokens().size()));
  EXPECT_EQ(other->tokens().size(), seq->tokens().size() + 2);
}

// stop_requested ends a reply after the token it is asked after; the sequence still holds
// every token shown, so the next call continues after the last of them.
TEST(Engine, AStopRequestEndsTheReplyAndKeepsItsTokens) {
  std::unique_ptr<Engine> e;
  ASSERT_TRUE(Engine::load(kDir + "qwen35-tiny", &e).ok());
  const auto seq = e->new_sequence();
  GenerateOptions o;
  o.stop_at_eos = false;
  o.max_tokens = 50;
  o.sequence = seq.get();
  int asked = 0;
  o.stop_requested = [&asked] { return ++asked == 4; };
  std::vector<int> out;
  GenerateStats s;
  const std::vector<int> prompt = {5, 9, 17};
  ASSERT_TRUE(e->generate(prompt, o, nullptr, nullptr, &s, &out).ok());
  EXPECT_EQ(s.stop_reason, "stopped");
  EXPECT_EQ(s.generated_tokens, 4);
  EXPECT_EQ(out.size(), 4u);
  std::vector<int> all = prompt;
  all.insert(all.end(), out.begin(), out.end());
  EXPECT_EQ(seq->tokens(), all);
  // The same 4 tokens as a run that was never asked to stop.
  o.sequence = nullptr;
  o.stop_requested = nullptr;
  o.max_tokens = 4;
  std::vector<int> plain;
  ASSERT_TRUE(e->generate(prompt, o, nullptr, nullptr, &s, &plain).ok());
  EXPECT_EQ(plain, out);
}

// A stop string ends the reply at the token whose text completes it: the text before it is
// given out, the tokens (that one too) are generated and kept.
TEST(Engine, AStopStringEndsTheReply) {
  std::unique_ptr<Engine> e;
  ASSERT_TRUE(Engine::load(kDir + "qwen35-tiny", &e).ok());
  std::vector<int> prompt;
  ASSERT_TRUE(e->tokenize("Hybrid models interleave", &prompt).ok());
  GenerateOptions o;
  o.stop_at_eos = false;
  o.max_tokens = 12;
  std::vector<int> free_run;
  std::string free_text;
  ASSERT_TRUE(
      e->generate(
           prompt, o, [&](std::string_view t) { free_text += t; }, nullptr, nullptr, &free_run)
          .ok());
  // The stop: the text of the first token after the second whose text is new and not empty.
  std::string before;
  size_t j = 0;
  for (size_t i = 0; i < free_run.size(); ++i) {
    const std::string t = e->token_text(free_run[i]);
    if (i >= 2 && !t.empty() && before.find(t) == std::string::npos && j == 0) j = i;
    if (j == 0) before += t;
  }
  ASSERT_GT(j, 0u);
  o.stop_strings = {e->token_text(free_run[j]), "never \x01 here"};
  const auto seq = e->new_sequence();
  o.sequence = seq.get();
  std::vector<int> out;
  std::string text;
  GenerateStats s;
  ASSERT_TRUE(e->generate(
                   prompt, o, [&](std::string_view t) { text += t; }, nullptr, &s, &out)
                  .ok());
  EXPECT_EQ(s.stop_reason, "stop_string");
  EXPECT_EQ(out, std::vector<int>(free_run.begin(), free_run.begin() + j + 1));
  EXPECT_EQ(text, before);
  EXPECT_EQ(seq->tokens().size(), prompt.size() + j + 1);
  o.stop_strings = {"a", ""};
  EXPECT_NE(
      e->generate(prompt, o, nullptr, nullptr, nullptr).message().find("a stop string is empty"),
      std::string::npos);
}

// A sequence refuses another engine, another KV cache dtype, and use after a failed call.
TEST(Engine, ASequenceRefusesWhatItCannotContinue) {
  std::unique_ptr<Engine> e, other;
  ASSERT_TRUE(Engine::synthetic("qwen3-next-tiny", 3, &e).ok());
  ASSERT_TRUE(Engine::synthetic("qwen3-next-tiny", 3, &other).ok());
  const std::vector<int> prompt = e->random_prompt(40, 5);
  const auto seq = e->new_sequence();
  GenerateOptions o;
  o.max_tokens = 2;
  o.sequence = seq.get();
  Status st = other->generate(prompt, o, nullptr, nullptr, nullptr);
  EXPECT_NE(st.message().find("the sequence was made by another engine"), std::string::npos)
      << st.message();
  ASSERT_TRUE(e->generate(prompt, o, nullptr, nullptr, nullptr).ok());  // bf16 cache (auto)
  o.kv_cache = "f32";
  st = e->generate(prompt, o, nullptr, nullptr, nullptr);
  EXPECT_NE(st.message().find("the sequence's KV cache holds bf16, this call asks for f32"),
            std::string::npos)
      << st.message();
  o.kv_cache = "auto";
  o.attn_products = "bf16";
  o.attn_placement =
      "layer";  // refused inside the prefill's first attention layer, after LA layers ran
  st = e->generate(prompt, o, nullptr, nullptr, nullptr);
  if (!attn_auto_bf16_products(DType::kBF16))
    GTEST_SKIP() << "no bf16 dot instruction: refused up front";
  ASSERT_FALSE(st.ok());
  o.attn_products = "auto";
  o.attn_placement = "balanced";
  st = e->generate(prompt, o, nullptr, nullptr, nullptr);
  EXPECT_NE(st.message().find("the sequence was left part-way by a call that failed"),
            std::string::npos)
      << st.message();
}

TEST(Engine, SavedStateResumesExactlyAsOneLongerRun) {
  std::unique_ptr<Engine> e;
  ASSERT_TRUE(Engine::load(kDir + "qwen35-tiny", &e).ok());
  const std::string path = ::testing::TempDir() + "/hanpu_state.bin";
  std::vector<int> p1, p2;
  ASSERT_TRUE(e->tokenize("Hybrid models interleave", &p1).ok());
  ASSERT_TRUE(e->tokenize(" linear attention layers", &p2).ok());
  GenerateOptions o;
  expect_resume_equals_one_run(*e, o, p1, p2, path);

  // Another model's state, a truncated file and a stranger are refused by name.
  std::unique_ptr<Engine> other;
  ASSERT_TRUE(Engine::synthetic("qwen3-next-tiny", 1, &other).ok());
  o.resume_state = path;
  Status st = other->generate({1, 2, 3}, o, nullptr, nullptr, nullptr);
  EXPECT_NE(
      st.message().find(
          "saved for a model with architecture (0 Qwen3.5, 1 Qwen3-Next) 0, this model has 1"),
      std::string::npos)
      << st.message();
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() / 2);
  st = e->generate(p2, o, nullptr, nullptr, nullptr);
  EXPECT_NE(st.message().find("file ends at byte"), std::string::npos) << st.message();
  std::ofstream(path, std::ios::binary | std::ios::trunc) << "not a state";
  st = e->generate(p2, o, nullptr, nullptr, nullptr);
  EXPECT_NE(st.message().find("not a hanpu state file"), std::string::npos) << st.message();
}

TEST(Sampler, OptionsBehaveAsDocumented) {
  const std::vector<float> logits = {0.0f, 2.0f, 1.0f, 2.0f, -5.0f};
  model::Sampler greedy({0.0f, 0, 1.0f, 1});
  EXPECT_EQ(greedy.sample(logits), 1);  // ties -> lowest id
  model::Sampler top1({1.0f, 1, 1.0f, 9});
  for (int i = 0; i < 20; ++i) EXPECT_EQ(top1.sample(logits), 1);
  model::Sampler nucleus({1.0f, 0, 0.3f, 9});  // the top token alone holds > 30%
  for (int i = 0; i < 20; ++i) EXPECT_EQ(nucleus.sample(logits), 1);
  // Temperature 1 over all tokens follows the softmax (loose bound, 20000 draws).
  model::Sampler full({1.0f, 0, 1.0f, 5});
  std::map<int, int> count;
  for (int i = 0; i < 20000; ++i) count[full.sample(logits)]++;
  double z = 0;
  for (float l : logits) z += std::exp(l);
  for (int id = 0; id < 5; ++id)
    EXPECT_NEAR(count[id] / 20000.0, std::exp(logits[id]) / z, 0.015) << id;
  // Seeded: the same seed draws the same sequence.
  model::Sampler a({0.8f, 3, 0.9f, 42}), b({0.8f, 3, 0.9f, 42});
  for (int i = 0; i < 50; ++i) EXPECT_EQ(a.sample(logits), b.sample(logits));
}

}  // namespace
}  // namespace hanpu
