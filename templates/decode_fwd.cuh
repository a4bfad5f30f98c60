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
// K/V come from a dense [B, Nk, Hkv, D] tensor or, when block_table is set, from a page pool
// [num_blocks, block_size, Hkv, D]: key j of sequence b is row j % block_size of page
// block_table[b][j / block_size]. A page index outside [0, num_blocks) is not read (its keys
// read as zero). seqlens_k (optional for dense) gives each sequence its key count, clamped to
// [0, seqlen_k]. Causal aligns bottom-right per sequence: token i sees keys j <= i + n_k - Nq.
// A row that sees no key gets o = 0 and lse = -inf.
//
// Self-contained (inline PTX, no toolkit header). The generator prepends the constexpr
// prologue (namespace ft_config, FT_KERNEL_NAME); without it the defaults below compile.

#ifndef FT_CONFIG_PROVIDED
#define FT_KERNEL_NAME decode_fwd_bf16_d128_bn64_rm1_w4_s3_cs2_full
namespace ft_config {
constexpr bool kBf16 = true;
constexpr int kHeadDim = 128;
constexpr int kBlockN = 64;
constexpr int kRowTiles = 1;
constexpr int kWarps = 4;
constexpr int kStages = 3;
constexpr bool kCausal = false;
constexpr int kSmemBytes = 16 * (kHeadDim + 8) * 2 + 2 * kStages * kBlockN * (kHeadDim + 8) * 2;
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
constexpr int kRowStride = kHeadDim + 8;     // elements; the 16-byte pad spreads ldmatrix rows over banks
constexpr int kThreads = kWarps * 32;
constexpr int kWarpN = kBlockN / kWarps;     // keys per warp per step
constexpr int kNTiles = kWarpN / 8;
constexpr int kDTiles = kHeadDim / 8;
constexpr int kChunksPerRow = kHeadDim / 8;  // 16-byte chunks per row
constexpr int kMergeStride = kHeadDim + 4;   // fp32 merge rows: the pad spreads rows over banks
constexpr int kQBytes = kRows * kRowStride * 2;
constexpr int kPipelineBytes = kQBytes + 2 * kStages * kBlockN * kRowStride * 2;
constexpr int kMergeBytes = kQBytes + kRows * kMergeStride * 4 + 2 * kWarps * kRows * 4;

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

constexpr float kLn2 = 0.69314718055994531f;
constexpr float kLog2e = 1.44269504088896341f;

// The block's coordinates and the sequence's sizes, shared by the loader and the epilogue.
struct Work {
  int b, hkv, group, row0, rows_valid, n_k, step0, steps;
};

__device__ __forceinline__ Work plan_work(const FtDecodeParams& p) {
  Work w;
  w.b = blockIdx.x / p.heads_kv;
  w.hkv = blockIdx.x % p.heads_kv;
  w.group = p.heads_q / p.heads_kv;
  w.row0 = blockIdx.z * kRows;
  const int total_rows = w.group * p.seqlen_q;
  w.rows_valid = min(kRows, total_rows - w.row0);
  int n_k = p.seqlen_k;
  if (p.seqlens_k != nullptr) n_k = min(max(p.seqlens_k[w.b], 0), p.seqlen_k);
  w.n_k = n_k;
  // Keys any row of this tile sees: causal limits them by the tile's last query token.
  int limit = n_k;
  if (kCausal) {
    const int last = w.row0 + w.rows_valid - 1;
    const int max_i = (last / p.seqlen_q != w.row0 / p.seqlen_q) ? p.seqlen_q - 1 : last % p.seqlen_q;
    limit = min(n_k, max(0, max_i + 1 + n_k - p.seqlen_q));
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
  const Work w = plan_work(p);
  const int Nq = p.seqlen_q;

  u16* sQ = reinterpret_cast<u16*>(smem);
  const u32 sQ_addr = smem_address(sQ);
  const u32 sK_addr = sQ_addr + kQBytes;
  constexpr u32 kStageBytes = kBlockN * kRowStride * 2;
  const u32 sV_addr = sK_addr + kStages * kStageBytes;

  const u16* kbase = static_cast<const u16*>(p.k) + (i64)w.hkv * p.k_stride[2];
  const u16* vbase = static_cast<const u16*>(p.v) + (i64)w.hkv * p.v_stride[2];
  const int* table = p.block_table ? p.block_table + (i64)w.b * p.block_table_stride : nullptr;
  if (table == nullptr) {
    kbase += (i64)w.b * p.k_stride[0];
    vbase += (i64)w.b * p.v_stride[0];
  }
  const int page_mask = (1 << p.block_shift) - 1;

  // One step's K and V rows (one commit group); keys past n_k or on a bad page read as zero.
  auto issue_step = [&](int it) {
    if (it < w.steps) {
      const int n0 = (w.step0 + it) * kBlockN;
      const u32 stage = (u32)(it % kStages) * kStageBytes;
      constexpr int kChunks = kBlockN * kChunksPerRow;
#pragma unroll
      for (int c0 = 0; c0 < kChunks; c0 += kThreads) {
        const int c = c0 + tid;
        if (kChunks % kThreads == 0 || c < kChunks) {
          const int r = c / kChunksPerRow;
          const int col = (c % kChunksPerRow) * 8;
          const int key = n0 + r;
          bool valid = key < w.n_k;
          i64 koff = 0, voff = 0;
          if (valid) {
            if (table != nullptr) {
              const int page = table[key >> p.block_shift];
              valid = page >= 0 && page < p.num_blocks;
              const int in_page = key & page_mask;
              koff = (i64)page * p.k_stride[0] + (i64)in_page * p.k_stride[1];
              voff = (i64)page * p.v_stride[0] + (i64)in_page * p.v_stride[1];
            } else {
              koff = (i64)key * p.k_stride[1];
              voff = (i64)key * p.v_stride[1];
            }
          }
          const u32 dst = (u32)((r * kRowStride + col) * 2) + stage;
          cp_async16(sK_addr + dst, valid ? kbase + koff + col : kbase, valid ? 16 : 0);
          cp_async16(sV_addr + dst, valid ? vbase + voff + col : vbase, valid ? 16 : 0);
        }
      }
    }
    cp_async_commit();  // empty groups keep the wait counts uniform
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
    // Q rows: packed (head g, token i); rows past the tile's end read as zero.
    constexpr int kQChunks = kRows * kChunksPerRow;
    for (int c = tid; c < kQChunks; c += kThreads) {
      const int r = c / kChunksPerRow;
      const int col = (c % kChunksPerRow) * 8;
      const bool valid = r < w.rows_valid;
      const int rg = w.row0 + r;
      const int g = valid ? rg / Nq : 0, i = valid ? rg % Nq : 0;
      const u16* src = static_cast<const u16*>(p.q) + (i64)w.b * p.q_stride[0] + (i64)i * p.q_stride[1] +
                       (i64)(w.hkv * w.group + g) * p.q_stride[2] + col;
      cp_async16(sQ_addr + (u32)((r * kRowStride + col) * 2), valid ? src : p.q, valid ? 16 : 0);
    }
    cp_async_commit();
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) issue_step(s);

    const float scale_log2 = p.scale_log2;
    const int wn0 = warp * kWarpN;
    const int diag = w.n_k - Nq;  // token i sees keys j <= i + diag
    for (int it = 0; it < w.steps; ++it) {
      cp_async_wait<kStages - 2>();  // Q and this step's K/V have landed
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
          ldmatrix_x4(a[mi], sQ_addr + (u32)(((mi * 16 + (lane % 16)) * kRowStride + ks * 16 + (lane / 16) * 8) * 2));
#pragma unroll
        for (int nj = 0; nj < kNTiles; nj += 2) {
          u32 b[4];
          ldmatrix_x4(b, sK_addr + stage +
                         (u32)(((wn0 + nj * 8 + (lane / 16) * 8 + (lane % 8)) * kRowStride + ks * 16 +
                                ((lane / 8) % 2) * 8) * 2));
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
              const int i = (w.row0 + mi * 16 + lane / 4 + (e >= 2 ? 8 : 0)) % Nq;
              if (key >= w.n_k || (kCausal && key > i + diag)) acc_s[mi][nj][e] = kNegInf;
            }
      }
      // Online softmax in the exp2 domain, per warp over its keys.
      u32 p_frag[kRowTiles][kNTiles][2];
#pragma unroll
      for (int mi = 0; mi < kRowTiles; ++mi) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          float mx = kNegInf;
#pragma unroll
          for (int nj = 0; nj < kNTiles; ++nj) mx = fmaxf(mx, fmaxf(acc_s[mi][nj][2 * r], acc_s[mi][nj][2 * r + 1]));
          mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
          mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
          const float m_new = fmaxf(row_max[mi][r], mx * scale_log2);
          const float m_base = m_new == kNegInf ? 0.f : m_new;  // no visible key yet: exp2 stays 0
          const float corr = fast_exp2(row_max[mi][r] - m_base);
          row_max[mi][r] = m_new;
          float sum = 0.f;
#pragma unroll
          for (int nj = 0; nj < kNTiles; ++nj) {
            const float p0 = fast_exp2(fmaf(acc_s[mi][nj][2 * r], scale_log2, -m_base));
            const float p1 = fast_exp2(fmaf(acc_s[mi][nj][2 * r + 1], scale_log2, -m_base));
            p_frag[mi][nj][r] = pack2(p0, p1);
            sum += p0 + p1;
          }
          row_sum[mi][r] = row_sum[mi][r] * corr + sum;
#pragma unroll
          for (int dt = 0; dt < kDTiles; ++dt) {
            acc_o[mi][dt][2 * r] *= corr;
            acc_o[mi][dt][2 * r + 1] *= corr;
          }
        }
      }
#pragma unroll
      for (int kk = 0; kk < kWarpN / 16; ++kk) {
        u32 pa[kRowTiles][4];
#pragma unroll
        for (int mi = 0; mi < kRowTiles; ++mi) {
          pa[mi][0] = p_frag[mi][2 * kk][0];
          pa[mi][1] = p_frag[mi][2 * kk][1];
          pa[mi][2] = p_frag[mi][2 * kk + 1][0];
          pa[mi][3] = p_frag[mi][2 * kk + 1][1];
        }
#pragma unroll
        for (int dt = 0; dt < kDTiles; dt += 2) {
          u32 b[4];
          ldmatrix_x4_trans(b, sV_addr + stage +
                           (u32)(((wn0 + kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8) * kRowStride +
                                  (dt + lane / 16) * 8) * 2));
#pragma unroll
          for (int mi = 0; mi < kRowTiles; ++mi) {
            mma_16816(acc_o[mi][dt], pa[mi], b[0], b[1]);
            mma_16816(acc_o[mi][dt + 1], pa[mi], b[2], b[3]);
          }
        }
      }
    }
    cp_async_wait<0>();
  }
  __syncthreads();  // the K/V buffers become the merge area

  // Merge the warps: each publishes its rows' max and sum, then adds its rescaled O in turn.
  float* sO = reinterpret_cast<float*>(smem + kQBytes);
  float* sM = sO + kRows * kMergeStride;  // [warp][row]
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
#pragma unroll 1
  for (int turn = 0; turn < kWarps; ++turn) {
    if (warp == turn) {
#pragma unroll
      for (int mi = 0; mi < kRowTiles; ++mi)
#pragma unroll
        for (int dt = 0; dt < kDTiles; ++dt)
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            float* dst = sO + (mi * 16 + lane / 4 + r * 8) * kMergeStride + dt * 8 + 2 * (lane % 4);
            const float x0 = acc_o[mi][dt][2 * r] * scale[mi][r], x1 = acc_o[mi][dt][2 * r + 1] * scale[mi][r];
            if (turn == 0) {
              dst[0] = x0;
              dst[1] = x1;
            } else {
              dst[0] += x0;
              dst[1] += x1;
            }
          }
    }
    __syncthreads();
  }

  // Epilogue: normalise each row once; o and lse directly (one split) or the split's partial.
  const bool partial = p.splits > 1;
  const i64 total_rows = (i64)p.batch * p.heads_q * Nq;
  for (int c = tid; c < kRows * kChunksPerRow; c += kThreads) {
    const int r = c / kChunksPerRow;
    const int col = (c % kChunksPerRow) * 8;
    if (r >= w.rows_valid) continue;
    float m = kNegInf;
#pragma unroll
    for (int x = 0; x < kWarps; ++x) m = fmaxf(m, sM[x * kRows + r]);
    const float m_base = m == kNegInf ? 0.f : m;
    float l = 0.f;
#pragma unroll
    for (int x = 0; x < kWarps; ++x) l += sL[x * kRows + r] * fast_exp2(sM[x * kRows + r] - m_base);
    const float inv = l > 0.f ? 1.f / l : 0.f;
    const float lse = l > 0.f ? (m + fast_log2(l)) * kLn2 : kNegInf;
    const int rg = w.row0 + r;
    const int g = rg / Nq, i = rg % Nq;
    const int hq = w.hkv * w.group + g;
    const i64 row_id = ((i64)w.b * p.heads_q + hq) * Nq + i;
    const float* src = sO + r * kMergeStride + col;
    if (partial) {
      float* dst = p.ws_o + ((i64)blockIdx.y * total_rows + row_id) * kHeadDim + col;
      store_float8(dst, src, inv);
      if (col == 0) p.ws_lse[(i64)blockIdx.y * total_rows + row_id] = lse;
    } else {
      u16* dst = static_cast<u16*>(p.o) + (i64)w.b * p.o_stride[0] + (i64)i * p.o_stride[1] + (i64)hq * p.o_stride[2] + col;
      uint4 packed;
      packed.x = pack2(src[0] * inv, src[1] * inv);
      packed.y = pack2(src[2] * inv, src[3] * inv);
      packed.z = pack2(src[4] * inv, src[5] * inv);
      packed.w = pack2(src[6] * inv, src[7] * inv);
      *reinterpret_cast<uint4*>(dst) = packed;
      if (col == 0 && p.lse != nullptr) p.lse[row_id] = lse;
    }
  }
}

// Merges the splits' partials: one warp per output row (b, hq, i), four rows per block.
extern "C" __global__ void __launch_bounds__(128) FT_CAT(FT_KERNEL_NAME, _combine)(const ftd::FtDecodeParams p) {
  using namespace ftd;
  const int lane = threadIdx.x % 32;
  const i64 total_rows = (i64)p.batch * p.heads_q * p.seqlen_q;
  const i64 row = (i64)blockIdx.x * 4 + threadIdx.x / 32;
  if (row >= total_rows) return;
  // Each lane holds the lse (base 2 here) of splits lane and lane + 32 (at most 64 splits).
  const float l0 = lane < p.splits ? p.ws_lse[(i64)lane * total_rows + row] * kLog2e : kNegInf;
  const float l1 = lane + 32 < p.splits ? p.ws_lse[(i64)(lane + 32) * total_rows + row] * kLog2e : kNegInf;
  float m = fmaxf(l0, l1);
#pragma unroll
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  const float m_base = m == kNegInf ? 0.f : m;
  float s = fast_exp2(l0 - m_base) + fast_exp2(l1 - m_base);
#pragma unroll
  for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
  const float lse2 = s > 0.f ? m_base + fast_log2(s) : kNegInf;
  const float lse_base = s > 0.f ? lse2 : 0.f;
  const float w0 = fast_exp2(l0 - lse_base), w1 = fast_exp2(l1 - lse_base);  // 0 for empty splits
  const float lse = lse2 * kLn2;

  const int i = int(row % p.seqlen_q);
  const int hq = int((row / p.seqlen_q) % p.heads_q);
  const int b = int(row / ((i64)p.seqlen_q * p.heads_q));
  // Each lane owns kPer consecutive columns. The splits' partials are independent loads: four
  // accumulators keep four of them in flight instead of one dependent load per split.
  constexpr int kPer = kHeadDim / 32;
  float acc[4][kPer];
#pragma unroll
  for (int u = 0; u < 4; ++u)
#pragma unroll
    for (int e = 0; e < kPer; ++e) acc[u][e] = 0.f;
  const float* part = p.ws_o + row * kHeadDim + lane * kPer;
  const i64 split_stride = total_rows * kHeadDim;
  int sp = 0;
  for (; sp + 4 <= p.splits; sp += 4) {
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const float wt = __shfl_sync(0xffffffffu, sp + u < 32 ? w0 : w1, (sp + u) % 32);
      const float* src = part + (i64)(sp + u) * split_stride;
#pragma unroll
      for (int e = 0; e < kPer; ++e) acc[u][e] += wt * src[e];
    }
  }
  for (; sp < p.splits; ++sp) {
    const float wt = __shfl_sync(0xffffffffu, sp < 32 ? w0 : w1, sp % 32);
    const float* src = part + (i64)sp * split_stride;
#pragma unroll
    for (int e = 0; e < kPer; ++e) acc[0][e] += wt * src[e];
  }
  u16* o = static_cast<u16*>(p.o) + (i64)b * p.o_stride[0] + (i64)i * p.o_stride[1] + (i64)hq * p.o_stride[2] +
           lane * kPer;
#pragma unroll
  for (int e = 0; e < kPer; ++e) {
    const float x = (acc[0][e] + acc[1][e]) + (acc[2][e] + acc[3][e]);
    o[e] = (u16)(pack2(x, 0.f) & 0xffffu);
  }
  if (lane == 0 && p.lse != nullptr) p.lse[row] = lse;
}
