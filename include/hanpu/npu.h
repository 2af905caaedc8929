// The modelled NPUs: run a linear-attention prefill on a simulated Ascend-class NPU. The
// kernel executes for real (its outputs are written to args.o / args.final_state and match
// the float64 reference to fp16 precision) while the simulator measures what it did: latency,
// GM traffic, L1->L0 traffic, spills, peak buffer occupancy, cube utilisation and energy.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hanpu/attn.h"
#include "hanpu/la.h"
#include "hanpu/status.h"

namespace hanpu {

struct NpuLaOptions {
  std::string target = "ascend-310p";  // a built-in target (npu_targets()) or a JSON file
  std::string variant = "hanpu";       // one of npu_la_variants()
  int chunk_size = 64;                 // 16, 32 or 64
};

struct NpuLaStats {
  std::string target, variant;
  double latency_ms = 0;
  int64_t gm_read_bytes = 0, gm_write_bytes = 0;
  int64_t l1_l0_bytes = 0;  // L1 -> L0A / L0B
  int64_t spill_bytes = 0;
  int64_t gm_workspace_bytes = 0;  // device memory for intermediates beyond inputs and outputs
  int64_t gm_device_bytes = 0;     // all device memory the kernel holds: inputs, outputs, workspace
  std::map<std::string, int64_t>
      peak_bytes;  // per buffer ("L1", "L0A", "L0B", "L0C", "UB"), largest core
  int64_t cube_macs = 0;
  double cube_util = 0, vector_util = 0;
  // Each engine's busy time over cores x latency ("mte2": GM -> L1/UB, "mte1": L1 -> L0/UB,
  // "mte3": UB -> GM/L1, "cube", "vector"): where a kernel's time goes.
  std::map<std::string, double> engine_busy;
  double energy_mj = 0;
  int launches = 0;
  int framework_ops = 0;  // eager operators the host dispatched (vllm-ascend's chain)
  int64_t instructions = 0;
  int64_t gm_bytes() const { return gm_read_bytes + gm_write_bytes; }
};

struct NpuVariantInfo {
  std::string_view name;
  std::string_view summary;
  bool ablation_only;  // an intermediate step of the hanpu ablation (HA-NPU Figure 18)
};
std::vector<NpuVariantInfo> npu_la_variants();
std::vector<std::string> npu_targets();          // the Ascend-class built-ins
std::vector<std::string> npu_spatial_targets();  // the spatial (XDNA-class) built-ins

// HA-NPU's offline plan for a GDN or KDA prefill on the target, as text: the chunk's
// operator order before and after reordering with the predicted peak on-core footprint and
// state versions, every vector chain's layout with its transform sites and the DP's cost,
// and the core schedule (whole heads; tail heads whole, split by columns or, measured
// faster, chunk-split over all cores) with the costs that decided it.
Status describe_npu_plan(const std::string& target, LaMech mech, int heads, int64_t seq, int dim,
                         int chunk, std::string* out);

// GDN or KDA prefill of one sequence on the target. q/k/v/o may be stored in any dtype: the
// NPU holds them as fp16 in GM (the paper's mixed precision: fp16 q/k/v/o, fp32 gates and
// states). Every variant runs GDN and KDA, with grouped value heads (HV a multiple of H) and
// q/k L2-normalised in the kernel (args.qk_l2norm), K and V up to 256 (a head wider than a
// core's buffers were sized for runs as value-column parts, each a value head sharing the q/k
// head), and varlen batches (args.cu_seqlens: the sequences side by side as head blocks,
// padded to the longest with rows that leave a state as it was; refused where the padding
// would pass 4x the batch's tokens). Refused with a clear error: K or V above 256 or not a
// multiple of 16.
Status npu_la_prefill(const LaArgs& args, const NpuLaOptions& options, NpuLaStats* stats);

// ---- Ascend-class targets: full attention -----------------------------------------------

struct NpuAscendAttnOptions {
  std::string target = "ascend-310p";  // an Ascend-class target (npu_targets()) or a JSON file
  bool skip_masked = true;  // key blocks wholly above the causal diagonal are not computed
};

// Causal or unmasked attention prefill on an Ascend-class target as one fused FlashAttention
// kernel (per query head and block of 64 query rows on one core: Q K^T and P V on the cube,
// the online softmax on the vector unit): q, o [T, Hq, D], k, v [T, Hkv, D] of any storage
// dtype (held as fp16 in GM), Hq a multiple of Hkv (grouped-query attention), D a multiple of
// 16 up to 512, no query offset or kv strides. The measures are the LA kernels' (variant
// "flash"), so an attention layer and an LA layer compare on one machine.
Status npu_attn_prefill_ascend(const AttnArgs& args, const NpuAscendAttnOptions& options,
                               NpuLaStats* stats);

// ---- Ascend-class targets: a hybrid model's prefill --------------------------------------

// A Qwen3.5-style hybrid's shape: GDN layers and gated attention layers, each with an MLP.
struct NpuHybridShape {
  int hidden = 0, ffn = 0;
  int la_layers = 0, attn_layers = 0;
  int la_qk_heads = 0, la_v_heads = 0, la_key_dim = 128, la_value_dim = 128, conv_kernel = 4;
  int attn_heads = 0, kv_heads = 0, head_dim = 0;
  float rotary_fraction = 0.25f;
  float rope_theta = 1e7f;
  int64_t vocab = 0;  // the LM head's rows (npu_hybrid_request)
};

struct NpuPrefillOptions {
  std::string target = "ascend-310p";
  std::string la_variant = "vllm-ascend";  // the LA core: one of npu_la_variants()
  uint64_t seed = 1;
};

// Operator times are grouped as HA-NPU's Figure 3 groups a prefill: "linear attention" (the
// GDN mixer from its input projections to its output projection), "full attention" (the
// same for attention), "mlp", "norm" (each layer's input and post-mixer RMSNorm).
struct NpuPrefillStats {
  std::string target, la_variant;
  double la_layer_ms = 0, attn_layer_ms = 0;  // one whole layer of each kind
  double la_mixer_ms = 0, attn_mixer_ms = 0;  // its token mixer (the group above)
  double la_core_ms = 0, attn_core_ms = 0;    // the LA core alone, the attention core alone
  double prefill_ms = 0;  // la_layers x LA layer + attn_layers x attention layer
  double energy_mj = 0;   // the same sum of the layers' energies
  double la_layer_energy_mj = 0, attn_layer_energy_mj = 0;  // one layer of each kind
  std::map<std::string, double> group_ms;                   // over the whole prefill, by group
  // Each layer kind's operators in order ("la." or "attn." then the operator), ms per layer.
  std::vector<std::pair<std::string, double>> ops;
};

// The prefill of one sequence of T tokens through every layer of `shape` on an Ascend-class
// target, as vLLM-Ascend runs it (every operator dispatched by the host), with the LA core as
// options.la_variant. One layer of each kind runs on the model (the layers of a kind share a
// shape and no kernel's timing depends on its values); the prefill is the layer counts times
// those. The embedding lookup and the LM head's last row are not included.
Status npu_hybrid_prefill(const NpuHybridShape& shape, int64_t T, const NpuPrefillOptions& options,
                          NpuPrefillStats* stats);

// A request: the prefill of `input` tokens, the LM head for its last row (time to first
// token), then a decode step for each further output token, as the native backend decodes
// whatever the prefill's LA variant (HA-NPU leaves decode to it).
struct NpuRequestStats {
  std::string target, la_variant;
  int64_t input_tokens = 0, output_tokens = 0;
  double prefill_ms = 0;      // as npu_hybrid_prefill
  double ttft_ms = 0;         // the prefill, then the final norm and the LM head on its last row
  double decode_ms = 0;       // the output tokens after the first
  double latency_ms = 0;      // ttft_ms + decode_ms
  double energy_mj = 0;       // all of it
  double decode_step_ms = 0;  // the last decode step (the longest: the largest cache)
};

// The request for each LA variant in `la_variants`, sharing what does not depend on it (the
// attention layers, decode, the LM head: each run once on the model); options.la_variant is
// ignored. Decode steps each run on the model at their own cache length (output_tokens up to
// 256); shape.vocab must be set.
Status npu_hybrid_request(const NpuHybridShape& shape, int64_t input_tokens, int64_t output_tokens,
                          const std::vector<std::string>& la_variants,
                          const NpuPrefillOptions& options, std::vector<NpuRequestStats>* out);

// ---- Spatial (XDNA-class) targets: fused attention --------------------------------------

struct NpuAttnOptions {
  std::string target = "xdna2";              // a spatial target: xdna1, xdna2, or a JSON file
  std::string variant = "steel";             // see npu_attn_variants()
  std::string placement = "sparsity-aware";  // query blocks on pipelines: uniform, sparsity-aware
};

struct NpuAttnStats {
  std::string target, variant, placement;
  double latency_ms = 0;
  int64_t offchip_bytes = 0;      // DRAM read + written
  double stall_ms = 0;            // producers held by consumers that had not released (summed)
  double compute_util = 0;        // busy compute-core time / (compute tiles x latency)
  int design_switches = 0;        // launches that load another design (in the latency)
  int busy_tiles = 0;             // compute tiles that did any work
  std::vector<double> tile_util;  // per compute tile (column-major, rows 2 up): busy / latency
  double macs = 0;
  double energy_mj = 0;
  int64_t events = 0;
};

std::vector<std::string> npu_attn_variants();  // "steel", "dato", "layer"

// Causal (or unmasked) multi-head attention prefill on a spatial target: q, k, v, o [T, H, 64]
// of any storage dtype (held as bf16 on the array, as STEEL does); Hq = Hkv, T = Tk, no q
// offset, D = 64 (STEEL's 64 x 64 tiles). Outputs are computed by the dataflow's arithmetic;
// timing, traffic, stalls and energy come from replaying the recorded program.
Status npu_attn_prefill(const AttnArgs& args, const NpuAttnOptions& options, NpuAttnStats* stats);

}  // namespace hanpu
