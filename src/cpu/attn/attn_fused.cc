// Fused prefill: query tiles placed on cores (uniform or STEEL's balanced dealing, both at
// the cores' measured relative speeds), each unit the fused three-stage tile loop of
// attn_tile_kernel. The lightest tenth of the work (the first query tiles of every head under
// a causal mask) is left to a shared tail that each core claims from when its own units are
// done: the placement decides the rest, and a core slowed during the call by other load is
// helped out instead of waited for.
#include <algorithm>
#include <atomic>

#include "cpu/attn/attn_kernels.h"
#include "cpu/attn/attn_tile_kernel.h"
#include "parallel/speed_balance.h"
#include "parallel/thread_pool.h"
#include "parallel/tile_placement.h"
#include "simd/fp_mode.h"

namespace hanpu::cpu {

namespace {

// The last key any row of unit u's query tile sees, + 1.
int64_t unit_reach(const AttnProblem& p, const TileUnit& u, int BQ) {
  const int64_t last = std::min<int64_t>(p.T, static_cast<int64_t>(u.tile + 1) * BQ) - 1;
  return p.key_end(last);
}

// Share of the work left to a shared tail that every core claims from once its own units
// are done (tile_placement.h): enough to absorb a core running somewhat slow during a call,
// small enough that the placement still decides almost all of it.
constexpr double kSharedTailFraction = 0.1;

}  // namespace

void attn_fused(const AttnProblem& p, AttnRunContext& ctx, bool balanced) {
  const int BQ = ctx.tiles.q_rows, G = p.group();
  const int tiles = static_cast<int>((p.T + BQ - 1) / BQ);
  std::vector<double> work(tiles);
  for (int t = 0; t < tiles; ++t) {
    const int64_t t0 = static_cast<int64_t>(t) * BQ, t1 = std::min<int64_t>(p.T, t0 + BQ);
    for (int64_t i = t0; i < t1; ++i) work[t] += static_cast<double>(p.key_end(i) - p.key_begin(i));
  }
  ThreadPool& pool = ThreadPool::shared(ctx.threads);
  // Both placements are static within a call; across calls they follow the cores' measured
  // speeds (equal on an idle machine), so a core slowed by other load is dealt less.
  SpeedBalancer speeds(pool);
  const TilePlacement place =
      balanced
          ? place_tiles_balanced(p.Hkv, work, pool.size(), speeds.speeds(), kSharedTailFraction)
          : place_tiles_uniform(p.Hkv, work, pool.size(), speeds.speeds(), kSharedTailFraction);
  std::atomic<size_t> next_tail{0};
  std::vector<double> done(pool.size(), 0.0);
  // A core walks its units head by head; at each new head it packs that head's K and V rows
  // (the keys its units reach) into contiguous rows once, instead of every unit copying its
  // key tiles from rows Hkv x D apart. Bounded by kPackBytes per core; beyond, units copy.
  constexpr int64_t kPackBytes = int64_t{64} << 20;
  const bool pairs = ctx.bf16_products;
  const std::vector<double> busy = pool.run_on_all([&](int w) {
    simd::ensure_flush_denormals();
    AttnWorkspace ws(p, ctx.tiles, ctx.meter, pairs);
    const bool pack =
        p.Tk * (p.D + p.Dv) * static_cast<int64_t>(pairs ? sizeof(uint16_t) : sizeof(float)) <=
        kPackBytes;
    const bool packs = pack && !place.per_core[w].empty();
    // fp32 rows [Tk x D] of K then [Tk x Dv] of V, or the dot path's tiles (ceil(Tk / kv_rows) of
    // K, then of V).
    const int64_t pair_tiles = (p.Tk + ws.kv_rows - 1) / ws.kv_rows;
    const int64_t pair_words = pairs ? pair_tiles * kv_pair_tile_words(p.D, ws.kv_rows) : 0;
    ScratchBuffer<float> packed(packs && !pairs ? static_cast<size_t>(p.Tk) * (p.D + p.Dv) : 0,
                                ctx.meter);
    ScratchBuffer<uint32_t> packed_pairs(packs && pairs ? 2 * static_cast<size_t>(pair_words) : 0,
                                         ctx.meter);
    int packed_head = -1;
    int64_t packed_reach = 0;
    KvRows kv{};
    KvPairTiles pair_tiles_of_head;
    auto run_unit = [&](const TileUnit& u, const KvRows& rows, const KvPairTiles* tiles) {
      const int64_t t0 = static_cast<int64_t>(u.tile) * BQ;
      const int r = static_cast<int>(std::min<int64_t>(BQ, p.T - t0));
      const int h0 = u.head * G;
      TileOut out{p.o + p.o_row(t0, h0), static_cast<ptrdiff_t>(p.Hq) * p.Dv, p.Dv,
                  p.lse ? p.lse + static_cast<size_t>(h0) * p.T + t0 : nullptr, p.T};
      attend_query_tile(p, ws, u.head, rows, t0, r, 0, p.Tk, out, tiles);
      done[w] += work[u.tile];
    };
    for (const TileUnit& u : place.per_core[w]) {
      if (u.head != packed_head) {
        kv = kv_rows_in_place(p, u.head);
        if (pack) {
          int64_t reach = 0;  // keys this core's units of the head can see
          for (const TileUnit& v : place.per_core[w]) {
            if (v.head != u.head) continue;
            reach = std::max(reach, unit_reach(p, v, BQ));
          }
          if (pairs) {  // kv stays in place: units past the packed keys pack their own tiles
            uint32_t* pk = packed_pairs.data();
            pack_kv_pair_tiles(kv, reach, p.D, ws, pk, pk + pair_words);
            pair_tiles_of_head = KvPairTiles{pk, pk + pair_words, reach};
          } else {
            float* pk = packed.data();
            float* pv = pk + static_cast<size_t>(p.Tk) * p.D;
            copy_kv_rows(kv, 0, reach, p.D, p.Dv, pk, pv);
            kv = KvRows{pk, pv, p.D, DType::kF32, p.Dv};
          }
          packed_reach = reach;
        }
        packed_head = u.head;
      }
      run_unit(u, kv, pack && pairs ? &pair_tiles_of_head : nullptr);
    }
    // The shared tail: light units, claimed until none is left. The packed rows serve a unit
    // of the head they hold when they reach far enough; otherwise it copies its key tiles
    // (the dot path takes the packed tiles it finds and packs the rest itself).
    for (size_t i = next_tail.fetch_add(1); i < place.shared_tail.size();
         i = next_tail.fetch_add(1)) {
      const TileUnit& u = place.shared_tail[i];
      const bool same_head = pack && u.head == packed_head;
      if (pairs) {
        run_unit(u, kv_rows_in_place(p, u.head), same_head ? &pair_tiles_of_head : nullptr);
      } else {
        const bool use_packed = same_head && unit_reach(p, u, BQ) <= packed_reach;
        run_unit(u, use_packed ? kv : kv_rows_in_place(p, u.head), nullptr);
      }
    }
  });
  ctx.busy_ms = busy;
  std::vector<int64_t> done_work(done.size());
  for (size_t c = 0; c < done.size(); ++c) done_work[c] = static_cast<int64_t>(done[c]);
  speeds.record(done_work, busy);
}

}  // namespace hanpu::cpu
