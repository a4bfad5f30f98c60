// The kernel-parameter structs of every family: one declaration for both sides. The host's
// packing includes this file (generator/), and the generator inlines it into each variant's
// NVRTC source wherever a template says #include "ft_kernel_abi.cuh", so a field added on one
// side is added on the other. Plain C++ on purpose (no CUDA or toolkit types): each kernel takes
// its struct by value as its only parameter, so the layout is the ABI and is asserted below.
#ifndef FT_KERNEL_ABI_CUH_
#define FT_KERNEL_ABI_CUH_

namespace ft_abi {

typedef long long i64;

// fa2_fwd (templates/fa2_fwd.cuh).
struct Fa2Params {
  const void* q;
  const void* k;
  const void* v;
  void* o;
  float* lse;        // may be null: lse is then not written
  // Varlen (both set, else both null): sequence b is rows [cu[b], cu[b+1]) of the packed
  // tensors, whose batch strides are 0; seqlen_q/k are then the longest sequences and lse is
  // [Hq, total_q].
  // A paged call may pack its queries the same way: cu_seqlens_q set, cu_seqlens_k null.
  const int* cu_seqlens_q;
  const int* cu_seqlens_k;
  // Per-sequence key counts (dense with lengths, paged; else null): sequence b has
  // min(max(seqlens_k[b], 0), seqlen_k) keys.
  const int* seqlens_k;
  // Paged K/V (the fa2_paged kernels; null otherwise): k/v are page pools whose stride[0] is
  // the page stride; key j of sequence b is row j & (2^block_shift - 1) of page
  // block_table[b * block_table_stride + (j >> block_shift)]; a page outside [0, num_blocks)
  // is not read (its keys are zeros).
  const int* block_table;
  i64 total_q;
  i64 total_k;
  i64 block_table_stride;
  i64 q_stride[3];   // batch, seq, head — elements
  i64 k_stride[3];
  i64 v_stride[3];
  i64 o_stride[3];
  int batch;
  int seqlen_q;
  int seqlen_k;
  int heads_q;
  int heads_kv;
  int num_blocks;
  int block_shift;
  float scale_log2;  // softmax_scale * log2(e): scores go through exp2
};
static_assert(sizeof(Fa2Params) == 12 * 8 + 12 * 8 + 7 * 4 + 4, "Fa2Params layout drifted");

// fa2_bwd (templates/fa2_bwd.cuh): one struct for its three kernels (preprocess, main, convert).
struct Fa2BwdParams {
  const void* q;
  const void* k;
  const void* v;
  const void* o;
  const void* d_o;
  const float* lse;  // [B, Hq, Nq], natural log, -inf for rows that see no key
  void* dq;
  void* dk;
  void* dv;
  float* dq_accum;   // workspace: fp32 [B, Hq, Nq, D]
  float* delta;      // workspace: rowsum(d_o ∘ o), fp32 [B, Hq, Nq]
  int* counters;     // workspace: int32 [B, Hq, counters_per_head] (deterministic ordering)
  i64 q_stride[3];   // batch, seq, head — elements
  i64 k_stride[3];
  i64 v_stride[3];
  i64 o_stride[3];
  i64 do_stride[3];
  i64 dq_stride[3];
  i64 dk_stride[3];
  i64 dv_stride[3];
  int batch;
  int seqlen_q;
  int seqlen_k;
  int heads_q;
  int heads_kv;
  int counters_per_head;
  float scale;       // softmax scale
  float scale_log2;  // softmax scale * log2(e)
};
static_assert(sizeof(Fa2BwdParams) == 12 * 8 + 24 * 8 + 8 * 4, "Fa2BwdParams layout drifted");

// A CUtensorMap: 128 opaque bytes, 64-byte aligned, encoded on the host.
struct alignas(64) TensorMap {
  unsigned long long opaque[16];
};

// hopper_fwd (templates/hopper_fwd.cuh).
struct HopperParams {
  TensorMap tmap_q;  // {D, Hq, Nq, B}, box {64, 1, kBlockM, 1}, 128-byte swizzle
  TensorMap tmap_k;  // {D, Hkv, Nk, B}, box {64, 1, kBlockN, 1}
  TensorMap tmap_v;  // like tmap_k
  TensorMap tmap_o;  // {D, Hq, Nq, B}, box {64, 1, 64, 1}
  void* o;
  float* lse;        // may be null: lse is then not written
  i64 o_stride[3];   // batch, seq, head — elements (dense: informational, O goes out by TMA)
  int batch;
  int seqlen_q;
  int seqlen_k;
  int heads_q;
  int heads_kv;
  float scale_log2;  // softmax_scale * log2(e)
  // Varlen (both set, else both null), as in Fa2Params; the maps then describe the packed
  // tensors as {D, H, total, 1}.
  const int* cu_seqlens_q;
  const int* cu_seqlens_k;
  i64 total_q;
  i64 total_k;
  // Paged K/V (hopper_paged, kPagedKv): tmap_k / tmap_v are the page pools {D, Hkv,
  // block_size, num_blocks} with boxes of 2^box_shift rows; sequence b's key j is in page
  // block_table[b * block_table_stride + (j >> block_shift)], and it has seqlens_k[b] keys.
  // (cu_seqlens_q may be set as well: packed queries.) A dense cache with per-sequence lengths
  // is read the same way as one page a sequence: maps {D, Hkv, Nk, B}, block_table null (page
  // b for sequence b) and block_shift 30 (every key in that page). Null / 0 for dense calls
  // without lengths and for varlen calls.
  const int* seqlens_k;
  const int* block_table;
  i64 block_table_stride;
  int block_shift;  // log2(block_size); 30 for a dense cache
  int box_shift;    // log2(rows of a K/V TMA box): min(block_size, the largest power of 2 dividing kBlockN)
  // Packed sequences on persistent blocks with two Q buffers (the template's kTileClaims): a
  // counter in the call's workspace, zeroed before the launch, from which the blocks claim
  // their tiles in ft_sched::claim_tile's order. Null otherwise (tiles dealt statically: also a
  // kTileClaims kernel, whose scheduler warp then hands over the static deal).
  unsigned* tile_counter;
};
static_assert(sizeof(HopperParams) == 704, "HopperParams layout drifted");
#ifndef __CUDACC_RTC__  // NVRTC has no offsetof; the host's check covers both sides
static_assert(__builtin_offsetof(HopperParams, o) == 512 && __builtin_offsetof(HopperParams, batch) == 552 &&
                  __builtin_offsetof(HopperParams, scale_log2) == 572 &&
                  __builtin_offsetof(HopperParams, cu_seqlens_q) == 576 && __builtin_offsetof(HopperParams, total_q) == 592 &&
                  __builtin_offsetof(HopperParams, seqlens_k) == 608 && __builtin_offsetof(HopperParams, box_shift) == 636 &&
                  __builtin_offsetof(HopperParams, tile_counter) == 640,
              "HopperParams layout drifted");
#endif

// hopper_bwd (templates/hopper_bwd.cuh): its three kernels (preprocess, main, convert). The
// tensor maps describe q, k, v and d_o as hopper_fwd's ({D, H, N, B}, 128-byte swizzle; box
// rows 64 for q / d_o, 128 for k / v); everything else is fa2_bwd's struct.
struct HopperBwdParams {
  TensorMap tmap_q;
  TensorMap tmap_k;
  TensorMap tmap_v;
  TensorMap tmap_do;
  Fa2BwdParams base;
};
static_assert(sizeof(HopperBwdParams) == 4 * 128 + sizeof(Fa2BwdParams), "HopperBwdParams layout drifted");

// decode_fwd (templates/decode_fwd.cuh): both of its kernels (the split and the combine).
struct DecodeParams {
  const void* q;
  const void* k;
  const void* v;
  void* o;
  float* lse;               // may be null
  const int* seqlens_k;     // [B] or null (every sequence has seqlen_k keys)
  const int* block_table;   // null: dense K/V
  // Varlen (both set, else both null): as in Fa2Params; seqlen_q (<= 16) and seqlen_k are the
  // longest sequences, lse is [Hq, total_q], and the workspace keeps its [B, Hq, seqlen_q] rows.
  const int* cu_seqlens_q;
  const int* cu_seqlens_k;
  i64 total_q;
  i64 total_k;
  float* ws_o;              // [splits, B * Hq * Nq, D] partial outputs (splits > 1)
  float* ws_lse;            // [splits, B * Hq * Nq]
  i64 q_stride[3];          // batch, seq, head — elements
  i64 k_stride[3];          // paged: block, row in block, head
  i64 v_stride[3];
  i64 o_stride[3];
  i64 block_table_stride;
  int batch;
  int seqlen_q;
  int seqlen_k;
  int heads_q;
  int heads_kv;
  int num_blocks;
  int block_shift;          // log2(block_size)
  int splits;
  float scale_log2;         // softmax_scale * log2(e)
  int pad;
};
static_assert(sizeof(DecodeParams) == 13 * 8 + 13 * 8 + 10 * 4, "DecodeParams layout drifted");

}  // namespace ft_abi

#endif  // FT_KERNEL_ABI_CUH_
