// A loaded hybrid model and the forward pass over a batch of new tokens of one sequence:
// embeddings -> per layer: zero-centred RMSNorm -> (GDN: projections, causal conv + SiLU,
// gates, the LA prefill kernel with the sequence's recurrent state, gated RMSNorm, out
// projection | attention: projections, q/k RMSNorm, partial RoPE, KV cache append, the fused
// attention kernel, sigmoid output gate, out projection) -> residual -> RMSNorm -> MLP or MoE
// -> residual -> final norm -> logits of the last token (forward) or of every position asked
// for (score). The last layer updates the state from every token but runs its output path and
// MLP only for the positions whose logits are wanted.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/aligned_vector.h"

#include "cpu/nn/projection_kernels.h"
#include "hanpu/attn.h"
#include "hanpu/kv_cache.h"
#include "model/layer_kv.h"
#include "hanpu/status.h"
#include "model/generation_config.h"
#include "model/model_config.h"
#include "model/model_weights.h"
#include "model/tokenizer.h"
#include "model/workspace.h"

namespace hanpu::model {

// How an MLA layer attends (mla_layer.h): over keys and values up-projected from the cached
// latents, or absorbed (queries into the latent space, every head over the latent rows);
// kAuto: whichever takes fewer multiply-adds (mla_runs_absorbed).
enum class MlaForm : uint8_t { kAuto, kAbsorbed, kDecompressed };

struct ForwardOptions {
  std::string la_strategy = "hanpu";  // any of la_strategies()
  std::string attn_placement = "balanced";
  AttnProducts attn_products = AttnProducts::kAuto;  // the attention prefill's (hanpu/attn.h)
  int threads = 0;                                   // 0: HANPU_THREADS or every core
  // The projections' fastest kernel (cpu/nn/projection_kernels.h; kAuto: HANPU_PROJECTION or
  // the fastest this CPU has).
  cpu::ProjectionKernel projection = cpu::ProjectionKernel::kAuto;
  MlaForm mla_form = MlaForm::kAuto;
};

// Per-sequence state: what decode needs from everything before it.
struct SequenceState {
  int64_t position = 0;     // tokens consumed so far
  std::vector<int> tokens;  // their ids, position of them: what penalties and a resume see
  std::vector<std::vector<float>> conv;  // per layer (GDN): [kernel - 1, channels]
  std::vector<AlignedFloats>
      recurrent;  // per layer (GDN): [HV, K, V], updated in place by the LA kernel
  std::vector<std::unique_ptr<LayerKv>> kv;  // per layer (attention)
};

// A copy of `s` to continue apart from it: its own LA states, the KV rows it shares by
// reference and the rows it appended since copied (no room ahead).
Status copy_state(const SequenceState& s, SequenceState* out);
// A checkpoint of `s`: its LA states copied, and every KV row held by reference; the rows `s`
// appended since its last share are sealed into a shared segment first (layer_kv.h).
Status share_state(SequenceState* s, SequenceState* out);
// The bytes `s` holds: conv and recurrent states, its own KV rows as allocated, and each shared
// KV segment (`on_shared`, where given, sees those instead, each with its identity, so that
// sequences sharing one can count it once).
int64_t state_bytes(const SequenceState& s,
                    const std::function<void(const void* id, int64_t bytes)>& on_shared = {});

// Where forward time went (milliseconds, summed over calls).
struct ForwardProfile {
  double la_ms = 0, attn_ms = 0, mlp_ms = 0, other_ms = 0;  // whole blocks
  double la_kernel_ms = 0, attn_kernel_ms = 0;              // of which the LA / attention kernels
  double total() const { return la_ms + attn_ms + mlp_ms + other_ms; }
};

class Model {
 public:
  Model(ModelConfig config, ModelWeights weights)
      : config_(std::move(config)), weights_(std::move(weights)) {}

  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }

  // A fresh sequence; its attention layers' KV caches hold keys and values in kv_dtype.
  SequenceState new_state(DType kv_dtype = DType::kF32) const;

  // Each step draws its scratch memory from `ws` (workspace.h), the caller's; without one it
  // makes a workspace for the call alone, whose memory is fresh every time (fine for a call,
  // not for a loop of steps).

  // Runs `n` tokens through the model after the state's position, updates the state, and
  // writes the logits of the last token into `logits` [vocab] (null: no head, as for a
  // prompt chunk before the last). Token ids are checked.
  Status forward(const int* tokens, int64_t n, SequenceState* state, const ForwardOptions& options,
                 std::vector<float>* logits, ForwardProfile* profile = nullptr,
                 Workspace* ws = nullptr) const;

  // One decode step of n sequences together (continuous batching): token t runs after
  // everything states[t] holds, each state is updated as forward would update it, and
  // logits [n, vocab] gets each one's next-token logits. The weights are read once for all n
  // rows; the per-sequence work (conv, LA step, RoPE, KV cache, attention) stays apart. The
  // states must be distinct.
  Status decode_batch(const int* tokens, int n, SequenceState* const* states,
                      const ForwardOptions& options, float* logits,
                      ForwardProfile* profile = nullptr, Workspace* ws = nullptr) const;

  // Runs `n` tokens as forward does and scores positions from .. n-1: logprobs[t - from] =
  // log p(next[t - from] | the sequence up to and including token t), in double from fp32
  // logits (a perplexity's terms). The head runs on those rows only, in blocks. `on_logits`,
  // where given, also sees each scored row's whole logits [vocab] (row t - from), from the
  // pool's threads, each row once (a KL divergence's terms).
  using RowLogits = std::function<void(int64_t row, const float* logits)>;
  Status score(const int* tokens, int64_t n, int64_t from, const int* next, SequenceState* state,
               const ForwardOptions& options, double* logprobs, ForwardProfile* profile = nullptr,
               const RowLogits& on_logits = {}, Workspace* ws = nullptr) const;

 private:
  // The layer stack over `n` tokens: updates the state from all of them and leaves the final
  // hidden states (before the final norm) of rows out_from .. n-1 at (*out)[row * hidden]
  // (ws's kHidden buffer, valid until the workspace's next use).
  Status run_layers(const int* tokens, int64_t n, int64_t out_from, SequenceState* state,
                    const ForwardOptions& opt, ForwardProfile* profile, Workspace& ws,
                    float** out) const;

  // The stack run_layers and decode_batch share: embeddings of `tokens`, then per layer the
  // norm, the token mixer `mix` (layer, normed rows, r0, the block's rows r0 .. n-1, the
  // profile: it does the layer's state work), the post norm and the MLP / MoE, the last
  // layer's block on rows out_from .. n-1 only. Leaves the final hidden states in *out.
  using Mixer = std::function<Status(int layer, const float* xn, int64_t r0, float* block,
                                     ForwardProfile* profile)>;
  Status run_stack(const int* tokens, int64_t n, int64_t out_from, const Mixer& mix,
                   const ForwardOptions& opt, ForwardProfile* profile, Workspace& ws,
                   float** out) const;

  ModelConfig config_;
  ModelWeights weights_;
};

// How to hold the weights: projections in fp32, bf16 or f16; unset = the checkpoint's own
// dtype (that of its embedding table), and for a quantized GGUF its blocks as stored (set, the
// blocks are decoded into that dtype). Norms and gates stay fp32, and so does the embedding
// table unless a tied head holds it exactly (load_tied_embedding).
struct LoadOptions {
  std::optional<DType> weights;
  LoadProgress progress;  // per converted layer; may be empty
  // Plain (f32/f16/bf16) projections quantized at load to this type (any of
  // base/quant_quantize.h's; a row that is not whole blocks of it takes its 32-value stand-in
  // as llama-quantize does, or stays in `weights`). A quantized GGUF keeps its own blocks.
  std::optional<QuantType> quantize;
};

// What a GGUF carries besides the model: its tokenizer, and its chat template with the
// special tokens the template may print (empty where the file has none).
struct GgufExtras {
  std::optional<Tokenizer> tokenizer;
  std::string chat_template;  // tokenizer.chat_template
  std::string bos_token, eos_token;
  std::optional<GenerationConfig> generation;  // general.sampling.* (gguf_generation_config)
};

// Loads a checkpoint: a folder with config.json and safetensors, or a .gguf file (or a
// folder holding one .gguf and no config.json). With `gguf_extras` non-null a GGUF's
// tokenizer and chat template are read from the same parse (left untouched otherwise).
Status load_model(const std::string& path, const LoadOptions& options, std::unique_ptr<Model>* out,
                  GgufExtras* gguf_extras = nullptr);
// The .gguf file `path` names or holds, or empty if it is a safetensors checkpoint.
std::string gguf_path(const std::string& path);

}  // namespace hanpu::model
