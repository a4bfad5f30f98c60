// flashtune/forward_args.h — the arguments of one attention forward call: prefill, decode,
// paged K/V cache and variable-length batches share this one struct.
//
// The shape is `problem` (flashtune/variant.h); its layout says which tensors mean what.
// Strides are in elements; the last dim is contiguous; every row 16-byte aligned; no two elements
// of o share an address (q, k, v may: K/V broadcast over heads has a zero head stride). Hq must be
// a multiple of Hkv (MQA/GQA: query head h reads K/V head h / (Hq / Hkv)). Causal masks align
// bottom-right per sequence: query i of a sequence with n_q queries and n_k keys sees keys
// j <= i + n_k - n_q. A row that sees no key (a sequence with 0 keys included) gets o = 0 and
// lse = -inf. The semantics follow flash_attn_with_kvcache / flash_attn_varlen_func.
//
//  kDense:  q [B, Nq, Hq, D], k/v [B, Nk, Hkv, D], o like q, lse [B, Hq, Nq] fp32 contiguous.
//           `seqlens_k` (optional, device [B] int32) gives sequence b only its first
//           seqlens_k[b] keys (flash_attn_with_kvcache's cache_seqlens); values above Nk are
//           read as Nk, and rows past a sequence's keys are never used (NaN included). With
//           lengths, up to 16 query rows run on decode_fwd; past that on hopper_paged on sm_90a
//           (hopper_fwd's tile reading the cache as one page a sequence; Nk <= 2^30), else
//           fa2_fwd.
//  kPaged:  q, o and lse as dense; k/v are page pools [num_blocks, block_size, Hkv, D]
//           (k_strides/v_strides: {block, seq-in-block, head}); sequence b's key j lives in
//           page block_table[b * block_table_stride + j / block_size] at row j % block_size.
//           `seqlens_k` is required; Nk (problem.seqlen_k) is the largest key count any
//           sequence may have in this call and must fit max_blocks_per_seq * block_size.
//           On the device, lengths above Nk are read as Nk and page indexes outside
//           [0, num_blocks) are not read (decode_fwd and fa2_paged count their keys as masked,
//           hopper_paged's TMA reads them as zeros): a bad table can give a wrong answer but
//           never a fault. Rows past a sequence's keys are never used, whatever they hold
//           (NaN included). CheckPagedKvHost checks host copies exactly.
//           The queries may be packed instead (vLLM's varlen q over its cache, e.g. a decode
//           batch with a different number of new tokens a sequence): varlen.cu_seqlens_q
//           (device [B+1]) and varlen.total_q set, q/o [total_q, Hq, D] with batch strides 0,
//           lse [Hq, total_q], Nq the longest; causal aligns each sequence bottom-right. The
//           other varlen fields stay 0, but for a mixed batch (vLLM's: decode sequences
//           first), which says so in varlen.decode_seqs / decode_max_seqlen_q as varlen does.
//           Served by decode_fwd up to 16 query rows a sequence,
//           by a prefill kernel over pages past that: hopper_paged on sm_90a (pages of 16
//           keys or more), else fa2_paged; a mixed batch runs its decode sequences on
//           decode_fwd and the rest on the prefill kernel (MixedVarlenParts).
//  kVarlen: q [total_q, Hq, D], k/v [total_k, Hkv, D], o like q, packed: sequence b is rows
//           [cu_seqlens_q[b], cu_seqlens_q[b+1]) of q (and likewise k). Strides' `batch` must
//           be 0. lse is [Hq, total_q] fp32. Nq, Nk are the largest per-sequence counts.
//           Served by the prefill families (fa2_fwd, hopper_fwd) and, when every sequence
//           has at most 16 queries, by decode_fwd. A mixed prefill + decode batch whose
//           decode sequences come first (vLLM's order) says how many in
//           `varlen.decode_seqs`: forward() then runs those on decode_fwd and the rest on a
//           prefill family, two launches over the same tensors (MixedVarlenParts). On the device, offsets are
//           clamped to [0, total] and lengths to Nq / Nk: a bad table can give a wrong answer
//           (rows left unwritten) but never an access outside the tensors. CheckCuSeqlensHost
//           checks host copies exactly.
//
// Appending the new tokens' K/V into the cache is not part of the call: engines write their
// cache with their own kernel (vLLM's reshape_and_cache) before attention, so flashtune only
// reads K/V.
//
// Workspace: a decode kernel that splits keys across thread blocks writes partial results to
// `workspace`, which the caller owns (no allocation inside forward(), so a call can be
// captured into a CUDA graph). Its size comes from WorkspaceBytes(problem, sm_count) or
// Runtime::workspace_size; it may be null with size 0 when that says 0. A packed or paged
// prefill call on sm_90a uses its first 16 bytes as the counter its blocks claim tiles from
// (zeroed on the stream by the call; sequences of different lengths then keep every SM busy);
// without them, or in a call of too few tiles to repay that memset (about 2 us of GPU time), it
// runs on the static tile order. A workspace serves one call at a time: calls that may run at once (on
// different streams) each need their own, or blocks of one claim the other's tiles.
//
// Thread safety: a plain value type.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "flashtune/export.h"
#include "flashtune/status.h"
#include "flashtune/variant.h"

FLASHTUNE_API_BEGIN
namespace flashtune {

// Strides of a [B, N, H, D] tensor, in elements. For a paged cache `batch` is the stride
// between pages; for a varlen tensor it must be 0.
struct Strides {
  int64_t batch = 0;
  int64_t seq = 0;
  int64_t head = 0;
  // A densely packed [B, N, H, D] tensor.
  static Strides Contiguous(int64_t seqlen, int64_t heads, int64_t head_dim) {
    return {seqlen * heads * head_dim, heads * head_dim, head_dim};
  }
};

// The paged K/V cache's table (problem.layout == kPaged), vLLM's layout.
struct PagedKv {
  const int32_t* block_table = nullptr;  // device [B, block_table_stride] int32 page indexes
  int64_t block_table_stride = 0;        // elements between rows (>= max_blocks_per_seq)
  int64_t max_blocks_per_seq = 0;        // table columns a sequence may use
  int64_t num_blocks = 0;                // pages in the k and v pools
  int block_size = 0;                    // keys per page: a power of two in [1, 256]
};

// The packed batch's offsets (problem.layout == kVarlen).
struct Varlen {
  const int32_t* cu_seqlens_q = nullptr;  // device [B + 1] int32, non-decreasing, [0] = 0
  const int32_t* cu_seqlens_k = nullptr;  // device [B + 1] int32
  int64_t total_q = 0;                    // rows of q and o (cu_seqlens_q[B])
  int64_t total_k = 0;                    // rows of k and v (cu_seqlens_k[B])
  // Mixed prefill + decode: sequences [0, decode_seqs) have at most decode_max_seqlen_q
  // (1 to 16) queries each and run on the decode kernel; 0 runs the batch as one call.
  int64_t decode_seqs = 0;
  int64_t decode_max_seqlen_q = 0;  // required when decode_seqs > 0
};

struct ForwardArgs {
  Problem problem;
  float softmax_scale = 0.0f;  // 0 means 1/sqrt(head_dim)

  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* o = nullptr;
  float* lse = nullptr;  // optional: nullptr skips writing the log-sum-exp

  Strides q_strides, k_strides, v_strides, o_strides;

  const int32_t* seqlens_k = nullptr;  // device [B] int32: dense (optional) and paged (required)
  PagedKv paged;                       // kPaged only
  Varlen varlen;                       // kVarlen only

  void* workspace = nullptr;  // device, 16-byte aligned; see WorkspaceBytes
  int64_t workspace_bytes = 0;

  // Arguments for `problem` with densely packed tensors of its layout (dense [B, N, H, D];
  // paged: pools of `block_size`-key pages, max_blocks_per_seq = ceil(Nk / block_size),
  // num_blocks = B * max_blocks_per_seq; varlen: every sequence full length, total = B * N);
  // every pointer null.
  static ForwardArgs Contiguous(const Problem& problem, int block_size = 16);
  float EffectiveScale() const;  // softmax_scale, or 1/sqrt(head_dim) when it is 0
};

// Workspace bytes a call of `problem` needs on a device with `sm_count` multiprocessors (0:
// an H100/H200's 132): the largest any family serving the problem may use, so the answer does
// not depend on which variant is tuned; for varlen and paged past 16 queries, also what their
// leading decode sequences may need on the decode kernel (any decode_seqs). 0 when no kernel splits the problem's keys.
int64_t WorkspaceBytes(const Problem& problem, int sm_count);
// What that workspace holds, for a person: each family's part with its bytes (the workspace is
// the largest of them), or "" when WorkspaceBytes is 0. E.g. a paged prefill problem: its tile
// counter, and the split-KV partials of a mixed batch's decode sequences.
std::string WorkspaceUse(const Problem& problem, int sm_count);

// The launches of one call. A mixed call of packed queries (varlen, or paged with cu_seqlens_q;
// decode_seqs > 0, problem.seqlen_q > 16) is two: its decode sequences [0, decode_seqs) as a
// problem of decode_seqs sequences and decode_max_seqlen_q queries (decode_fwd's bucket), then
// the rest as one of B - decode_seqs sequences whose offsets start at cu_seqlens + decode_seqs
// (paged: whose lengths and table rows start at sequence decode_seqs; the packed tensors, lse
// and totals unchanged: the kernels index them by absolute rows). A part with no sequence is
// left out; any other call is itself. Fixed size: forward() allocates nothing. Args must be valid.
struct CallParts {
  ForwardArgs part[2];
  int count = 0;
};
CallParts MixedVarlenParts(const ForwardArgs& args);
// Whether `args` is a mixed call of packed queries (two parts above); reads no pointer.
bool IsMixedVarlen(const ForwardArgs& args);
// Whether q and o are packed rows [total_q, Hq, D] found by varlen.cu_seqlens_q (lse then
// [Hq, total_q]): the varlen layout, and a paged call that sets cu_seqlens_q.
bool PackedQueries(const ForwardArgs& args);
// Whether `args` is a dense cache with per-sequence key counts (seqlens_k): rows past a
// sequence's keys may hold anything, and only families that read the counts serve it.
bool DenseWithLengths(const ForwardArgs& args);

// Checks everything that can be checked without a GPU: the problem (ValidateProblem), non-null
// q/k/v/o, 16-byte aligned pointers and head/seq/batch strides (in bytes), o's elements at
// distinct addresses (inputs may overlap: K/V broadcast over heads), finite positive scale;
// for paged: block_table and seqlens_k present and 4-byte aligned, block_size a power
// of two in [1, 256], max_blocks_per_seq * block_size >= Nk, stride >= max_blocks_per_seq,
// num_blocks >= 1; for varlen: cu_seqlens present, totals >= the longest sequence and
// <= B * longest, batch strides 0; for varlen and paged with packed queries decode_seqs in
// [0, B] and, when not 0, decode_max_seqlen_q in [1, min(16, Nq)] (paged with dense queries:
// decode_seqs 0); workspace aligned and non-null when its size is non-zero.
// OK, or kInvalidArgument whose message names the argument and the allowed values.
Status ValidateForwardArgs(const ForwardArgs& args);

// Checks that `args` is a call `variant` was compiled for: same dtype, head dim and causal flag.
// OK, or kInvalidArgument naming the field that differs, both values and the variant's URI.
Status CheckArgsMatchVariant(const Variant& variant, const ForwardArgs& args);

// Checks host copies of a paged call's device tables exactly (what the kernel cannot report):
// every seqlens_k[b] in [0, Nk], and every page index sequence b uses
// (block_table[b * stride + j] for j < ceil(seqlens_k[b] / block_size)) in [0, num_blocks).
// `block_table` holds B * block_table_stride entries, `seqlens_k` B. kInvalidArgument naming
// the sequence, column and value otherwise.
Status CheckPagedKvHost(const ForwardArgs& args, const std::vector<int32_t>& block_table,
                        const std::vector<int32_t>& seqlens_k);
// Checks a host copy of cu_seqlens (B + 1 entries): starts at 0, non-decreasing, each
// sequence at most `max_len` long, last entry == `total`. `name` is used in the message.
Status CheckCuSeqlensHost(const char* name, const std::vector<int32_t>& cu_seqlens, int64_t batch,
                          int64_t max_len, int64_t total);

// Host copies of a call's device tables: what its kernels read and the host cannot see.
struct HostTables {
  const int32_t* block_table = nullptr;   // paged: batch * paged.block_table_stride entries
  const int32_t* seqlens_k = nullptr;     // paged, and dense with seqlens_k: batch entries
  const int32_t* cu_seqlens_q = nullptr;  // varlen: batch + 1 entries
  const int32_t* cu_seqlens_k = nullptr;  // varlen: batch + 1 entries
};
// The whole call checked as the host can, given copies of its tables: ValidateForwardArgs, then
// each table its layout reads (CheckPagedKvHost; dense lengths in [0, Nk]; CheckCuSeqlensHost for
// both offsets, and a mixed batch's decode sequences within decode_max_seqlen_q queries). A table
// the call reads but `tables` lacks is kInvalidArgument naming it. For callers debugging their
// tables, and for those that hold them on the host anyway (it costs a copy and a pass over them).
Status CheckHostTables(const ForwardArgs& args, const HostTables& tables);

}  // namespace flashtune
FLASHTUNE_API_END
