// Flash-Decoding kernel template (flashtune): attention for few query rows per sequence.
//
// Prefill kernels parallelise over query tiles; a decode step has one to a few query rows, so
// that axis is empty and the keys must be split instead. One thread block owns one
// (sequence b, K/V head, row tile, key split):
//  - rows: the Hq/Hkv query heads sharing the K/V head times the Nq query tokens, packed into
//    16-row MMA tiles (packed GQA), row r = g * Nq + i (query head hkv * G + g, token i);
//  - keys: the split's share of the sequence's key steps, each step bn keys of K and V staged
//    by cp.async through `kStages` buffers; within a step every warp takes bn / warps keys and
//    keeps its own online-softmax state (m, l, O) for all rows;
//  - at the end the warps merge through shared memory; with one split the block writes o and
//    lse, otherwise a partial (o, lse) into the workspace and the second kernel of the module
//    (FT_KERNEL_NAME_combine) merges the splits: lse = log sum_s exp(lse_s),
//    o = sum_s exp(lse_s - lse) o_s.
// K/V come from a dense [B, Nk, Hkv, D] tensor (or packed varlen rows) or, in a kernel compiled
// with kPaged (block_table then set), from a page pool [num_blocks, block_size, Hkv, D]: key j
// of sequence b is row j % block_size of page block_table[b][j / block_size]. A page index
// outside [0, num_blocks) is not read (its keys read as zero). Each kernel carries one layout's
// copy path: the page code slowed the dense kernel that carried it (docs/perf-notes.md,
// "Decode round 12"). seqlens_k (optional for dense) gives each sequence its key count, clamped to
// [0, seqlen_k]. Varlen (cu_seqlens set): q/o and k/v are packed [total, H, D], sequence b is
// rows [cu[b], cu[b+1]) with at most seqlen_q (<= 16) queries; lse is [Hq, total_q]; the
// workspace rows stay [B, Hq, seqlen_q]. Causal aligns bottom-right per sequence: token i of
// n_q sees keys j <= i + n_k - n_q. A row that sees no key gets o = 0 and lse = -inf.
//
// Self-contained (inline PTX, no toolkit header). The generator prepends the constexpr
// prologue (namespace ft_config, FT_KERNEL_NAME); without it the defaults below compile.

#ifndef FT_CONFIG_PROVIDED
#define FT_KERNEL_NAME decode_fwd_bf16_d128_bn64_rm1_w4_s3_cs2_kv0_full
namespace ft_config {
constexpr bool kBf16 = true;
constexpr int kHeadDim = 128;
constexpr int kBlockN = 64;
constexpr int kRowTiles = 1;
constexpr int kWarps = 4;
constexpr int kStages = 3;
constexpr bool kCausal = false;
constexpr bool kPaged = false;
constexpr int kSmemBytes = 16 * kHeadDim * 2 + 2 * kStages * kBlockN * kHeadDim * 2;
}  // namespace ft_config
#endif

#define FT_CAT_(a, b) a##b
#define FT_CAT(a, b) FT_CAT_(a, b)

#include "ft_kernel_abi.cuh"

namespace ftd {

using namespace ft_config;
typedef unsigned int u32;
typedef unsigned short u16;
typedef long long i64;

using FtDecodeParams = ft_abi::DecodeParams;

#include "ft_device.cuh"

constexpr int kRows = 16 * kRowTiles;        // packed query rows per block
// Q, K and V tiles in shared memory: swizzled rows where the head dim is a multiple of 64 (whole
// 128-byte lines: the K/V copies then read the DRAM stream 4-5% faster than into padded rows,
// ft_device.cuh), padded rows otherwise.
template <int kCols, bool kSwizzle = kCols % 64 == 0>
struct TileRows {
  typedef PaddedRows<kCols + 8> type;
};
template <int kCols>
struct TileRows<kCols, true> {
  typedef SwizzledRows<kCols> type;
};
typedef TileRows<kHeadDim>::type Rows;
constexpr int kRowStride = Rows::kStrideElems;  // elements from one row to the next
constexpr int kThreads = kWarps * 32;
constexpr int kWarpN = kBlockN / kWarps;     // keys per warp per step
constexpr int kNTiles = kWarpN / 8;
constexpr int kDTiles = kHeadDim / 8;
constexpr int kChunksPerRow = kHeadDim / 8;  // 16-byte chunks per row
constexpr int kMergeStride = kHeadDim + 4;   // fp32 merge rows: the pad spreads rows over banks
constexpr int kQBytes = kRows * kRowStride * 2;
constexpr int kPipelineBytes = kQBytes + 2 * kStages * kBlockN * kRowStride * 2;
// The merge area: fp32 O rows, each warp's row max and sum, then per row the normaliser, lse,
// query head and token. Where every warp's O rows fit in the pipeline's buffers, each warp
// writes its own rows at once and the epilogue adds them (one barrier); otherwise the warps add
// into one set of rows in turns, a barrier each. Either way the block's shared memory is
// max(pipeline, kMergeBytes): the one-pass layout is used only where it costs nothing.
constexpr int kMergeTail = 2 * kWarps * kRows * 4 + 4 * kRows * 4;
constexpr int kMergeBytes = kQBytes + kRows * kMergeStride * 4 + kMergeTail;
constexpr bool kOnePassMerge = kQBytes + kWarps * kRows * kMergeStride * 4 + kMergeTail <= kPipelineBytes;
constexpr int kMergeSets = kOnePassMerge ? kWarps : 1;  // fp32 O row sets in the merge area

static_assert(kHeadDim % 32 == 0 && kHeadDim >= 32 && kHeadDim <= 256, "head dim must be a multiple of 32 in [32, 256]");
static_assert(kBlockN == 32 || kBlockN == 64 || kBlockN == 128, "keys per step must be 32, 64 or 128");
static_assert(kWarps == 2 || kWarps == 4 || kWarps == 8, "warps must be 2, 4 or 8");
static_assert(kWarpN % 16 == 0, "keys per step must be a multiple of 16 * warps");
static_assert(kRowTiles == 1 || kRowTiles == 2 || kRowTiles == 4, "row tiles must be 1, 2 or 4");
static_assert(kRowTiles * kHeadDim <= 256, "row tiles * head dim must be <= 256 (registers)");
static_assert(kStages >= 2 && kStages <= 4, "stages must be 2, 3 or 4");
static_assert(kSmemBytes == (kPipelineBytes > kMergeBytes ? kPipelineBytes : kMergeBytes),
              "kSmemBytes disagrees with the template's shared-memory layout");
static_assert(kSmemBytes <= 232448, "shared memory exceeds the largest opt-in limit (227 KB)");

__device__ __forceinline__ void store_float8(float* dst, const float* src, float scale) {
  float4 a, b;
  a.x = src[0] * scale, a.y = src[1] * scale, a.z = src[2] * scale, a.w = src[3] * scale;
  b.x = src[4] * scale, b.y = src[5] * scale, b.z = src[6] * scale, b.w = src[7] * scale;
  reinterpret_cast<float4*>(dst)[0] = a;
  reinterpret_cast<float4*>(dst)[1] = b;
}

// The cache line holding `src` into L2: a hint, with no effect on what any load returns. A
// per-thread instruction (cp.async.bulk.prefetch takes one address a warp: ptxas loops over the
// lanes).
__device__ __forceinline__ void prefetch_l2(const void* src) {
  asm volatile("prefetch.global.L2 [%0];\n" ::"l"(src) : "memory");
}

// cp.async of 16 bytes that asks L2 to fetch the whole 128-byte line from DRAM (.L2::128B, as
// CUTLASS's SM80 copies do): the K/V stream is read once, line by line. Measured against the
// plain copy in one run: 1-4% faster on every decode shape (ncu, B64 x 32k: 88.6 -> 90.4% of
// DRAM peak; cuDNN 95%); docs/perf-notes.md, "Decode speed and mixed prefill + decode".
__device__ __forceinline__ void cp_async16_line(u32 dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}

constexpr float kLn2 = 0.69314718055994531f;
constexpr float kLog2e = 1.44269504088896341f;

// Packed row rg = g * Nq + i (0 <= rg < 2^16, 1 <= Nq <= 16) split without an integer division:
// (rg + 0.5) / Nq is at least 0.5 / 16 from an integer, far more than the float product's error
// (under rg * 2^-22), so truncating it gives g exactly. inv_nq = 1 / Nq (any rounding). A division by
// the run-time Nq was about 20 instructions a row, and the Q copy, the masked steps and the
// epilogue each divided per row.
__device__ __forceinline__ int row_head(int rg, int nq, float inv_nq) {
  return nq == 1 ? rg : __float2int_rz((float(rg) + 0.5f) * inv_nq);
}

// The block's coordinates and the sequence's sizes, shared by the loader and the epilogue.
// q_row0 / k_row0: the sequence's first packed row (varlen; 0 for dense and paged).
struct Work {
  int b, hkv, group, row0, rows_valid, n_q, n_k, step0, steps;
  i64 q_row0, k_row0;
};

// Sequence b's query count and first packed query row (varlen), or seqlen_q and 0.
__device__ __forceinline__ int query_span(const FtDecodeParams& p, int b, i64* q_row0) {
  *q_row0 = 0;
  return p.cu_seqlens_q != nullptr ? varlen_span(p.cu_seqlens_q, b, p.seqlen_q, p.total_q, q_row0) : p.seqlen_q;
}

// Where row (b, hq, token i) of lse goes: [B, Hq, Nq], or [Hq, total_q] for varlen.
__device__ __forceinline__ i64 lse_index(const FtDecodeParams& p, int b, int hq, int i, i64 q_row0) {
  return p.cu_seqlens_q != nullptr ? (i64)hq * p.total_q + q_row0 + i : ((i64)b * p.heads_q + hq) * p.seqlen_q + i;
}

__device__ __forceinline__ Work plan_work(const FtDecodeParams& p) {
  Work w;
  w.b = blockIdx.x / p.heads_kv;
  w.hkv = blockIdx.x % p.heads_kv;
  w.group = p.heads_q / p.heads_kv;
  w.row0 = blockIdx.z * kRows;
  w.n_q = query_span(p, w.b, &w.q_row0);
  const int total_rows = w.group * w.n_q;
  w.rows_valid = min(kRows, total_rows - w.row0);  // <= 0: a tile past this sequence's rows
  int n_k = p.seqlen_k;
  w.k_row0 = 0;
  if (p.cu_seqlens_k != nullptr) {
    n_k = varlen_span(p.cu_seqlens_k, w.b, p.seqlen_k, p.total_k, &w.k_row0);
  } else if (p.seqlens_k != nullptr) {
    n_k = min(max(p.seqlens_k[w.b], 0), p.seqlen_k);
  }
  w.n_k = n_k;
  // Keys any row of this tile sees: causal limits them by the tile's last query token.
  int limit = w.rows_valid > 0 ? n_k : 0;
  if (kCausal && w.rows_valid > 0) {
    const int last = w.row0 + w.rows_valid - 1;
    const int max_i = (last / w.n_q != w.row0 / w.n_q) ? w.n_q - 1 : last % w.n_q;
    limit = min(n_k, max(0, max_i + 1 + n_k - w.n_q));
  }
  const int n_steps = (limit + kBlockN - 1) / kBlockN;
  const int per_split = (n_steps + p.splits - 1) / p.splits;
  w.step0 = blockIdx.y * per_split;
  w.steps = max(0, min(n_steps, w.step0 + per_split) - w.step0);
  return w;
}

}  // namespace ftd

extern "C" __global__ void __launch_bounds__(ftd::kThreads) FT_KERNEL_NAME(const ftd::FtDecodeParams p) {
  using namespace ftd;
  extern __shared__ __align__(16) unsigned char smem[];
  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int lane = tid % 32;
  // sm_90+: this kernel is launched as a programmatic dependent of whatever kernel precedes it
  // on the stream (it may have written q, the cache or the tables, or read this call's
  // workspace): it waits for that kernel to finish (griddepcontrol.wait) before any global
  // memory access. Where a length lives in memory (varlen, per-sequence lengths) the plan reads
  // it, so the wait comes first; otherwise the plan and the K/V base addresses are arithmetic on
  // the parameters alone (about 300 instructions, three integer divisions deep), done before
  // the wait so they overlap the previous kernel's tail. The trigger for this grid's own
  // dependent comes after the key loop (below).
  const bool lengths_in_memory = p.cu_seqlens_q != nullptr || p.cu_seqlens_k != nullptr || p.seqlens_k != nullptr;
  constexpr int kChunks = kBlockN * kChunksPerRow;
  constexpr int kIssueIters = (kChunks + kThreads - 1) / kThreads;
  // Where each thread's chunks are one column of rows kRowsPerIter apart (every searched d64 /
  // d128 / d256 tile): dense K/V take one address per step and an add per chunk; the general
  // form multiplies a 64-bit offset per chunk, and at short caches (two steps a block) those
  // address instructions were most of the block's count (docs/perf-notes.md, "Decode round 11").
  constexpr bool kRegular = kThreads % kChunksPerRow == 0 && kChunks % kThreads == 0;
  constexpr int kRowsPerIter = kRegular ? kThreads / kChunksPerRow : 1;
  // Paged the same way where pages hold 16 keys or more: a step's 16-row groups each lie in one
  // page, and a thread's chunks in a group are rows of it, so the table is read and the page's
  // address formed once per group (kBlockN / 16 a step), not once per chunk. Pages of 1-8 keys
  // take the general form.
  constexpr int kGroups = kBlockN / 16;
  constexpr bool kGroupedPages = kPaged && kRegular && kRowsPerIter <= 16;
  static_assert(!kGroupedPages || kGroups <= kIssueIters, "a thread covers every 16-row group of a step");
  // Paged, pages of 16 keys or more: the first step's table entries as planned over the longest
  // sequence (seqlen_k), loaded right after the wait beside the length, so that the chain wait ->
  // length -> table -> K/V loses its table round trip where the true plan starts at the same
  // step (every split of a sequence as long as the call's longest). Otherwise reloaded.
  constexpr int kSpecGroups = kGroupedPages ? kGroups : 1;
  int spec_pages[kSpecGroups];
  int spec_step0 = -1;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (lengths_in_memory) {
    // Before the wait, L2 prefetches of what is read right after it: the sequence's lengths and,
    // paged, the block table's entries for this split as planned over the longest sequence (the
    // true plan reads the length). Prefetches change no value a load returns, so the previous
    // kernel may still write these; what they save is DRAM round trips in the chain length ->
    // table -> K/V that starts at the wait.
    const int b = blockIdx.x / p.heads_kv;
    if (tid == 0 && p.seqlens_k != nullptr) prefetch_l2(p.seqlens_k + b);
    if (tid == 1 && p.cu_seqlens_k != nullptr) prefetch_l2(p.cu_seqlens_k + b);
    if (tid == 2 && p.cu_seqlens_q != nullptr) prefetch_l2(p.cu_seqlens_q + b);
    if (kPaged && p.block_table != nullptr) {
      const int n_steps = (p.seqlen_k + kBlockN - 1) / kBlockN;
      const int per_split = (n_steps + p.splits - 1) / p.splits;
      const int key0 = blockIdx.y * per_split * kBlockN;
      const int key1 = min(p.seqlen_k, key0 + per_split * kBlockN);
      if (key0 < key1) {
        const int* row = p.block_table + (i64)b * p.block_table_stride;
        // Every 32nd entry (a 128-byte line's worth) and the last; a line may be asked for twice.
        const int first = key0 >> p.block_shift, last = (key1 - 1) >> p.block_shift;
        for (int e = first + 32 * tid; e <= last + 31; e += 32 * kThreads) prefetch_l2(row + min(e, last));
      }
    }
    asm volatile("griddepcontrol.wait;" ::: "memory");
    if (kGroupedPages && p.block_table != nullptr && p.block_shift >= 4) {
      const int n_steps = (p.seqlen_k + kBlockN - 1) / kBlockN;
      spec_step0 = blockIdx.y * ((n_steps + p.splits - 1) / p.splits);
      const int* row = p.block_table + (i64)b * p.block_table_stride;
#pragma unroll
      for (int g = 0; g < kSpecGroups; ++g) {
        const int key = spec_step0 * kBlockN + 16 * g;  // < seqlen_k: an entry of the row's first pages
        spec_pages[g] = key < p.seqlen_k ? row[key >> p.block_shift] : -1;
      }
    }
  }
#endif
  const Work w = plan_work(p);
  const int Nq = w.n_q;  // this sequence's query tokens (the packed rows are g * Nq + i)
  const float inv_nq = Nq > 0 ? 1.f / float(Nq) : 0.f;

  u16* sQ = reinterpret_cast<u16*>(smem);
  const u32 sQ_addr = smem_address(sQ);
  const u32 sK_addr = sQ_addr + kQBytes;
  constexpr u32 kStageBytes = kBlockN * kRowStride * 2;
  const u32 sV_addr = sK_addr + kStages * kStageBytes;

  const u16* kbase = static_cast<const u16*>(p.k) + (i64)w.hkv * p.k_stride[2];
  const u16* vbase = static_cast<const u16*>(p.v) + (i64)w.hkv * p.v_stride[2];
  const int* table = kPaged ? p.block_table + (i64)w.b * p.block_table_stride : nullptr;
  if (!kPaged) {  // dense, or varlen (batch strides 0, the sequence's first row)
    kbase += (i64)w.b * p.k_stride[0] + w.k_row0 * p.k_stride[1];
    vbase += (i64)w.b * p.v_stride[0] + w.k_row0 * p.v_stride[1];
  }
  const int page_mask = (1 << p.block_shift) - 1;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (!kPaged && !lengths_in_memory) {
    // Dense: the block's first kStages - 1 steps of K and V rows into L2 before the wait, a
    // 128-byte line a prefetch, so the copies after it start from L2. Hints only, as above.
    constexpr int kLinesPerRow = (kHeadDim * 2 + 127) / 128;
    const int lines = min(kStages - 1, w.steps) * kBlockN * kLinesPerRow;
    for (int l = tid; l < lines; l += kThreads) {
      const int key = w.step0 * kBlockN + l / kLinesPerRow;
      const int col = (l % kLinesPerRow) * 64;  // elements: 128 bytes
      if (key < w.n_k) {
        prefetch_l2(kbase + (i64)key * p.k_stride[1] + col);
        prefetch_l2(vbase + (i64)key * p.v_stride[1] + col);
      }
    }
  }
  // The values above are inputs, so the compiler computes them before the wait, not after.
  if (!lengths_in_memory)
    asm volatile("griddepcontrol.wait;" ::"l"(kbase), "l"(vbase), "l"(table), "f"(inv_nq), "r"(w.step0), "r"(w.steps),
                 "r"(w.rows_valid), "r"(w.row0)
                 : "memory");
#endif

  const bool grouped = kGroupedPages && p.block_shift >= 4;

  // Paged K/V: the page of each of this thread's chunks (or, grouped, of each 16-row group, in
  // the first kGroups) in a step, loaded one step ahead of the copies that use it. Loaded right
  // before its cp.async, a page-table read stalled the warp an L1/L2 round trip at the top of
  // every step (in-order issue), compute included.
  int pages[kIssueIters];  // unused (and dropped by the compiler) in dense kernels
  auto load_pages = [&](int it) {
    if (!kPaged) return;
    const int n0 = (w.step0 + it) * kBlockN;
    if (grouped) {
#pragma unroll
      for (int g = 0; g < kGroups; ++g) {
        const int key = n0 + 16 * g;
        pages[g] = it < w.steps && key < w.n_k ? table[key >> p.block_shift] : -1;
      }
      return;
    }
#pragma unroll
    for (int i = 0; i < kIssueIters; ++i) {
      const int c = i * kThreads + tid;
      const int key = n0 + c / kChunksPerRow;
      const bool read = it < w.steps && (kChunks % kThreads == 0 || c < kChunks) && key < w.n_k;
      pages[i] = read ? table[key >> p.block_shift] : -1;
    }
  };

  // One step's K and V rows; keys past n_k or on a bad page read as zero. Uses the pages
  // load_pages(it) fetched. issue_step below makes them one commit group.
  auto issue_copies = [&](int it) {
    if (!kPaged && kRegular && it < w.steps) {
      const int n0 = (w.step0 + it) * kBlockN;
      const u32 stage = (u32)(it % kStages) * kStageBytes;
      const int r0 = tid / kChunksPerRow;
      const int col = (tid % kChunksPerRow) * 8;
      const i64 k_step = (i64)kRowsPerIter * p.k_stride[1], v_step = (i64)kRowsPerIter * p.v_stride[1];
      const u16* ksrc = kbase + (i64)(n0 + r0) * p.k_stride[1] + col;
      const u16* vsrc = vbase + (i64)(n0 + r0) * p.v_stride[1] + col;
      // Every key of the step exists (all but a split's last step): no per-row test and select,
      // 45 of ~100 copy instructions a step (bn64 d128); 0-1% of the call's time.
      if (n0 + kBlockN <= w.n_k) {
#pragma unroll
        for (int i = 0; i < kIssueIters; ++i) {
          const u32 dst = Rows::offset(r0 + i * kRowsPerIter, col) + stage;
          cp_async16_line(sK_addr + dst, ksrc, 16);
          cp_async16_line(sV_addr + dst, vsrc, 16);
          ksrc += k_step;
          vsrc += v_step;
        }
        return;
      }
#pragma unroll
      for (int i = 0; i < kIssueIters; ++i) {
        const int r = r0 + i * kRowsPerIter;
        const bool valid = n0 + r < w.n_k;  // keys past n_k read as zero
        const u32 dst = Rows::offset(r, col) + stage;
        cp_async16_line(sK_addr + dst, valid ? ksrc : kbase, valid ? 16 : 0);
        cp_async16_line(sV_addr + dst, valid ? vsrc : vbase, valid ? 16 : 0);
        ksrc += k_step;
        vsrc += v_step;
      }
    } else if (kGroupedPages && grouped && it < w.steps) {
      const int n0 = (w.step0 + it) * kBlockN;
      const u32 stage = (u32)(it % kStages) * kStageBytes;
      const int r0 = tid / kChunksPerRow;
      const int col = (tid % kChunksPerRow) * 8;
      const i64 k_row = p.k_stride[1], v_row = p.v_stride[1];
      const u16 *ksrc = kbase, *vsrc = vbase;  // this thread's row of the current group
      bool page_ok = false;
#pragma unroll
      for (int i = 0; i < kIssueIters; ++i) {
        const int g = i * kRowsPerIter / 16;  // compile-time: r0 < kRowsPerIter <= 16
        const int r = r0 + i * kRowsPerIter;
        if (i * kRowsPerIter == 16 * g) {  // compile-time: the thread's first chunk of group g
          const int page = pages[g];
          page_ok = page >= 0 && page < p.num_blocks;
          const i64 first = (i64)((n0 + 16 * g) & page_mask) + r0;
          ksrc = kbase + (i64)(page_ok ? page : 0) * p.k_stride[0] + first * k_row + col;
          vsrc = vbase + (i64)(page_ok ? page : 0) * p.v_stride[0] + first * v_row + col;
        }
        // The address is a row of a page in the pool (page 0's for a bad page; rows past n_k in
        // the sequence's last page are allocated), so only the size says what is read.
        const int bytes = page_ok && n0 + r < w.n_k ? 16 : 0;
        const u32 dst = Rows::offset(r, col) + stage;
        cp_async16_line(sK_addr + dst, ksrc, bytes);
        cp_async16_line(sV_addr + dst, vsrc, bytes);
        ksrc += kRowsPerIter * k_row;
        vsrc += kRowsPerIter * v_row;
      }
    } else if (it < w.steps) {
      const int n0 = (w.step0 + it) * kBlockN;
      const u32 stage = (u32)(it % kStages) * kStageBytes;
#pragma unroll
      for (int i = 0; i < kIssueIters; ++i) {
        const int c = i * kThreads + tid;
        if (kChunks % kThreads == 0 || c < kChunks) {
          const int r = c / kChunksPerRow;
          const int col = (c % kChunksPerRow) * 8;
          const int key = n0 + r;
          bool valid = key < w.n_k;
          i64 koff = 0, voff = 0;
          if (valid) {
            if (kPaged) {
              const int page = pages[i];
              valid = page >= 0 && page < p.num_blocks;
              const int in_page = key & page_mask;
              koff = (i64)page * p.k_stride[0] + (i64)in_page * p.k_stride[1];
              voff = (i64)page * p.v_stride[0] + (i64)in_page * p.v_stride[1];
            } else {
              koff = (i64)key * p.k_stride[1];
              voff = (i64)key * p.v_stride[1];
            }
          }
          const u32 dst = Rows::offset(r, col) + stage;
          cp_async16_line(sK_addr + dst, valid ? kbase + koff + col : kbase, valid ? 16 : 0);
          cp_async16_line(sV_addr + dst, valid ? vbase + voff + col : vbase, valid ? 16 : 0);
        }
      }
    }
  };
  // Step it's copies as one commit group, then step it + 1's pages.
  auto issue_step = [&](int it) {
    issue_copies(it);
    cp_async_commit();  // empty groups keep the wait counts uniform
    load_pages(it + 1);
  };

  float acc_o[kRowTiles][kDTiles][4];
  float row_max[kRowTiles][2];
  float row_sum[kRowTiles][2];
#pragma unroll
  for (int mi = 0; mi < kRowTiles; ++mi) {
#pragma unroll
    for (int dt = 0; dt < kDTiles; ++dt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_o[mi][dt][e] = 0.f;
    row_max[mi][0] = row_max[mi][1] = kNegInf;
    row_sum[mi][0] = row_sum[mi][1] = 0.f;
  }

  if (w.steps > 0) {
    // The first step's K/V copies go out before Q's: they do not depend on it, and at short
    // caches (one or two steps a block) their DRAM round trip is the block's critical path,
    // which Q's address arithmetic used to delay (in-order issue). Q joins their commit group,
    // so the groups are step 0 (with Q), step 1, ...
    if (kGroupedPages && grouped && spec_step0 == w.step0) {
#pragma unroll
      for (int g = 0; g < kGroups; ++g) pages[g] = w.step0 * kBlockN + 16 * g < w.n_k ? spec_pages[g] : -1;
    } else {
      load_pages(0);
    }
    issue_copies(0);
    // Q rows: packed (head g, token i); rows past the tile's end read as zero.
    constexpr int kQChunks = kRows * kChunksPerRow;
    for (int c = tid; c < kQChunks; c += kThreads) {
      const int r = c / kChunksPerRow;
      const int col = (c % kChunksPerRow) * 8;
      const bool valid = r < w.rows_valid;
      const int rg = w.row0 + r;
      const int g = valid ? row_head(rg, Nq, inv_nq) : 0, i = valid ? rg - g * Nq : 0;
      const u16* src = static_cast<const u16*>(p.q) + (i64)w.b * p.q_stride[0] + (w.q_row0 + i) * p.q_stride[1] +
                       (i64)(w.hkv * w.group + g) * p.q_stride[2] + col;
      cp_async16(sQ_addr + Rows::offset(r, col), valid ? src : p.q, valid ? 16 : 0);
    }
    cp_async_commit();
    load_pages(1);
#pragma unroll
    for (int s = 1; s < kStages - 1; ++s) issue_step(s);

    const float scale_log2 = p.scale_log2;
    const int wn0 = warp * kWarpN;
    const int diag = w.n_k - Nq;  // token i sees keys j <= i + diag
    // The query token of each of this thread's rows (causal masks by it), once.
    int token[kRowTiles][2];
#pragma unroll
    for (int mi = 0; mi < kRowTiles; ++mi)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int rg = w.row0 + mi * 16 + lane / 4 + 8 * h;
        token[mi][h] = kCausal ? rg - row_head(rg, Nq, inv_nq) * Nq : 0;
      }
    // Row halves (8 rows of a 16-row tile) that hold no valid row skip the online softmax and
    // the O rescale, a warp-uniform branch: one query token of a GQA group of 8 heads or fewer
    // (every decode step at Hq / Hkv <= 8) fills only the first half of its tile, and the other
    // half's softmax and rescale were 62 of the ~360 instructions a step (bn32 / bn64, d128):
    // B1 x 2k took 0.76-0.90x the time, B8 x 2k 0.91-0.99x (docs/perf-notes.md, "Decode round
    // 21"). Their P is zero; the merge and the epilogue never read those rows. The first half of
    // the first tile always holds a row where there are steps (rows_valid >= 1).
    bool live[kRowTiles][2];
#pragma unroll
    for (int mi = 0; mi < kRowTiles; ++mi)
#pragma unroll
      for (int h = 0; h < 2; ++h) live[mi][h] = (mi == 0 && h == 0) || mi * 16 + 8 * h < w.rows_valid;
    for (int it = 0; it < w.steps; ++it) {
      cp_async_wait<kStages - 2>();  // this step's K/V (and, at step 0, Q) have landed
      __syncthreads();             // ... for every thread; and step it-1's buffer is free
      issue_step(it + kStages - 1);
      const int n0 = (w.step0 + it) * kBlockN;
      const u32 stage = (u32)(it % kStages) * kStageBytes;

      float acc_s[kRowTiles][kNTiles][4];
#pragma unroll
      for (int mi = 0; mi < kRowTiles; ++mi)
#pragma unroll
        for (int nj = 0; nj < kNTiles; ++nj)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc_s[mi][nj][e] = 0.f;
#pragma unroll
      for (int ks = 0; ks < kHeadDim / 16; ++ks) {
        u32 a[kRowTiles][4];
#pragma unroll
        for (int mi = 0; mi < kRowTiles; ++mi)
          ldmatrix_x4(a[mi], sQ_addr + Rows::offset(mi * 16 + (lane % 16), ks * 16 + (lane / 16) * 8));
#pragma unroll
        for (int nj = 0; nj < kNTiles; nj += 2) {
          u32 b[4];
          ldmatrix_x4(b, sK_addr + stage +
                         Rows::offset(wn0 + nj * 8 + (lane / 16) * 8 + (lane % 8), ks * 16 + ((lane / 8) % 2) * 8));
#pragma unroll
          for (int mi = 0; mi < kRowTiles; ++mi) {
            mma_16816(acc_s[mi][nj], a[mi], b[0], b[1]);
            mma_16816(acc_s[mi][nj + 1], a[mi], b[2], b[3]);
          }
        }
      }
      // Only steps that cross the sequence end or a causal diagonal mask per element.
      if (n0 + kBlockN > w.n_k || (kCausal && n0 + kBlockN - 1 > diag)) {
#pragma unroll
        for (int mi = 0; mi < kRowTiles; ++mi)
#pragma unroll
          for (int nj = 0; nj < kNTiles; ++nj)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const int key = n0 + wn0 + nj * 8 + 2 * (lane % 4) + (e & 1);
              if (key >= w.n_k || (kCausal && key > token[mi][e >= 2] + diag)) acc_s[mi][nj][e] = kNegInf;
            }
      }
      // Online softmax in the exp2 domain, per warp over its keys.
      u32 p_frag[kRowTiles][kNTiles][2];
#pragma unroll
      for (int mi = 0; mi < kRowTiles; ++mi)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          if (live[mi][h]) {
            const float c = softmax_row_step(acc_s[mi], h, scale_log2, row_max[mi][h], row_sum[mi][h], p_frag[mi]);
#pragma unroll
            for (int dt = 0; dt < kDTiles; ++dt) {
              acc_o[mi][dt][2 * h] *= c;
              acc_o[mi][dt][2 * h + 1] *= c;
            }
          } else {
#pragma unroll
            for (int nj = 0; nj < kNTiles; ++nj) p_frag[mi][nj][h] = 0u;
          }
        }
      // wn0 is a multiple of 16 rows: the warp's V rows keep the tile's swizzle from its first row.
      pv_mma<kRowTiles, kNTiles, kDTiles, Rows>(acc_o, p_frag, sV_addr + stage + (u32)(wn0 * kRowStride * 2), lane);
    }
    cp_async_wait<0>();
  }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // Let the dependent (the combine, or the next call's kernel) be scheduled once every block is
  // past its key loop: its launch latency hides under the merge and the epilogue, and its blocks
  // do not sit on the SMs waiting through the whole key loop (a trigger at the start: B8 x 128k
  // 2.4-2.9% slower in eager calls, docs/perf-notes.md "Decode round 4"). Correctness does not
  // depend on the place: the dependent's griddepcontrol.wait waits for this grid's completion
  // and its memory flush.
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  __syncthreads();  // the K/V buffers become the merge area

  // Merge the warps: each publishes its rows' max and sum, then adds its rescaled O in turn.
  float* sO = reinterpret_cast<float*>(smem + kQBytes);
  float* sM = sO + kMergeSets * kRows * kMergeStride;  // [warp][row]
  float* sL = sM + kWarps * kRows;
#pragma unroll
  for (int mi = 0; mi < kRowTiles; ++mi)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float sum = row_sum[mi][r];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      if (lane % 4 == 0) {
        const int row = mi * 16 + lane / 4 + r * 8;
        sM[warp * kRows + row] = row_max[mi][r];
        sL[warp * kRows + row] = sum;
      }
    }
  __syncthreads();
  float scale[kRowTiles][2];
#pragma unroll
  for (int mi = 0; mi < kRowTiles; ++mi)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = mi * 16 + lane / 4 + r * 8;
      float m = kNegInf;
#pragma unroll
      for (int x = 0; x < kWarps; ++x) m = fmaxf(m, sM[x * kRows + row]);
      scale[mi][r] = fast_exp2(row_max[mi][r] - (m == kNegInf ? 0.f : m));
    }
  // Each row's normaliser, lse and (query head g, token i) once, for the epilogue's 8-column
  // chunks, which redid them per chunk (two loops over the warps, a reciprocal, a log and two
  // integer divisions each): at short caches the block's fixed cost, not its loads, is what a
  // call pays (docs/perf-notes.md, "Decode round 11"). The turns' barriers below publish them.
  float* sInv = sL + kWarps * kRows;
  float* sLse = sInv + kRows;
  int* sG = reinterpret_cast<int*>(sLse + kRows);
  int* sI = sG + kRows;
  for (int r = tid; r < kRows; r += kThreads) {
    float m = kNegInf;
#pragma unroll
    for (int x = 0; x < kWarps; ++x) m = fmaxf(m, sM[x * kRows + r]);
    const float m_base = m == kNegInf ? 0.f : m;
    float l = 0.f;
#pragma unroll
    for (int x = 0; x < kWarps; ++x) l += sL[x * kRows + r] * fast_exp2(sM[x * kRows + r] - m_base);
    sInv[r] = l > 0.f ? 1.f / l : 0.f;
    sLse[r] = l > 0.f ? (m + fast_log2(l)) * kLn2 : kNegInf;
    const int rg = w.row0 + r;
    const bool valid = r < w.rows_valid;  // else Nq may be 0 (an empty varlen sequence)
    const int g = valid ? row_head(rg, Nq, inv_nq) : 0;
    sG[r] = g;
    sI[r] = valid ? rg - g * Nq : 0;
  }
  // This warp's rescaled O rows into `rows` (kRows x kMergeStride floats): stored, or added to
  // what the warps before it left there (`add`). Rows of a half with no valid row are never read.
  auto put_rows = [&](float* rows, bool add) {
#pragma unroll
    for (int mi = 0; mi < kRowTiles; ++mi)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        if (mi * 16 + 8 * r >= w.rows_valid) continue;
#pragma unroll
        for (int dt = 0; dt < kDTiles; ++dt) {
          float* dst = rows + (mi * 16 + lane / 4 + r * 8) * kMergeStride + dt * 8 + 2 * (lane % 4);
          const float x0 = acc_o[mi][dt][2 * r] * scale[mi][r], x1 = acc_o[mi][dt][2 * r + 1] * scale[mi][r];
          dst[0] = add ? dst[0] + x0 : x0;
          dst[1] = add ? dst[1] + x1 : x1;
        }
      }
  };
  if constexpr (kOnePassMerge) {
    // Every warp its own rows at once (the epilogue adds the warps' rows): one barrier, where
    // turns cost a barrier a warp and kept the other warps idle.
    put_rows(sO + warp * kRows * kMergeStride, false);
    __syncthreads();
  } else {
#pragma unroll 1
    for (int turn = 0; turn < kWarps; ++turn) {
      if (warp == turn) put_rows(sO, turn != 0);
      __syncthreads();
    }
  }

  // Epilogue: normalise each row once; o and lse directly (one split) or the split's partial.
  const bool partial = p.splits > 1;
  const i64 total_rows = (i64)p.batch * p.heads_q * p.seqlen_q;  // the workspace's rows
  for (int c = tid; c < kRows * kChunksPerRow; c += kThreads) {
    const int r = c / kChunksPerRow;
    const int col = (c % kChunksPerRow) * 8;
    if (r >= w.rows_valid) continue;
    const float inv = sInv[r], lse = sLse[r];
    const int g = sG[r], i = sI[r];
    const int hq = w.hkv * w.group + g;
    const i64 row_id = ((i64)w.b * p.heads_q + hq) * p.seqlen_q + i;
    float sum[8];
    {
      const float* src = sO + r * kMergeStride + col;
      const float4 a = reinterpret_cast<const float4*>(src)[0], b = reinterpret_cast<const float4*>(src)[1];
      sum[0] = a.x, sum[1] = a.y, sum[2] = a.z, sum[3] = a.w, sum[4] = b.x, sum[5] = b.y, sum[6] = b.z, sum[7] = b.w;
    }
#pragma unroll
    for (int x = 1; x < kMergeSets; ++x) {
      const float* src = sO + (x * kRows + r) * kMergeStride + col;
      const float4 a = reinterpret_cast<const float4*>(src)[0], b = reinterpret_cast<const float4*>(src)[1];
      sum[0] += a.x, sum[1] += a.y, sum[2] += a.z, sum[3] += a.w, sum[4] += b.x, sum[5] += b.y, sum[6] += b.z, sum[7] += b.w;
    }
    const float* src = sum;
    if (partial) {
      float* dst = p.ws_o + ((i64)blockIdx.y * total_rows + row_id) * kHeadDim + col;
      store_float8(dst, src, inv);
      if (col == 0) p.ws_lse[(i64)blockIdx.y * total_rows + row_id] = lse;
    } else {
      u16* dst = static_cast<u16*>(p.o) + (i64)w.b * p.o_stride[0] + (w.q_row0 + i) * p.o_stride[1] +
                 (i64)hq * p.o_stride[2] + col;
      uint4 packed;
      packed.x = pack2(src[0] * inv, src[1] * inv);
      packed.y = pack2(src[2] * inv, src[3] * inv);
      packed.z = pack2(src[4] * inv, src[5] * inv);
      packed.w = pack2(src[6] * inv, src[7] * inv);
      *reinterpret_cast<uint4*>(dst) = packed;
      if (col == 0 && p.lse != nullptr) p.lse[lse_index(p, w.b, hq, i, w.q_row0)] = lse;
    }
  }
}

// Merges the splits' partials: one block of four warps per output row (b, hq, i). Each warp
// takes every fourth split; the whole row's partials (up to 64 splits at D <= 128) are loaded at
// once, together with the splits' lse, so the merge costs one round trip to L2 (at B1 a row
// has 32-64 splits; one dependent load per split cost a round trip each), then the warps add
// through shared memory. Rows past a varlen sequence's queries are left alone. On sm_90 the
// kernel is a programmatic dependent of the split kernel and first waits for it to finish.
namespace ftd {

constexpr int kCombineThreads = 128;
constexpr int kCombineWarps = kCombineThreads / 32;
// Partial rows in flight per warp: 16 (64 splits over 4 warps) while a lane's share of a row,
// D / 32 floats, stays <= 4 (<= 64 registers of loads), else 8.
constexpr int kCombineDepth = kHeadDim <= 128 ? 16 : 8;

// kN consecutive floats of a partial row (kN = D / 32), in the widest loads their alignment allows.
template <int kN>
__device__ __forceinline__ void load_floats(float (&dst)[kN], const float* src) {
  if (kN % 4 == 0) {
#pragma unroll
    for (int e = 0; e < kN; e += 4) {
      const float4 x = *reinterpret_cast<const float4*>(src + e);
      dst[e] = x.x, dst[e + 1] = x.y, dst[e + 2] = x.z, dst[e + 3] = x.w;
    }
  } else if (kN % 2 == 0) {
#pragma unroll
    for (int e = 0; e < kN; e += 2) {
      const float2 x = *reinterpret_cast<const float2*>(src + e);
      dst[e] = x.x, dst[e + 1] = x.y;
    }
  } else {
#pragma unroll
    for (int e = 0; e < kN; ++e) dst[e] = src[e];
  }
}

}  // namespace ftd

extern "C" __global__ void __launch_bounds__(ftd::kCombineThreads) FT_CAT(FT_KERNEL_NAME, _combine)(const ftd::FtDecodeParams p) {
  using namespace ftd;
  __shared__ float s_lse[64];  // base 2; at most 64 splits
  __shared__ __align__(16) float s_acc[kCombineWarps][kHeadDim];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const i64 total_rows = (i64)p.batch * p.heads_q * p.seqlen_q;
  // The row's coordinates from the parameters alone (a grid's x index fits an int), before the
  // wait, so their divisions overlap the split kernel's tail.
  const int row32 = int(blockIdx.x);
  const int i = row32 % p.seqlen_q;
  const int hq = (row32 / p.seqlen_q) % p.heads_q;
  const int b = row32 / (p.seqlen_q * p.heads_q);
  const i64 row = row32;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // Launched while the split kernel may still run: wait for it (and its writes) before any
  // global access, early exits included, so that this grid's end implies the split kernel's.
  // Then the next call's split kernel may be scheduled (it waits for this grid the same way).
  // The wait is predicated on the coordinates (all >= 0, so it always runs): ptxas hoists a
  // plain wait above arithmetic in its basic block, and a data dependency keeps it after them.
  asm volatile(
      "{\n .reg .pred ready;\n setp.ge.s32 ready, %0, 0;\n @ready griddepcontrol.wait;\n}" ::"r"(i | hq | b)
      : "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  i64 q_row0;
  if (i >= query_span(p, b, &q_row0)) return;  // the whole block: past this sequence's queries

  constexpr int kPer = kHeadDim / 32;  // columns per lane
  constexpr int kBatch = kCombineWarps * kCombineDepth;  // splits per round of loads
  const float* part = p.ws_o + row * kHeadDim + lane * kPer;
  const i64 split_stride = total_rows * kHeadDim;
  float x[kCombineDepth][kPer];
  // One round of partial rows, splits s0 + u * warps; the loads do not depend on the lse.
  auto load_round = [&](int s0) {
#pragma unroll
    for (int u = 0; u < kCombineDepth; ++u) {
      const int sp = s0 + u * kCombineWarps;
      if (sp < p.splits) {
        load_floats<kPer>(x[u], part + (i64)sp * split_stride);
      } else {
#pragma unroll
        for (int e = 0; e < kPer; ++e) x[u][e] = 0.f;
      }
    }
  };
  // The first round is in flight while the lse are read and reduced.
  load_round(warp);
  if ((int)threadIdx.x < p.splits) s_lse[threadIdx.x] = p.ws_lse[(i64)threadIdx.x * total_rows + row] * kLog2e;
  __syncthreads();
  // Every warp: lse = log2 sum_s 2^lse_s over the splits (two per lane).
  const float l0 = lane < p.splits ? s_lse[lane] : kNegInf;
  const float l1 = lane + 32 < p.splits ? s_lse[lane + 32] : kNegInf;
  float m = fmaxf(l0, l1);
#pragma unroll
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  const float m_base = m == kNegInf ? 0.f : m;
  float sum = fast_exp2(l0 - m_base) + fast_exp2(l1 - m_base);
#pragma unroll
  for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  const float lse2 = sum > 0.f ? m_base + fast_log2(sum) : kNegInf;
  const float lse_base = sum > 0.f ? lse2 : 0.f;  // weights 2^(lse_s - lse): 0 for empty splits

  float acc[kPer];
#pragma unroll
  for (int e = 0; e < kPer; ++e) acc[e] = 0.f;
  for (int s0 = warp;;) {
#pragma unroll
    for (int u = 0; u < kCombineDepth; ++u) {
      const int sp = s0 + u * kCombineWarps;
      const float wt = sp < p.splits ? fast_exp2(s_lse[sp] - lse_base) : 0.f;
#pragma unroll
      for (int e = 0; e < kPer; ++e) acc[e] += wt * x[u][e];
    }
    s0 += kBatch;
    if (s0 >= p.splits) break;
    load_round(s0);  // more splits than one round holds (D > 128 with more than 32 splits)
  }
#pragma unroll
  for (int e = 0; e < kPer; ++e) s_acc[warp][lane * kPer + e] = acc[e];
  __syncthreads();
  u16* o = static_cast<u16*>(p.o) + (i64)b * p.o_stride[0] + (q_row0 + i) * p.o_stride[1] + (i64)hq * p.o_stride[2];
  for (int c = threadIdx.x; c < kHeadDim; c += kCombineThreads) {
    float total = 0.f;
#pragma unroll
    for (int w = 0; w < kCombineWarps; ++w) total += s_acc[w][c];
    o[c] = (u16)(pack2(total, 0.f) & 0xffffu);
  }
  if (threadIdx.x == 0 && p.lse != nullptr) p.lse[lse_index(p, b, hq, i, q_row0)] = lse2 * kLn2;
}
