// Running a hybrid model: load a checkpoint (or build a synthetic one), tokenize, prefill in
// bounded chunks, decode with sampling, stream text out, report timings.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hanpu/dtype.h"
#include "hanpu/status.h"

namespace hanpu {

namespace model {
struct SequenceState;   // the engine's own (src/model/model.h)
struct ForwardOptions;  // ditto
struct PerplexityRun;   // ditto (src/model/perplexity.h)
}  // namespace model

// One turn of a conversation for the chat template: role "system", "user" or "assistant".
struct ChatMessage {
  std::string role;
  std::string content;
};

struct ChatOptions {
  bool add_generation_prompt = true;  // end with the assistant's opening, ready to generate
  // Qwen3 / Qwen3.5 templates: false opens the reply with an empty <think></think> block
  // (no reasoning); unset leaves the variable undefined, the template's default.
  std::optional<bool> enable_thinking;
};

class Sequence;

// How the model runs, for generation and scoring alike.
struct ModelRunOptions {
  std::string la_strategy = "hanpu";        // any of la_strategies()
  std::string attn_placement = "balanced";  // any of attn_placements()
  int threads = 0;                          // 0: HANPU_THREADS or every core
  // Prompt tokens per forward call. It bounds a prefill's temporaries (a layer's activations
  // grow with the rows of a call); 256 measured level with 1024 for speed on the 0.8B shape
  // (quantized weights are decoded once per call) and holds a 512-token prefill of its
  // Q4_K_M file within 15% over the file (docs/performance.md).
  int prefill_chunk = 256;
  // Storage of the attention layers' KV caches: "auto" (the projections' dtype: a bf16 model
  // keeps a bf16 cache, an fp32 one an fp32 cache), "f32", "bf16" or "f16". A 16-bit cache
  // halves the bytes each decode step reads.
  std::string kv_cache = "auto";
  // The attention prefill's products (AttnProducts, hanpu/attn.h): "auto" (bf16 on a bf16 KV
  // cache where the CPU has the bf16 dot instruction, else fp32), "f32", or "bf16" (an error
  // up front without the instruction). Decode's attention is fp32 (memory-bound).
  std::string attn_products = "auto";
  // The projections' kernel, any of projection_kernels() (hanpu/machine.h): "auto" (the
  // HANPU_PROJECTION environment variable where set, else the fastest this CPU has), or the
  // fastest one allowed: "amx", "dot", "pairs", "blas", "fma" (an error where this CPU lacks it).
  std::string projection = "auto";
};

// GenerateOptions::on_token's argument.
struct GeneratedToken {
  int id = -1;
  float logprob = 0;                       // with GenerateOptions::logprobs
  std::vector<std::pair<int, float>> top;  // top_logprobs (id, log-probability), likeliest first
};

struct GenerateOptions : ModelRunOptions {
  int max_tokens = 64;  // tokens to generate (0: prefill only)
  // Sampling: these defaults are greedy; Engine::default_generate_options() starts from the
  // checkpoint's generation_config.json instead, as transformers and vLLM do.
  float temperature = 0.0f;  // 0: greedy
  int top_k = 0;             // 0: off
  float top_p = 1.0f;        // 1: off
  float min_p = 0.0f;        // 0: off; else drops tokens below min_p x the top one's probability
  // 1: off; > 1 divides the logit of each token of the prompt and the output so far (multiplies
  // it where negative), as transformers' repetition_penalty; a resumed sequence's earlier
  // tokens count as prompt.
  float repetition_penalty = 1.0f;
  // 0: off; subtracted from the logit of each token the output already holds (vLLM's and
  // OpenAI's presence_penalty; Qwen suggests 0-2 against endless repetitions).
  float presence_penalty = 0.0f;
  // 0: off; times the output holds a token, times this, subtracted from its logit (OpenAI's
  // and vLLM's frequency_penalty).
  float frequency_penalty = 0.0f;
  uint64_t seed = 0;
  bool stop_at_eos = true;  // stop at any of EngineInfo::stop_tokens
  // The reply ends where its text first holds one of these (stop reason "stop_string"); the
  // text from there on is not given to on_text, as vLLM's `stop`. The tokens stay in the
  // sequence. Needs a tokenizer.
  std::vector<std::string> stop_strings;
  // Continue a saved sequence (the prompt is appended after it), and/or save the sequence
  // (prompt and generated tokens, ending with the stop token where the run stopped at one)
  // when done, to resume later. Empty: off.
  std::string resume_state;
  std::string save_state;
  // Continue this in-memory sequence (Engine::new_sequence; a conversation across calls
  // without files) and leave it holding everything so far, as save_state would save it. With
  // resume_state too, the file's sequence replaces what it held. Null: a fresh sequence.
  Sequence* sequence = nullptr;
  // Asked after each generated token: true ends the reply there (stop reason "stopped"), as
  // Ctrl-C does in `hanpu run -i`. Null: never.
  std::function<bool()> stop_requested;
  // Each generated token (not the stop token), as sampled: its id and, with logprobs set, its
  // log-probability and the `top_logprobs` likeliest tokens' under the model's own
  // distribution (softmax of the logits, before temperature, penalties and filters: OpenAI's
  // and vLLM's logprobs). Null: nothing.
  bool logprobs = false;
  int top_logprobs = 0;  // 0-20 with logprobs
  std::function<void(const GeneratedToken&)> on_token;
  // Checkpoints, for a prefix cache: the sequence as it stands after the prompt tokens at
  // these offsets (1 .. the prompt's length; the prefill cuts its chunks there) and, with
  // checkpoint_reply, after the reply (its last token, or the stop token it ended at, run
  // through), each handed to on_checkpoint as a Sequence of its own to continue later
  // (GenerateOptions::sequence after Engine::copy_sequence).
  std::vector<int64_t> checkpoints;
  bool checkpoint_reply = false;
  std::function<void(std::unique_ptr<Sequence>)> on_checkpoint;
  // Benchmarks: called before each decode step's forward call, outside every time reported
  // (e.g. a memory-bandwidth probe beside each step). Null: nothing.
  std::function<void()> between_decode_steps;
};

// Forward time by part of the model: whole LA / attention blocks (projections included), MLP
// or MoE blocks, the rest (embedding, norms, the LM head); and the LA / attention kernels alone.
struct TimeSplit {
  double la_ms = 0, attn_ms = 0, mlp_ms = 0, other_ms = 0;
  double la_kernel_ms = 0, attn_kernel_ms = 0;
  double total_ms() const { return la_ms + attn_ms + mlp_ms + other_ms; }
};

struct GenerateStats {
  int64_t prompt_tokens = 0, generated_tokens = 0;
  int64_t resumed_tokens = 0;  // tokens of the resumed sequence before this prompt
  int64_t saved_tokens = 0;    // tokens of the sequence saved to GenerateOptions::save_state
  double prefill_ms = 0, decode_ms = 0;
  TimeSplit prefill_split;  // of the prefill's forward calls
  TimeSplit decode_split;  // of the decode steps' forward calls (sampling is the rest of decode_ms)
  std::vector<double>
      decode_step_ms;               // each decode step's forward call (the last token needs none)
  std::string stop_reason;          // "eos", "max_tokens", "stop_string", "stopped"
                                    // (GenerateOptions::stop_requested)
  std::string kv_cache;             // the KV caches' dtype the run used ("auto" resolved)
  bool attn_bf16_products = false;  // the attention prefill's products were bf16 ("auto" resolved)
};

// Perplexity as llama.cpp's llama-perplexity measures it, so the two compare on one text:
// the tokens are cut into chunks of `context` (the rest dropped), each run as a fresh
// sequence, and in each the second half is scored: positions context/2 .. context-2 predict
// the tokens after them. No BOS is put in front (Qwen's tokenizers add none).
struct PerplexityOptions : ModelRunOptions {
  int context = 512;   // tokens per chunk (llama.cpp's -c)
  int max_chunks = 0;  // 0: every whole chunk of the text
  // llama-perplexity's --kl-divergence-base FILE: perplexity also writes the tokens and every
  // scored position's log-probabilities to FILE, in llama.cpp's format (16 bits a token of
  // the vocabulary), for Engine::kl_divergence of another model (a quant of this one) later.
  std::string save_logprobs;
};

struct PerplexityStats {
  int64_t text_tokens = 0;  // tokens of the whole text
  int chunks = 0;           // chunks scored so far (of chunks_total)
  int chunks_total = 0;
  int64_t scored_tokens = 0;
  int64_t run_tokens =
      0;  // tokens run through the model: context - 1 a chunk (the last predicts nothing scored)
  double nll_sum = 0, nll2_sum = 0;  // sums of -log p and its square over the scored tokens
  double ms = 0;                     // the forward calls and scoring, so far
  TimeSplit split;                   // of that time
  double ppl() const;                // exp(mean -log p)
  double ppl_error()
      const;  // llama.cpp's +/-: ppl x the standard error of the mean -log p (0 below 2 tokens)
  double tokens_per_s() const;  // run_tokens per second of ms
};

// Engine::kl_divergence's figures, as llama-perplexity --kl-divergence prints them: this
// model's (Q) perplexity, the base's from its saved log-probabilities, and per scored token
// the KL divergence KL(base || Q) and the change in the probability of the right token.
struct KlDivergenceStats {
  PerplexityStats q;  // this model's perplexity (its nll sums) and timings
  double nll_base_sum = 0, nll_base2_sum = 0, nll_nll_base_sum = 0;
  double kld_sum = 0, kld2_sum = 0;
  double p_diff_sum = 0, p_diff2_sum = 0, p_diff4_sum = 0;
  float max_p_diff = 0;
  int64_t same_top = 0;            // tokens whose most likely next token is the base's
  int64_t count = 0;               // scored tokens
  std::vector<float> kld, p_diff;  // per scored token, in order
};

struct EngineInfo {
  std::string name, architecture;
  int layers = 0, la_layers = 0, attn_layers = 0, hidden = 0, vocab = 0;
  int64_t parameters = 0, weight_bytes = 0;
  // Memory held beside the weights for decode: rows repacked for its kernels (HANPU_REPACK).
  int64_t decode_copy_bytes = 0;
  int64_t max_positions = 0;  // the trained context (max_position_embeddings); 0: not given
  std::string weight_dtype;   // of the projections
  int64_t decode_bytes_per_token = 0;  // weights a decode step reads (all but the embedding table)
  // What a decode step moves besides the weights: the LA layers' recurrent and conv state
  // (fp32; read and written back every step), and the KV cache, which grows by one position
  // per token and is read whole (K and V values per position, over all attention layers).
  int64_t la_state_bytes = 0;
  int64_t kv_values_per_position = 0;
  // Tokens that end generation: config.json's eos_token_id, generation_config.json's, the
  // tokenizer's eos token (tokenizer_config.json; <|im_end|> in Qwen's chat checkpoints), or
  // a GGUF's eos / eot / eom ids (llama.cpp's end-of-generation set). Sorted, distinct.
  std::vector<int> stop_tokens;
  // Where the sampling defaults of default_generate_options() came from: the checkpoint's
  // generation_config.json or a GGUF's general.sampling.* keys, or empty (none: greedy).
  std::string sampling_origin;
};

// A sequence kept in memory between Engine::generate calls (GenerateOptions::sequence). Made
// by Engine::new_sequence and tied to that engine. Its KV cache dtype is fixed by the first
// call that fills it; a call that fails part way leaves it unusable (an error says so).
class Sequence {
 public:
  ~Sequence();
  const std::vector<int>& tokens() const;  // every token it holds, in order
  int64_t bytes() const;                   // the memory its states and KV caches hold
  // The memory it holds alone (LA states, the KV rows it appended), with each block of KV rows
  // it shares with other sequences (a prefix both went on from) given to `on_shared` with the
  // block's identity instead: a cache of sequences counts a shared block once.
  int64_t bytes(const std::function<void(const void* block, int64_t bytes)>& on_shared) const;

 private:
  friend class Engine;
  friend class Generation;
  struct Impl;
  explicit Sequence(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class Engine;

// A generation run one forward call at a time (Engine::start), so that a scheduler can
// interleave several: each step() runs the next prompt chunk, or samples a token and runs it
// through the model. What Engine::generate does in one call, with the same options, text,
// stats and sequence handling. The engine must outlive it; steps take turns with the
// engine's other calls (see Engine). Dropping it part way leaves a GenerateOptions::sequence
// it continued unusable (as a failed call does) and saves nothing.
class Generation {
 public:
  ~Generation();
  // One forward call (none once done()). An error ends the generation.
  Status step();
  bool done() const;
  // Still in the prompt (the next step runs a prompt chunk).
  bool prefilling() const;
  // The prompt tokens run so far, and the prompt's length.
  int64_t prefilled() const;
  int64_t prompt_tokens() const;
  const GenerateStats& stats() const;  // complete once done()
  const std::vector<int>& generated() const;

 private:
  friend class Engine;
  struct Impl;
  explicit Generation(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Threads: the const calls that only read the checkpoint (info, has_tokenizer, token_text,
// tokenize, apply_chat_template, tokenize_chat, default_generate_options) may run from several
// threads at once. Everything else takes one call at a time per Engine: guard it with a lock,
// or use one Engine per thread. A Sequence belongs to one call at a time. Engines are
// independent, but share the process's worker threads, so concurrent generations take turns
// on the cores (docs/library.md).
class Engine {
 public:
  ~Engine();
  // A checkpoint: a folder with config.json, safetensors (single or sharded) and
  // tokenizer.json (or Kimi's tiktoken.model), or a .gguf file. `weights`: how to hold the
  // projections — "auto" (the checkpoint's dtype; a quantized GGUF's own blocks), "f32", "bf16" or
  // "f16" (a quantized GGUF decoded into it), or "q8_0" / "q4_0" (plain projections quantized at
  // load). on_progress(layers done, layers) while the weights convert.
  static Status load(const std::string& dir, std::unique_ptr<Engine>* out,
                     const std::string& weights = "auto",
                     const std::function<void(int, int)>& on_progress = nullptr);
  // A synthetic model of a real architecture's shape with seeded random weights (no
  // tokenizer: prompts are random token ids), for benchmarks. Names: synthetic_models().
  // "auto" weights are bf16, as the real checkpoints ship.
  static Status synthetic(const std::string& name, uint64_t seed, std::unique_ptr<Engine>* out,
                          const std::string& weights = "auto",
                          const std::function<void(int, int)>& on_progress = nullptr);
  static std::vector<std::string> synthetic_models();

  EngineInfo info() const;
  // GenerateOptions with the checkpoint's sampling (generation_config.json read as transformers
  // reads it: do_sample false or absent is greedy; true takes its temperature, top_k, top_p and
  // min_p, transformers' 1.0 / 50 / 1.0 / off where it has none; repetition_penalty either
  // way). A GGUF: its general.sampling.temp / top_k / top_p / min_p, as llama.cpp takes them
  // (sampling when temp > 0). Greedy for checkpoints with neither and for synthetic models.
  GenerateOptions default_generate_options() const;
  // The text of token `id` (its bytes; "" without a tokenizer or out of range).
  std::string token_text(int id) const;
  // The KV-cache dtype GenerateOptions::kv_cache names for this model ("auto" resolved), or
  // an error naming the bad value.
  Status kv_cache_dtype(const std::string& kv_cache, std::string* resolved) const;
  bool has_tokenizer() const;
  // Token ids of plain text (special tokens written in it, e.g. <|im_start|>, become their ids).
  Status tokenize(std::string_view text, std::vector<int>* ids) const;
  // The checkpoint's chat template (Jinja, as transformers' apply_chat_template runs it)
  // applied to `messages`, as text and as token ids. Checkpoints without a template get
  // ChatML, which is what Qwen's templates produce for plain conversations.
  Status apply_chat_template(const std::vector<ChatMessage>& messages, const ChatOptions& options,
                             std::string* text) const;
  Status tokenize_chat(const std::vector<ChatMessage>& messages, const ChatOptions& options,
                       std::vector<int>* ids) const;
  // A chat continuing the saved sequence at `state_path` (GenerateOptions::resume_state),
  // whose earlier turns are already in it: `messages` as the template renders them after an
  // assistant reply, opened by what the saved reply's ending still lacks (ChatML: "\n" after
  // a reply that stopped at <|im_end|>, "<|im_end|>\n" after one cut off by max_tokens).
  Status continue_chat(const std::string& state_path, const std::vector<ChatMessage>& messages,
                       const ChatOptions& options, std::string* text) const;
  // The same after an in-memory sequence (an empty one: `messages` rendered as a new chat).
  Status continue_chat(const Sequence& sequence, const std::vector<ChatMessage>& messages,
                       const ChatOptions& options, std::string* text) const;
  // An empty sequence for GenerateOptions::sequence.
  std::unique_ptr<Sequence> new_sequence() const;
  // A copy of `sequence` (its states and KV caches), to continue apart from it; null if it is
  // another engine's or unusable.
  std::unique_ptr<Sequence> copy_sequence(const Sequence& sequence) const;
  // Saves `sequence` as GenerateOptions::save_state would (a file to resume from).
  Status save_sequence(const Sequence& sequence, const std::string& path) const;
  // Replaces the checkpoint's template with the Jinja file `path` (an error names the line
  // and column of a syntax error).
  Status set_chat_template_file(const std::string& path);
  // Where the template in use came from: a file (and key), or "built-in ChatML".
  std::string chat_template_origin() const;
  // n token ids drawn uniformly from the vocabulary (seeded): benchmark prompts.
  std::vector<int> random_prompt(int n, uint64_t seed) const;

  // The perplexity of `tokens` (PerplexityOptions); on_chunk, if set, gets the running
  // figures after each chunk.
  Status perplexity(const std::vector<int>& tokens, const PerplexityOptions& options,
                    const std::function<void(const PerplexityStats&)>& on_chunk,
                    PerplexityStats* stats) const;

  // llama-perplexity --kl-divergence: runs the tokens saved in `base_file` (written by
  // perplexity with save_logprobs, by hanpu or llama.cpp) in its chunks and compares this
  // model's distribution with the saved one at every scored position. options.context is
  // the file's; max_chunks limits the chunks. Errors name what is wrong with the file (magic,
  // sizes, a vocabulary other than this model's, a token id or scale out of range).
  Status kl_divergence(const std::string& base_file, const PerplexityOptions& options,
                       const std::function<void(const KlDivergenceStats&)>& on_chunk,
                       KlDivergenceStats* stats) const;

  // A generation of `prompt` run step by step (Generation): the options are checked and the
  // sequence set up here, nothing runs through the model yet. on_text and on_progress as for
  // generate.
  Status start(const std::vector<int>& prompt, const GenerateOptions& options,
               std::function<void(std::string_view)> on_text,
               std::function<void(int64_t, int64_t)> on_progress, std::unique_ptr<Generation>* out);

  // One turn of several of this engine's generations, as a server's scheduler runs them: the
  // first `prefill_chunks` of them still in their prompt run their next chunk each; every
  // decoding one samples its next token, and those that go on run through the model
  // together, one pass over the weights for all (continuous batching; Model::decode_batch).
  // The same tokens as stepping each alone. results[i] is generations[i]'s outcome (an error
  // ends that generation).
  void step_together(const std::vector<Generation*>& generations, int prefill_chunks,
                     std::vector<Status>* results);

  // Prefills `prompt` ids, then decodes. on_text gets each piece of text as soon as it is
  // complete UTF-8 (null: no text); on_progress(done, total) during the prefill.
  Status generate(const std::vector<int>& prompt, const GenerateOptions& options,
                  const std::function<void(std::string_view)>& on_text,
                  const std::function<void(int64_t, int64_t)>& on_progress, GenerateStats* stats,
                  std::vector<int>* generated = nullptr);

 private:
  friend class Generation;
  struct Impl;
  explicit Engine(std::unique_ptr<Impl> impl);
  Status continue_chat_after(const std::vector<int>& ids, const std::vector<ChatMessage>& messages,
                             const ChatOptions& options, std::string* text) const;
  // The forward options, KV-cache dtype (and its name) and whether the attention prefill's
  // products are bf16, from `o` ("auto" resolved; bad names are errors).
  Status resolve_run(const ModelRunOptions& o, model::ForwardOptions* forward, DType* kv_dtype,
                     std::string* kv_name, bool* bf16_products) const;
  // The model-level run of a perplexity or KL divergence call, from `o`.
  Status perplexity_run(const PerplexityOptions& o, model::PerplexityRun* run) const;
  // GenerateOptions::sequence checked; `held` its state when the call continues it.
  Status sequence_to_continue(const GenerateOptions& o, DType kv_dtype, const std::string& kv_name,
                              model::SequenceState** held) const;
  std::unique_ptr<Impl> impl_;
};

// The model that ships with the repository (a tiny random-weight Qwen3.5 checkpoint), so a
// fresh checkout runs end to end; empty if the source tree is not where it was built.
std::string default_model_dir();

}  // namespace hanpu
