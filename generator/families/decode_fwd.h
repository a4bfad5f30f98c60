// decode_fwd: the Flash-Decoding family (templates/decode_fwd.cuh) for few query rows per
// sequence (decode, speculative decoding), dense or paged K/V, sm_80 and newer.
//
// One thread block owns one (sequence, K/V head, row tile, key split): its rows are the
// Hq/Hkv query heads that share the K/V head times the Nq query tokens (packed GQA), so each
// K/V byte is read once per row tile, not once per query head. The keys of a sequence are
// split across `splits` blocks (a rule from the SM count, tuned through `cs`); each writes a
// partial (o, lse) to the workspace and a second kernel of the module ("<uri>_combine")
// merges them: lse = log sum_s exp(lse_s), o = sum_s exp(lse_s - lse) o_s. With one split
// the first kernel writes o and lse itself and the combine is not launched.
//
// Parameters, in URI order: bn (keys per pipeline step: 32, 64, 128), rm (16-row MMA tiles per
// block: 1, 2, 4; rm * D <= 256 keeps the accumulator in registers), w (warps: 2, 4, 8; each
// warp takes bn / w keys of a step, a multiple of 16), s (K/V shared-memory stages: 2-4), cs
// (blocks per SM the split rule aims for: 1, 2, 4).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>

#include "flashtune/forward_args.h"
#include "flashtune/variant.h"

namespace flashtune {

// A decode_fwd variant with every parameter given (tests and tools build them by hand).
Variant DecodeVariant(DType dtype, int head_dim, bool causal, int keys_per_step, int row_tiles, int warps, int stages,
                      int blocks_per_sm);

namespace detail {

// Mirrors FtDecodeParams in templates/decode_fwd.cuh; the kernels take it by value.
struct DecodeParams {
  const void* q;
  const void* k;
  const void* v;
  void* o;
  float* lse;                // may be null
  const int32_t* seqlens_k;  // [B] or null (every sequence has seqlen_k keys)
  const int32_t* block_table;  // null: dense K/V
  float* ws_o;               // [splits, B * Hq * Nq, D] partial outputs (splits > 1)
  float* ws_lse;             // [splits, B * Hq * Nq]
  int64_t q_stride[3];       // batch, seq, head — elements
  int64_t k_stride[3];       // paged: block, row in block, head
  int64_t v_stride[3];
  int64_t o_stride[3];
  int64_t block_table_stride;
  int32_t batch;
  int32_t seqlen_q;
  int32_t seqlen_k;
  int32_t heads_q;
  int32_t heads_kv;
  int32_t num_blocks;
  int32_t block_shift;  // log2(block_size)
  int32_t splits;
  float scale_log2;
  int32_t pad;
};
static_assert(sizeof(DecodeParams) == 9 * 8 + 13 * 8 + 10 * 4, "DecodeParams layout drifted");

// Splits of the keys for a call: as many as one wave of `blocks_per_sm` blocks per SM holds,
// at least one key step per split, at most kMaxDecodeSplits, at least 1. sm_count 0 means 132.
inline constexpr int kMaxDecodeSplits = 64;
int DecodeSplits(const Problem& problem, int sm_count, int keys_per_step, int row_tiles, int blocks_per_sm);

}  // namespace detail
}  // namespace flashtune
