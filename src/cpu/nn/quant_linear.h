// Projections whose weights are GGUF blocks (base/quant_blocks.h), kept as the checkpoint
// stores them: output column o of y = x W^T is row o of W, a run of whole blocks. x is
// quantized to int8 blocks once per call and every row multiplied on simd/quant_dot.h's
// fastest kernel, decode and prefill alike (a Q4_K, Q6_K or Q5_0 decode on a repacked copy, below);
// output rows are claimed by the pool's cores.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cpu/nn/linear.h"

namespace hanpu::cpu {

// A projection onto rows `rows` of a [*, in] matrix of type t whose row r starts at
// data + r * row_bytes (row_bytes: in / block_elems blocks). The bytes are not copied:
// `owner` keeps them alive (a checkpoint's mapping); without one the rows are copied.
// decode_copy: whether to attach the decode copy (attach_decode_groups, below); a table only
// read a row at a time (an untied embedding) does without it.
PackedLinear quant_linear_from_rows(QuantType t, const uint8_t* data, int in,
                                    const std::vector<int>& rows, std::shared_ptr<const void> owner,
                                    bool decode_copy = true);
// Rows `rows` of W [*, in] (fp32) quantized to type t (quant_type_quantizable) into blocks
// the projection owns; nullopt where `in` is not whole blocks (the caller keeps it dense).
std::optional<PackedLinear> quantized_rows(QuantType t, const float* w, int in,
                                           const std::vector<int>& rows);
// The same from rows made on demand (PackedLinear::RowSource, called once per output from
// the pool's threads), so a large table need not exist in fp32 whole.
std::optional<PackedLinear> quantized_row_source(QuantType t, int in, int out,
                                                 const PackedLinear::RowSource& row);

// Where w is Q4_K, Q6_K or Q5_0, the CPU runs that type's group kernel
// (simd/quant_q4k_rows16.h, quant_q6k_rows16.h: AVX512-VNNI; quant_q5_0_rows16.h: and BITALG) and
// HANPU_REPACK is not 0: a copy of w's rows repacked in groups for it (PackedLinear::qgroups), from
// which every decode (one row of x) multiplies them. The blocks stay for prefill. Otherwise w is
// left as it is. quant_linear_from_rows and the functions below call it.
void attach_decode_groups(PackedLinear* w);

// What attach_decode_groups does on this CPU and environment, for `hanpu info`: the types it
// copies, or why none.
std::string decode_groups_summary();

// Output columns of `a` followed by those of `b` (the same type and input).
PackedLinear quant_linear_concat(const PackedLinear& a, const PackedLinear& b);

// Random blocks of type t for an [in -> out] projection (in: whole blocks): random codes,
// finite f16 scales of about `scale` / 8 (so values of about `scale`), for benchmarks and
// synthetic models.
PackedLinear random_quant_linear(QuantType t, int in, int out, uint64_t seed, float scale = 0.02f);

// Rows of x from which a prefill decodes W into bf16 and multiplies on the bf16 kernels (the
// matrix unit, the bf16 dot instruction, or the pairs kernel: whichever `ceiling` allows)
// instead of the int8 kernels: decoding W costs less than the int8 products from 40 rows on
// and more below (`hanpu bench linear --weights q4_k q6_k --seq 32 40 --projection auto fma`,
// the 0.8B's projections and head alike). On AVX2 alone the pairs kernel on decoded W also
// beats the int8 AVX2 kernel (vpmaddubsw) for a whole model's prefill by half again.
//
// Each core decodes the few strips (32 output rows each) it multiplies next into a buffer of
// its own and multiplies them by all of x (packed once) before the next: no decoded copy of
// a projection exists beyond one unit per core (a model's head is 500 MB in bf16 for a
// 250k-word vocabulary).
inline constexpr int64_t kQuantWidenRows = 40;
bool quant_prefill_widens(const PackedLinear& w, int64_t T,
                          ProjectionKernel ceiling = ProjectionKernel::kAuto);
// Whether a prefill runs on the int8 panel kernel (simd/quant_panel.h) instead of either:
// where the CPU has it for w's type, `ceiling` is auto (naming a bf16 kernel widens) and x
// has kQuantPanelRows rows or more. Packing a panel costs about what the int8 row kernels
// spend on 4-6 rows; from 8 rows the panels win on every projection of the 0.8B, Q4_K and
// Q6_K alike, and at 512 rows they run 1.25-1.45x the bf16 dot kernel on the same shapes
// (`hanpu bench linear --weights q4_k q6_k bf16 --seq 4 6 8 12 16 24 512`; docs/journal,
// 2026-12-06).
inline constexpr int64_t kQuantPanelRows = 8;
bool quant_prefill_panels(const PackedLinear& w, int64_t T,
                          ProjectionKernel ceiling = ProjectionKernel::kAuto);

// y[T, out] (leading dim ldy) = x[T, in] (leading dim ldx) W^T for a quantized w.
void quant_linear(const float* x, int64_t ldx, int64_t T, const PackedLinear& w, float* y,
                  int64_t ldy, int threads, ProjectionKernel ceiling = ProjectionKernel::kAuto);

// quant_linear for several projections of one x on the int8 kernels (none widened for a
// prefill; all with the same input size and x_order): x quantized once, the projections' rows
// shared out as one range.
void quant_linear_many(const float* x, int64_t ldx, int64_t T, const std::vector<LinearOut>& outs,
                       int threads);
// linear_each's quantized form: each row's x quantized for its own projection, then all the
// projections' output rows as one range on the pool.
void quant_linear_each(const std::vector<LinearRow>& rows, int threads);

// Row `o` of W (`w.in` values) decoded to f32, as the embedding reads a token's row.
void quant_linear_row(const PackedLinear& w, int o, float* out);

// The kernel quant_linear() runs on this CPU: "vnni", "avx2", "sdot" or "scalar"
// (simd/quant_dot.h).
const char* quant_linear_kernel_name();

}  // namespace hanpu::cpu
