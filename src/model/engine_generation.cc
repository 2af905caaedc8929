// Generation: Engine::generate's prefill and decode loop cut into steps of one forward call
// each (include/hanpu/engine.h), and Engine::generate as those steps run back to back.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "hanpu/engine.h"
#include "model/engine_impl.h"
#include "model/model.h"
#include "model/perplexity.h"
#include "model/sampler.h"
#include "model/state_file.h"
#include "model/text_stream.h"

namespace hanpu {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// The checks generate has always made on its options, before anything runs.
Status check_generate_options(const GenerateOptions& o, bool has_tokenizer,
                              const std::string& name) {
  if (o.max_tokens < 0 || o.prefill_chunk < 1) {
    return Status::Error(fmt::format("max_tokens {} must be >= 0 and prefill_chunk {} >= 1",
                                     o.max_tokens, o.prefill_chunk));
  }
  if (!(o.temperature >= 0.0f) || !(o.top_p > 0.0f && o.top_p <= 1.0f) || o.top_k < 0 ||
      !(o.min_p >= 0.0f && o.min_p <= 1.0f) || !(o.repetition_penalty > 0.0f) ||
      !std::isfinite(o.presence_penalty) || !std::isfinite(o.frequency_penalty)) {
    return Status::Error(fmt::format(
        "sampling: temperature {} must be >= 0, top_p {} in (0, 1], top_k {} >= 0, min_p {} in [0, "
        "1], "
        "repetition_penalty {} > 0, presence_penalty {} and frequency_penalty {} finite",
        o.temperature, o.top_p, o.top_k, o.min_p, o.repetition_penalty, o.presence_penalty,
        o.frequency_penalty));
  }
  if (o.logprobs && (o.top_logprobs < 0 || o.top_logprobs > 20))
    return Status::Error(fmt::format("top_logprobs {} must be in [0, 20]", o.top_logprobs));
  for (const std::string& stop : o.stop_strings) {
    if (stop.empty()) return Status::Error("a stop string is empty");
  }
  if (!o.stop_strings.empty() && !has_tokenizer) {
    return Status::Error(fmt::format("stop strings need text: {} has no tokenizer", name));
  }
  return Status::Ok();
}

// Token `id`'s log-probability under softmax(logits) and the `top` likeliest tokens'.
GeneratedToken token_logprobs(const std::vector<float>& logits, int id, int top) {
  const float mx = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float l : logits) sum += std::exp(static_cast<double>(l) - mx);
  const double lse = mx + std::log(sum);
  GeneratedToken t;
  t.id = id;
  t.logprob = static_cast<float>(logits[id] - lse);
  std::vector<int> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  const auto n = std::min<size_t>(static_cast<size_t>(top), ids.size());
  std::partial_sort(
      ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end(),
      [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  for (size_t i = 0; i < n; ++i)
    t.top.emplace_back(ids[i], static_cast<float>(logits[ids[i]] - lse));
  return t;
}

}  // namespace

struct Generation::Impl {
  const Engine::Impl* engine = nullptr;
  GenerateOptions o;
  std::vector<int> prompt;
  std::function<void(int64_t, int64_t)> on_progress;
  model::ForwardOptions fo;
  model::SequenceState fresh;
  model::SequenceState* state = nullptr;  // fresh, or the caller's sequence it continues
  bool continues_sequence = false;
  std::optional<model::Sampler> sampler;
  std::optional<model::TextStream> text;
  bool texts = false;  // generated tokens go through `text`
  int64_t prefilled = 0;
  int steps = 0;  // tokens sampled
  int last_token = -1, stop_token = -1;
  std::vector<float> logits;
  std::vector<int> generated;
  model::ForwardProfile prefill_prof, decode_prof;
  GenerateStats s;
  bool done = false;

  int pending = -1;  // sampled, not yet run through the model
  Status prefill_chunk();
  Status sample_next(bool* go_on);
  Status run_pending();
  Status decode_step();
  Status finish();
  // Hands the sequence as it stands to on_checkpoint (its KV rows shared, not copied).
  void checkpoint();
};

void Generation::Impl::checkpoint() {
  if (!o.on_checkpoint) return;
  model::SequenceState shared;
  if (!model::share_state(state, &shared).ok()) return;  // out of memory: no checkpoint
  auto q = std::make_unique<Sequence::Impl>();
  q->model = engine->model.get();
  q->state = std::move(shared);
  o.on_checkpoint(std::unique_ptr<Sequence>(new Sequence(std::move(q))));
}

Generation::Generation(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Generation::~Generation() = default;
bool Generation::done() const { return impl_->done; }
bool Generation::prefilling() const {
  return !impl_->done && impl_->prefilled < impl_->s.prompt_tokens;
}
int64_t Generation::prefilled() const { return impl_->prefilled; }
int64_t Generation::prompt_tokens() const { return impl_->s.prompt_tokens; }
const GenerateStats& Generation::stats() const { return impl_->s; }
const std::vector<int>& Generation::generated() const { return impl_->generated; }

Status Generation::step() {
  Impl& g = *impl_;
  if (g.done) return Status::Ok();
  const Status st = prefilling() ? g.prefill_chunk() : g.decode_step();
  if (!st.ok()) g.done = true;  // a continued sequence stays marked broken
  return st;
}

Status Generation::Impl::prefill_chunk() {
  const model::Model& m = *engine->model;
  const auto t0 = Clock::now();
  int64_t n = std::min<int64_t>(o.prefill_chunk, s.prompt_tokens - prefilled);
  for (int64_t at : o.checkpoints) {  // a chunk ends at each checkpoint
    if (at > prefilled && at - prefilled < n) n = at - prefilled;
  }
  const bool last_chunk = prefilled + n == s.prompt_tokens;  // only its logits are sampled from
  HANPU_RETURN_IF_ERROR(m.forward(prompt.data() + prefilled, n, state, fo,
                                  last_chunk ? &logits : nullptr, &prefill_prof,
                                  &engine->workspace));
  prefilled += n;
  s.prefill_ms += ms_since(t0);
  if (std::find(o.checkpoints.begin(), o.checkpoints.end(), prefilled) != o.checkpoints.end())
    checkpoint();
  if (on_progress) on_progress(prefilled, s.prompt_tokens);
  if (!last_chunk) return Status::Ok();
  s.prefill_split = model::time_split_of(prefill_prof);
  for (int id : state->tokens)
    sampler->observe_prompt(id);  // a resumed sequence's earlier tokens, then the prompt
  s.stop_reason = "max_tokens";
  return o.max_tokens == 0 ? finish() : Status::Ok();
}

// Samples the next token from the last logits; *go_on false when that ended the reply
// (finished here), else `pending` must run through the model (run_pending, or a batch).
Status Generation::Impl::sample_next(bool* go_on) {
  *go_on = false;
  const auto t0 = Clock::now();
  const int tok = sampler->sample(logits);
  const int step = steps++;
  const std::vector<int>& eos = engine->stop_tokens;
  if (o.stop_at_eos && std::find(eos.begin(), eos.end(), tok) != eos.end()) {
    s.stop_reason = "eos";
    stop_token = tok;
    s.decode_ms += ms_since(t0);
    return finish();
  }
  ++s.generated_tokens;
  if (o.on_token)
    o.on_token(o.logprobs ? token_logprobs(logits, tok, o.top_logprobs) : GeneratedToken{tok});
  sampler->observe_output(tok);
  last_token = tok;
  generated.push_back(tok);
  bool end = false;
  if (texts && text->append(engine->tokenizer->token_bytes(tok))) {
    s.stop_reason = "stop_string";  // the token is kept, as after a stop request
    end = true;
  } else if (step + 1 < o.max_tokens && o.stop_requested && o.stop_requested()) {
    s.stop_reason = "stopped";  // the token is kept; finish runs it where the sequence is kept
    end = true;
  } else if (step + 1 >= o.max_tokens) {
    end = true;
  }
  s.decode_ms += ms_since(t0);
  if (end) return finish();
  if (o.between_decode_steps) o.between_decode_steps();  // outside every time reported
  pending = tok;
  *go_on = true;
  return Status::Ok();
}

Status Generation::Impl::run_pending() {
  const auto f0 = Clock::now();
  HANPU_RETURN_IF_ERROR(
      engine->model->forward(&pending, 1, state, fo, &logits, &decode_prof, &engine->workspace));
  const double ms = ms_since(f0);
  s.decode_step_ms.push_back(ms);
  s.decode_ms += ms;
  return Status::Ok();
}

Status Generation::Impl::decode_step() {
  bool go_on = false;
  HANPU_RETURN_IF_ERROR(sample_next(&go_on));
  return go_on ? run_pending() : Status::Ok();
}

Status Generation::Impl::finish() {
  const model::Model& m = *engine->model;
  done = true;
  if (text) text->finish();
  s.decode_split = model::time_split_of(decode_prof);
  if (!o.save_state.empty() || o.sequence != nullptr || o.checkpoint_reply) {
    // The last token sampled was not yet run through the model. A stop token is kept too: the
    // model ended its turn with it, and a chat continued from here opens the next one after it.
    const int unrun = s.stop_reason == "eos" ? stop_token : last_token;
    if (unrun >= 0) {
      HANPU_RETURN_IF_ERROR(m.forward(&unrun, 1, state, fo, &logits, nullptr, &engine->workspace));
    }
  }
  if (o.checkpoint_reply) checkpoint();
  if (o.sequence != nullptr) {
    Sequence::Impl& q = *o.sequence->impl_;
    if (!continues_sequence) q.state = std::move(fresh);
    q.broken = false;
    state = &*q.state;
  }
  if (!o.save_state.empty()) {
    HANPU_RETURN_IF_ERROR(model::save_state(m, *state, o.save_state));
    s.saved_tokens = state->position;
  }
  return Status::Ok();
}

Status Engine::start(const std::vector<int>& prompt, const GenerateOptions& o,
                     std::function<void(std::string_view)> on_text,
                     std::function<void(int64_t, int64_t)> on_progress,
                     std::unique_ptr<Generation>* out) {
  const model::Model& m = *impl_->model;
  if (prompt.empty()) return Status::Error("the prompt has no tokens");
  HANPU_RETURN_IF_ERROR(check_generate_options(o, impl_->tokenizer.has_value(), impl_->name));
  for (int64_t at : o.checkpoints) {
    if (at < 1 || at > static_cast<int64_t>(prompt.size()))
      return Status::Error(
          fmt::format("checkpoint offset {} is outside the prompt's 1 .. {}", at, prompt.size()));
  }
  auto g = std::make_unique<Generation::Impl>();
  g->engine = impl_.get();
  g->o = o;
  g->prompt = prompt;
  g->on_progress = std::move(on_progress);
  GenerateStats& s = g->s;
  s.prompt_tokens = static_cast<int64_t>(prompt.size());
  DType kv_dtype{};
  HANPU_RETURN_IF_ERROR(resolve_run(o, &g->fo, &kv_dtype, &s.kv_cache, &s.attn_bf16_products));
  model::SequenceState* held = nullptr;  // the caller's sequence, if it has one to continue
  HANPU_RETURN_IF_ERROR(sequence_to_continue(o, kv_dtype, s.kv_cache, &held));
  if (held == nullptr) {
    g->fresh = m.new_state(kv_dtype);
    if (!o.resume_state.empty())
      HANPU_RETURN_IF_ERROR(model::load_state(m, o.resume_state, &g->fresh, kv_dtype));
  }
  g->continues_sequence = held != nullptr;
  g->state = held != nullptr ? held : &g->fresh;
  model::SequenceState& state = *g->state;
  s.resumed_tokens = state.position;
  // The KV caches the whole sequence may need, against the machine's memory: a prompt or
  // max_tokens too large for it is refused here by name, not ended by the allocator or the
  // OOM killer part way through.
  const model::ModelConfig& c = m.config();
  int64_t kv_row_bytes = 0;
  for (int i = 0; i < c.layers; ++i) {
    if (c.layer_kinds[i] == model::LayerKind::kFullAttention)
      kv_row_bytes += 2 * int64_t{c.kv_heads} * c.head_dim * dtype_size(kv_dtype);
  }
  const int64_t whole = state.position + s.prompt_tokens + o.max_tokens;
  const int64_t memory = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
  if (memory > 0 && whole * kv_row_bytes > memory) {
    return Status::Error(fmt::format(
        "a sequence of {} tokens ({} prompt + {} max_tokens{}) needs {:.1f} GiB of KV cache, "
        "more than this machine's {:.1f} GiB of memory",
        whole, s.prompt_tokens, o.max_tokens,
        state.position > 0 ? fmt::format(" after {} resumed", state.position) : "",
        static_cast<double>(whole * kv_row_bytes) / (1 << 30),
        static_cast<double>(memory) / (1 << 30)));
  }
  // From here the state changes: a failure leaves the caller's sequence part-way.
  if (held != nullptr) o.sequence->impl_->broken = true;
  // Room in the KV caches for the prompt and the decoded tokens, before prefill. The caches
  // grow by doubling from 256 rows, so a power-of-two prompt filled them exactly and the first
  // decoded token paid a copy of every layer's cache into fresh pages. The room is capped at
  // twice the prompt, so a huge max_tokens never reserves more than that; beyond, appends
  // double as before.
  const int64_t prompt_end = state.position + s.prompt_tokens;
  const int64_t room = prompt_end + std::min<int64_t>(o.max_tokens, prompt_end);
  for (auto& cache : state.kv) {
    if (cache) HANPU_RETURN_IF_ERROR(cache->reserve(room));
  }
  g->sampler.emplace(model::SamplingParams{o.temperature, o.top_k, o.top_p, o.seed,
                                           o.repetition_penalty, o.min_p, o.presence_penalty,
                                           o.frequency_penalty});
  // Text goes out through the stream, which also watches for stop strings.
  g->texts = impl_->tokenizer && (on_text || !o.stop_strings.empty());
  g->text.emplace(o.stop_strings, std::move(on_text));
  *out = std::unique_ptr<Generation>(new Generation(std::move(g)));
  return Status::Ok();
}

namespace {

// Generations whose forward calls may share one batch: the same cores and kernels.
bool same_run(const model::ForwardOptions& a, const model::ForwardOptions& b) {
  return a.threads == b.threads && a.projection == b.projection;
}

}  // namespace

void Engine::step_together(const std::vector<Generation*>& gens, int prefill_chunks,
                           std::vector<Status>* results) {
  results->assign(gens.size(), Status::Ok());
  std::vector<size_t> batch;  // decoding generations that go on, by index
  for (size_t i = 0; i < gens.size(); ++i) {
    Generation& g = *gens[i];
    if (g.done()) continue;
    if (g.prefilling()) {
      if (prefill_chunks-- > 0) (*results)[i] = g.step();
      continue;
    }
    bool go_on = false;
    Status st = g.impl_->sample_next(&go_on);
    if (!st.ok()) g.impl_->done = true;
    (*results)[i] = st;
    if (go_on) batch.push_back(i);
  }
  // One forward call for all that share the first one's run options; the rest alone.
  std::vector<size_t> together, alone;
  for (size_t i : batch) {
    (same_run(gens[i]->impl_->fo, gens[batch[0]]->impl_->fo) ? together : alone).push_back(i);
  }
  if (together.size() == 1) {
    alone.push_back(together[0]);
    together.clear();
  }
  for (size_t i : alone) {
    Status st = gens[i]->impl_->run_pending();
    if (!st.ok()) gens[i]->impl_->done = true;
    (*results)[i] = st;
  }
  if (together.empty()) return;
  const int n = static_cast<int>(together.size());
  std::vector<int> tokens;
  std::vector<model::SequenceState*> states;
  for (size_t i : together) {
    tokens.push_back(gens[i]->impl_->pending);
    states.push_back(gens[i]->impl_->state);
  }
  const model::Model& m = *impl_->model;
  model::Workspace& ws = impl_->workspace;
  float* logits =
      ws.stack(model::Workspace::Stack::kHeadLogits, static_cast<size_t>(n) * m.config().vocab);
  model::ForwardProfile prof;
  const auto t0 = std::chrono::steady_clock::now();
  const Status st = m.decode_batch(tokens.data(), n, states.data(), gens[together[0]]->impl_->fo,
                                   logits, &prof, &ws);
  const double ms = ms_since(t0);
  for (int r = 0; r < n; ++r) {
    Generation::Impl& g = *gens[together[r]]->impl_;
    (*results)[together[r]] = st;
    if (!st.ok()) {
      g.done = true;
      continue;
    }
    const float* row = logits + static_cast<size_t>(r) * m.config().vocab;
    g.logits.assign(row, row + m.config().vocab);
    g.s.decode_step_ms.push_back(ms);
    g.s.decode_ms += ms;
    g.decode_prof.la_ms += prof.la_ms;  // the whole batch's step, which this one waited for
    g.decode_prof.attn_ms += prof.attn_ms;
    g.decode_prof.mlp_ms += prof.mlp_ms;
    g.decode_prof.other_ms += prof.other_ms;
    g.decode_prof.la_kernel_ms += prof.la_kernel_ms;
    g.decode_prof.attn_kernel_ms += prof.attn_kernel_ms;
  }
}

Status Engine::generate(const std::vector<int>& prompt, const GenerateOptions& o,
                        const std::function<void(std::string_view)>& on_text,
                        const std::function<void(int64_t, int64_t)>& on_progress,
                        GenerateStats* stats, std::vector<int>* generated) {
  std::unique_ptr<Generation> g;
  HANPU_RETURN_IF_ERROR(start(prompt, o, on_text, on_progress, &g));
  while (!g->done()) HANPU_RETURN_IF_ERROR(g->step());
  if (generated != nullptr)
    generated->insert(generated->end(), g->generated().begin(), g->generated().end());
  if (stats != nullptr) *stats = g->stats();
  return Status::Ok();
}

}  // namespace hanpu
