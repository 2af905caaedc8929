// Fused prefill: query tiles placed on cores (uniform or STEEL's balanced dealing), each
// unit the fused three-stage tile loop of attn_tile_kernel.
#include <algorithm>

#include "cpu/attn/attn_kernels.h"
#include "cpu/attn/attn_tile_kernel.h"
#include "parallel/thread_pool.h"
#include "parallel/tile_placement.h"

namespace hanpu::cpu {

void attn_fused(const AttnProblem& p, AttnRunContext& ctx, bool balanced) {
  const int BQ = ctx.tiles.q_rows, G = p.group();
  const int tiles = static_cast<int>((p.T + BQ - 1) / BQ);
  std::vector<double> work(tiles);
  for (int t = 0; t < tiles; ++t) {
    const int64_t t0 = static_cast<int64_t>(t) * BQ, t1 = std::min<int64_t>(p.T, t0 + BQ);
    for (int64_t i = t0; i < t1; ++i) work[t] += static_cast<double>(p.key_end(i) - p.key_begin(i));
  }
  ThreadPool& pool = ThreadPool::shared(ctx.threads);
  const TilePlacement place = balanced ? place_tiles_balanced(p.Hkv, work, pool.size())
                                       : place_tiles_uniform(p.Hkv, work, pool.size());
  const std::vector<double> busy = pool.run_on_all([&](int w) {
    if (place.per_core[w].empty()) return;
    AttnWorkspace ws(p, ctx.tiles, ctx.meter);
    for (const TileUnit& u : place.per_core[w]) {
      const int64_t t0 = static_cast<int64_t>(u.tile) * BQ;
      const int r = static_cast<int>(std::min<int64_t>(BQ, p.T - t0));
      const int h0 = u.head * G;
      TileOut out{p.o + p.q_row(t0, h0), static_cast<ptrdiff_t>(p.Hq) * p.D, p.D,
                  p.lse ? p.lse + static_cast<size_t>(h0) * p.T + t0 : nullptr, p.T};
      attend_query_tile(p, ws, u.head, t0, r, 0, p.Tk, out);
    }
  });
  ctx.busy_ms = busy;
}

}  // namespace hanpu::cpu
