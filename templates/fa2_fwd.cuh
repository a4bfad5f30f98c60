// FlashAttention-2 forward kernel template (flashtune).
//
// One thread block owns one B_r x D tile of O for its whole life (queries outermost) and
// walks the K/V blocks of its (batch, head) from the last to the first, keeping an
// unnormalised fp32 accumulator that is rescaled by exp2(m - m') per step and divided by
// the row sum once at the end. Each warp owns B_r / warps query rows (split-Q): no
// shared-memory reduction. S = Q K^T and O += P V run on mma.sync m16n8k16 with fp32
// accumulation; P stays in registers as the A operand of the second MMA. K/V tiles arrive
// by cp.async into `kStages` shared-memory buffers; rows are padded by 16 bytes so that
// ldmatrix rows fall into distinct banks.
//
// No toolkit header: conversions and tensor-core ops go through inline PTX. The generator
// prepends a constexpr prologue (namespace ft_config, FT_KERNEL_NAME) and inlines the two shared
// headers (ft_kernel_abi.cuh: the parameter struct the host fills; ft_device.cuh: the PTX
// helpers); without the prologue the defaults below let the file compile on its own.
//
// Semantics: q [B, Nq, Hq, D], k/v [B, Nk, Hkv, D], o like q (strides in elements, last dim
// contiguous), lse [B, Hq, Nq] fp32 (optional). Varlen (cu_seqlens set): q/o [total_q, Hq, D],
// k/v [total_k, Hkv, D] packed, sequence b at rows cu_seqlens[b], lse [Hq, total_q]. seqlens_k
// (optional) gives sequence b its first seqlens_k[b] keys. kPagedKv (the fa2_paged family): k/v
// are page pools [num_blocks, block_size, Hkv, D] read through the block table, seqlens_k
// required, q dense or packed by cu_seqlens_q. Causal masks align bottom-right per sequence:
// query i sees keys j <= i + Nk - Nq. A row that sees no key (a sequence of 0 keys included)
// gets o = 0 and lse = -inf.

#ifndef FT_CONFIG_PROVIDED
#define FT_KERNEL_NAME fa2_fwd_bf16_d128_br128_bc64_w4_s2_full
namespace ft_config {
constexpr bool kBf16 = true;
constexpr int kHeadDim = 128;
constexpr int kBlockM = 128;
constexpr int kBlockN = 64;
constexpr int kWarps = 4;
constexpr int kStages = 2;
constexpr bool kCausal = false;
constexpr bool kPagedKv = false;
constexpr int kSmemBytes = (kBlockM + 2 * kStages * kBlockN) * (kHeadDim + 8) * 2;
}  // namespace ft_config
#endif

#include "ft_kernel_abi.cuh"

namespace ft {

using namespace ft_config;
typedef unsigned int u32;
typedef unsigned short u16;
typedef long long i64;

using FtParams = ft_abi::Fa2Params;

constexpr int kRowStride = kHeadDim + 8;  // elements; the 16-byte pad spreads ldmatrix rows over banks
constexpr int kThreads = kWarps * 32;
constexpr int kRowsPerWarp = kBlockM / kWarps;
constexpr int kMTiles = kRowsPerWarp / 16;  // 16-row MMA tiles per warp
constexpr int kNTiles = kBlockN / 8;        // 8-key column tiles of S
constexpr int kDTiles = kHeadDim / 8;       // 8-wide column tiles of O
constexpr int kChunksPerRow = kHeadDim / 8; // 16-byte chunks per row
// Keep Q's MMA fragments in registers when they cost at most 32 registers per thread.
constexpr bool kQInRegisters = kMTiles * kHeadDim <= 128;

static_assert(kHeadDim % 32 == 0 && kHeadDim >= 32 && kHeadDim <= 256,
              "head dim must be one of 32, 64, 96, 128, 160, 192, 224, 256");
static_assert(kBlockM == 64 || kBlockM == 128, "block_m (B_r) must be 64 or 128");
static_assert(kBlockN == 32 || kBlockN == 64 || kBlockN == 128, "block_n (B_c) must be 32, 64 or 128");
static_assert(kWarps == 4 || kWarps == 8, "warps must be 4 or 8");
static_assert(kBlockM % (kWarps * 16) == 0,
              "block_m must be a multiple of 16 * warps: each warp owns whole 16-row MMA tiles");
static_assert(kStages >= 1 && kStages <= 3, "stages must be 1, 2 or 3");
static_assert(kSmemBytes == (kBlockM + 2 * kStages * kBlockN) * kRowStride * 2,
              "kSmemBytes disagrees with the template's shared-memory layout");
static_assert(kSmemBytes <= 232448, "shared memory exceeds the largest opt-in limit (227 KB)");

#include "ft_device.cuh"

// Copies rows [row0, row0 + kRows) of a sequence into a padded shared tile, key j's row from
// src + offset(j) (elements; negative: not read). Rows at or past `rows_valid`, or not read,
// are zero-filled so no NaN can leak into the MMAs.
template <int kRows, class Offset>
__device__ __forceinline__ void load_rows(u32 dst, const u16* src, int row0, int rows_valid, Offset offset) {
  constexpr int kChunks = kRows * kChunksPerRow;
  constexpr int kIters = (kChunks + kThreads - 1) / kThreads;
#pragma unroll
  for (int i = 0; i < kIters; ++i) {
    const int c = threadIdx.x + i * kThreads;
    if (kChunks % kThreads == 0 || c < kChunks) {
      const int r = c / kChunksPerRow;
      const int col = (c % kChunksPerRow) * 8;
      const i64 off = row0 + r < rows_valid ? offset(row0 + r) : -1;
      cp_async16(dst + (u32)((r * kRowStride + col) * 2), off >= 0 ? src + off + col : src, off >= 0 ? 16 : 0);
    }
  }
}

// load_rows of a [N, D] slice (row stride in elements).
template <int kRows>
__device__ __forceinline__ void load_tile(u32 dst, const u16* src, i64 row_stride, int row0, int rows_valid) {
  constexpr int kChunks = kRows * kChunksPerRow;
  if constexpr (kThreads % kChunksPerRow == 0 && kChunks % kThreads == 0) {
    // Each thread copies one column of rows r, r + kRowsPerIter, ...: one running pointer
    // instead of kIters precomputed 64-bit offsets, which cost registers the MMAs need.
    constexpr int kIters = kChunks / kThreads;
    constexpr int kRowsPerIter = kThreads / kChunksPerRow;
    const int r = threadIdx.x / kChunksPerRow;
    const int col = (threadIdx.x % kChunksPerRow) * 8;
    const u16* g = src + (i64)(row0 + r) * row_stride + col;
    const i64 step = (i64)kRowsPerIter * row_stride;
    const u32 d = dst + (u32)((r * kRowStride + col) * 2);
    const int rows_left = rows_valid - row0 - r;
#pragma unroll
    for (int i = 0; i < kIters; ++i) {
      const bool valid = i * kRowsPerIter < rows_left;
      cp_async16(d + (u32)(i * kRowsPerIter * kRowStride * 2), valid ? g : src, valid ? 16 : 0);
      g += step;
    }
  } else {
    load_rows<kRows>(dst, src, row0, rows_valid, [&](int key) { return (i64)key * row_stride; });
  }
}

// load_rows of a paged K or V tile: key j is row j & page_mask of page table[j >> shift] of a
// pool at `src` (the head's first element; page and row strides in elements). A page outside
// [0, num_pages) is not read.
template <int kRows>
__device__ __forceinline__ void load_paged_tile(u32 dst, const u16* src, const int* table, int shift, int num_pages,
                                                i64 page_stride, i64 row_stride, int row0, int rows_valid) {
  const int page_mask = (1 << shift) - 1;
  auto offset = [&](int key) {
    const int page = table[key >> shift];
    return page >= 0 && page < num_pages ? (i64)page * page_stride + (i64)(key & page_mask) * row_stride : (i64)-1;
  };
  constexpr int kChunks = kRows * kChunksPerRow;
  if constexpr (kThreads % kChunksPerRow == 0 && kChunks % kThreads == 0) {
    // As load_tile: one column of rows r, r + kRowsPerIter, ... a thread, each row's page looked up.
    constexpr int kIters = kChunks / kThreads;
    constexpr int kRowsPerIter = kThreads / kChunksPerRow;
    const int r = threadIdx.x / kChunksPerRow;
    const int col = (threadIdx.x % kChunksPerRow) * 8;
    const u32 d = dst + (u32)((r * kRowStride + col) * 2);
#pragma unroll
    for (int i = 0; i < kIters; ++i) {
      const int key = row0 + r + i * kRowsPerIter;
      const i64 off = key < rows_valid ? offset(key) : -1;
      cp_async16(d + (u32)(i * kRowsPerIter * kRowStride * 2), off >= 0 ? src + off + col : src, off >= 0 ? 16 : 0);
    }
  } else {
    load_rows<kRows>(dst, src, row0, rows_valid, offset);
  }
}

}  // namespace ft

extern "C" __global__ void __launch_bounds__(ft::kThreads) FT_KERNEL_NAME(const ft::FtParams p) {
  using namespace ft;
  extern __shared__ __align__(16) unsigned char smem[];

  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int lane = tid % 32;
  // Causal: the last query blocks see the most keys; launch them first.
  const int m_block = kCausal ? int(gridDim.x - 1 - blockIdx.x) : int(blockIdx.x);
  const int head = blockIdx.y;
  const int batch = blockIdx.z;
  const int kv_head = head / (p.heads_q / p.heads_kv);
  // Dense: every sequence has seqlen_q/k rows at batch * stride. Varlen: sequence `batch` is
  // rows [cu[b], cu[b+1]) of the packed tensors; the grid covers the longest sequence, so
  // blocks past this one's end leave at once. Paged: the queries dense or packed, the keys in
  // pages (no batch offset: the table finds them), seqlens_k[b] of them.
  const bool packed_q = p.cu_seqlens_q != nullptr;
  i64 q_row0 = 0, k_row0 = 0;  // the sequence's first row in the packed tensors
  int Nq = p.seqlen_q;
  int Nk = p.seqlen_k;
  if (packed_q) Nq = varlen_span(p.cu_seqlens_q, batch, p.seqlen_q, p.total_q, &q_row0);
  if (!kPagedKv && p.cu_seqlens_k != nullptr) Nk = varlen_span(p.cu_seqlens_k, batch, p.seqlen_k, p.total_k, &k_row0);
  if (p.seqlens_k != nullptr) Nk = min(max(p.seqlens_k[batch], 0), p.seqlen_k);
  const int m0 = m_block * kBlockM;
  if (m0 >= Nq) return;
  const int diag = Nk - Nq;  // query i sees keys j <= i + diag

  int n_blocks = (Nk + kBlockN - 1) / kBlockN;
  if (kCausal) {
    const int last_row = min(m0 + kBlockM, Nq) - 1;
    const int last_key = last_row + diag;
    n_blocks = last_key < 0 ? 0 : min(n_blocks, last_key / kBlockN + 1);
  }

  // 64-bit offsets throughout (a packed tensor's rows times its row stride passes 2^31).
  const u16* q = static_cast<const u16*>(p.q) + batch * p.q_stride[0] + q_row0 * p.q_stride[1] + head * p.q_stride[2];
  const i64 kv_batch = kPagedKv ? 0 : batch;  // a pool's stride[0] is between pages
  const u16* k = static_cast<const u16*>(p.k) + kv_batch * p.k_stride[0] + k_row0 * p.k_stride[1] + kv_head * p.k_stride[2];
  const u16* v = static_cast<const u16*>(p.v) + kv_batch * p.v_stride[0] + k_row0 * p.v_stride[1] + kv_head * p.v_stride[2];
  u16* o = static_cast<u16*>(p.o) + batch * p.o_stride[0] + q_row0 * p.o_stride[1] + head * p.o_stride[2];
  // lse: dense [B, Hq, Nq]; packed queries [Hq, total_q].
  float* lse = p.lse == nullptr ? nullptr
               : packed_q     ? p.lse + (i64)head * p.total_q + q_row0
                              : p.lse + ((i64)batch * p.heads_q + head) * Nq;
  const int* table = kPagedKv ? p.block_table + (i64)batch * p.block_table_stride : nullptr;

  u16* sQ = reinterpret_cast<u16*>(smem);
  const u32 sQ_addr = smem_address(sQ);
  const u32 sK_addr = sQ_addr + kBlockM * kRowStride * 2;
  const u32 sV_addr = sK_addr + kStages * kBlockN * kRowStride * 2;
  constexpr u32 kStageBytes = kBlockN * kRowStride * 2;

  const int warp_row0 = warp * kRowsPerWarp;  // first row of this warp within the block

  float acc_o[kMTiles][kDTiles][4];
  float row_max[kMTiles][2];  // running max of scores, already times scale*log2(e)
  float row_sum[kMTiles][2];  // this thread's share of the row sum (reduced across the quad at the end)
#pragma unroll
  for (int mi = 0; mi < kMTiles; ++mi) {
#pragma unroll
    for (int dt = 0; dt < kDTiles; ++dt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_o[mi][dt][e] = 0.f;
    row_max[mi][0] = row_max[mi][1] = kNegInf;
    row_sum[mi][0] = row_sum[mi][1] = 0.f;
  }

  if (n_blocks > 0) {
    load_tile<kBlockM>(sQ_addr, q, p.q_stride[1], m0, Nq);
    cp_async_commit();
    // Each K/V block is two commit groups (K, then V) so S = QK^T can start before V lands.
    auto issue_block = [&](int it) {
      if (it < n_blocks) {
        const int n0 = (n_blocks - 1 - it) * kBlockN;
        const u32 stage = (u32)(it % kStages) * kStageBytes;
        if constexpr (kPagedKv) {
          load_paged_tile<kBlockN>(sK_addr + stage, k, table, p.block_shift, p.num_blocks, p.k_stride[0],
                                   p.k_stride[1], n0, Nk);
          cp_async_commit();
          load_paged_tile<kBlockN>(sV_addr + stage, v, table, p.block_shift, p.num_blocks, p.v_stride[0],
                                   p.v_stride[1], n0, Nk);
        } else {
          load_tile<kBlockN>(sK_addr + stage, k, p.k_stride[1], n0, Nk);
          cp_async_commit();
          load_tile<kBlockN>(sV_addr + stage, v, p.v_stride[1], n0, Nk);
        }
        cp_async_commit();
      } else {
        cp_async_commit();  // empty groups keep the wait counts uniform
        cp_async_commit();
      }
    };
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) issue_block(s);
    // Small Q tiles stay in registers for the whole K/V loop instead of being re-read per block.
    u32 q_frag[kHeadDim / 16][kMTiles][4];  // dead (and removed) unless kQInRegisters
    auto q_fragment_address = [&](int mi, int ks) {
      return sQ_addr + (u32)(((warp_row0 + mi * 16 + (lane % 16)) * kRowStride + ks * 16 + (lane / 16) * 8) * 2);
    };
    auto load_q_fragments = [&]() {
#pragma unroll
      for (int ks = 0; ks < kHeadDim / 16; ++ks)
#pragma unroll
        for (int mi = 0; mi < kMTiles; ++mi) ldmatrix_x4(q_frag[ks][mi], q_fragment_address(mi, ks));
    };

    const float scale_log2 = p.scale_log2;
    for (int it = 0; it < n_blocks; ++it) {
      const int n0 = (n_blocks - 1 - it) * kBlockN;
      const u32 stage = (u32)(it % kStages) * kStageBytes;
      if constexpr (kStages == 1) {
        __syncthreads();  // every warp is done with the only buffer before it is refilled
        issue_block(it);
        cp_async_wait<1>();  // Q and this block's K have landed
        __syncthreads();
      } else {
        cp_async_wait<2 * (kStages - 2) + 1>();  // Q and this block's K have landed
        // Past this barrier every warp has finished block it-1, so its buffer can be refilled.
        __syncthreads();
        issue_block(it + kStages - 1);
      }
      if (it == 0 && kQInRegisters) load_q_fragments();

      float acc_s[kMTiles][kNTiles][4];
#pragma unroll
      for (int mi = 0; mi < kMTiles; ++mi)
#pragma unroll
        for (int nj = 0; nj < kNTiles; ++nj)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc_s[mi][nj][e] = 0.f;

#pragma unroll
      for (int ks = 0; ks < kHeadDim / 16; ++ks) {
        u32 a_smem[kMTiles][4];
        if constexpr (!kQInRegisters) {
#pragma unroll
          for (int mi = 0; mi < kMTiles; ++mi) ldmatrix_x4(a_smem[mi], q_fragment_address(mi, ks));
        }
        const u32(&a)[kMTiles][4] = kQInRegisters ? q_frag[ks] : a_smem;
#pragma unroll
        for (int nj = 0; nj < kNTiles; nj += 2) {
          u32 b[4];
          ldmatrix_x4(b, sK_addr + stage +
                             (u32)(((nj * 8 + (lane / 16) * 8 + (lane % 8)) * kRowStride + ks * 16 +
                                    ((lane / 8) % 2) * 8) * 2));
#pragma unroll
          for (int mi = 0; mi < kMTiles; ++mi) {
            mma_16816(acc_s[mi][nj], a[mi], b[0], b[1]);
            mma_16816(acc_s[mi][nj + 1], a[mi], b[2], b[3]);
          }
        }
      }

      // Only blocks that cross the sequence end or this warp's causal diagonal mask per element.
      const bool need_mask = (n0 + kBlockN > Nk) || (kCausal && n0 + kBlockN - 1 > m0 + warp_row0 + diag);
      if (need_mask) {
#pragma unroll
        for (int mi = 0; mi < kMTiles; ++mi)
#pragma unroll
          for (int nj = 0; nj < kNTiles; ++nj)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const int row = m0 + warp_row0 + mi * 16 + lane / 4 + (e >= 2 ? 8 : 0);
              const int col = n0 + nj * 8 + 2 * (lane % 4) + (e & 1);
              if (col >= Nk || (kCausal && col > row + diag)) acc_s[mi][nj][e] = kNegInf;
            }
      }

      // Online softmax in the exp2 domain; scale*log2(e) folded into one FMA per score. P is
      // packed to 16 bits as soon as it exists, so the fp32 scores are dead before acc_o is
      // rescaled: that keeps the peak register count at acc_o + half of acc_s.
      u32 p_frag[kMTiles][kNTiles][2];  // [mi][nj][r]: row r's two adjacent columns of tile nj
      float correction[kMTiles][2];
      bool max_moved = false;
#pragma unroll
      for (int mi = 0; mi < kMTiles; ++mi)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          correction[mi][r] = softmax_row_step(acc_s[mi], r, scale_log2, row_max[mi][r], row_sum[mi][r], p_frag[mi]);
          max_moved |= correction[mi][r] != 1.f;
        }
      // Once the running max settles, most blocks leave it unchanged for the whole warp; the
      // skipped multiplies would all have been by exactly 1.0f, so the result is bit-identical.
      if (__any_sync(0xffffffffu, max_moved)) {
#pragma unroll
        for (int mi = 0; mi < kMTiles; ++mi) scale_rows(acc_o[mi], correction[mi][0], correction[mi][1]);
      }

      cp_async_wait<2 * (kStages - 1)>();  // this block's V has landed
      __syncthreads();

      pv_mma<kMTiles, kNTiles, kDTiles, PaddedRows<kRowStride>>(acc_o, p_frag, sV_addr + stage, lane);
    }
    cp_async_wait<0>();
  }

  // Epilogue: divide by the row sum once, stage this warp's rows of O through its own rows of
  // the Q tile (no other warp reads them), then write 16-byte coalesced chunks.
  __syncwarp();
#pragma unroll
  for (int mi = 0; mi < kMTiles; ++mi) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float sum = row_sum[mi][r];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const float inv = sum > 0.f ? 1.f / sum : 0.f;
      const int local_row = warp_row0 + mi * 16 + lane / 4 + r * 8;
      if (lse != nullptr && lane % 4 == 0 && m0 + local_row < Nq)
        lse[m0 + local_row] = sum > 0.f ? (row_max[mi][r] + fast_log2(sum)) * 0.69314718055994531f : kNegInf;
#pragma unroll
      for (int dt = 0; dt < kDTiles; ++dt) {
        const u32 packed = pack2(acc_o[mi][dt][2 * r] * inv, acc_o[mi][dt][2 * r + 1] * inv);
        *reinterpret_cast<u32*>(sQ + local_row * kRowStride + dt * 8 + 2 * (lane % 4)) = packed;
      }
    }
  }
  __syncwarp();
  constexpr int kWarpChunks = kRowsPerWarp * kChunksPerRow;
#pragma unroll
  for (int c = lane; c < kWarpChunks; c += 32) {
    const int local_row = warp_row0 + c / kChunksPerRow;
    const int col = (c % kChunksPerRow) * 8;
    if (m0 + local_row < Nq) {
      const uint4 chunk = *reinterpret_cast<const uint4*>(sQ + local_row * kRowStride + col);
      *reinterpret_cast<uint4*>(o + (i64)(m0 + local_row) * p.o_stride[1] + col) = chunk;
    }
  }
}
