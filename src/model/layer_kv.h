// One attention layer's keys and values as a sequence holds them: first rows shared with
// other sequences and cached checkpoints (sealed segments, reference counted, never written
// again), then the rows this sequence appended since, in a cache of its own.
//
// Why: a server's prefix cache keeps a checkpoint at every message end of a chat, and every
// request that resumes from one goes on from the same rows. Copying the rows into each
// checkpoint and each resumed sequence would make a chat's memory grow with the square of its
// turns; sharing them makes a checkpoint cost the rows appended since the last one.
//
// Attention runs once per segment and the partial results are merged exactly by their
// log-sum-exps (FlashAttention's split merge): the shared rows all precede the queries, so
// they are seen whole (no mask), and the own rows causally. Sealing merges trailing segments
// no longer than what is being sealed into one, so a sequence of L rows holds at most about
// log2(L) segments and each row is copied O(log L) times over a whole chat.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hanpu/attn.h"
#include "hanpu/kv_cache.h"
#include "hanpu/status.h"

namespace hanpu::model {

// How attend runs each segment's attention call.
struct AttendRun {
  int threads = 1;
  std::string placement = "balanced";  // attn_prefill's, for more than one query row
  AttnProducts products = AttnProducts::kAuto;
  // The softmax scale; unset: head_dim^-1/2. MLA sets its query/key dims' own, as its rows
  // carry zero padding up to the kernel's head dim.
  std::optional<float> scale;
};

// One attention call as `run` says: the decode kernel for one query row (keys split over the
// cores), the fused prefill for more.
Status run_attention(const AttnArgs& args, int64_t R, const AttendRun& run);

class LayerKv {
 public:
  LayerKv(int kv_heads, int head_dim, DType dtype, int64_t initial_capacity = 256,
          KvValues values = KvValues::kStored);
  LayerKv(const LayerKv&) = delete;
  LayerKv& operator=(const LayerKv&) = delete;

  int64_t length() const { return shared_length_ + own_.length(); }
  int kv_heads() const { return own_.kv_heads(); }
  int head_dim() const { return own_.head_dim(); }
  DType dtype() const { return own_.dtype(); }
  KvValues values() const { return own_.values(); }
  // Segments attention walks: the shared ones, and the own rows if there are any.
  int segments() const { return static_cast<int>(shared_.size()) + (own_.length() > 0 ? 1 : 0); }

  // As KvCache's: rows appended to the own cache; room for `tokens` rows in all.
  Status append(const TensorView& k, const TensorView& v) { return own_.append(k, v); }
  Status reserve(int64_t tokens);
  // Rows [t0, t0 + n) of all, widened to fp32 as KvCache::read_f32 gives them.
  Status read_f32(int64_t t0, int64_t n, float* k_out, float* v_out) const;

  // o [R, Hq, D] = attention of the queries q [R, Hq, D] (fp32), which sit at the last R
  // positions (length() - R ...), over every row, causal. R >= 1 and the last R rows must be
  // the own cache's (appended since the last share). scratch: (R Hq D + 2 Hq R) floats when
  // there are shared segments.
  Status attend(const float* q, int64_t R, int Hq, float* o, const AttendRun& run,
                float* scratch) const;
  static size_t attend_scratch_floats(int64_t R, int Hq, int D) {
    return static_cast<size_t>(R) * Hq * D + 2 * static_cast<size_t>(Hq) * R;
  }

  // Seals the own rows into a shared segment (the own cache keeps its room, emptied) and
  // gives a layer that holds every row by reference: a checkpoint of this one.
  Status share(std::unique_ptr<LayerKv>* out);
  // A copy: the shared segments by reference, the own rows copied (no room ahead).
  Status copy(std::unique_ptr<LayerKv>* out) const;

  // The bytes of the own cache as allocated, and the shared segments (each with the identity
  // by which sequences sharing it can count it once).
  int64_t own_bytes() const;
  const std::vector<std::shared_ptr<const KvCache>>& shared() const { return shared_; }
  static int64_t bytes_of(const KvCache& c);

 private:
  KvCache own_;
  std::vector<std::shared_ptr<const KvCache>> shared_;
  int64_t shared_length_ = 0;
};

}  // namespace hanpu::model
