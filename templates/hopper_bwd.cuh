// Hopper (sm_90a) attention backward kernel template (flashtune): dq, dk, dv from q, k, v, o,
// lse, d_o with wgmma, TMA and mbarriers (FlashAttention-3's backward layout). kDeterministic
// false: blocks add their dQ tiles to the fp32 accumulator in whatever order they run; true:
// in key block order (bit-identical runs), see "Deterministic mode" below.
//
// Three kernels of one module, launched in order on one stream with the same parameters:
//  1. FT_KERNEL_NAME (preprocess): delta = rowsum(d_o ∘ o) per query row; zeroes the fp32 dq
//     accumulator and the ordering counters (fa2_bwd's preprocess, on this family's parameter
//     struct).
//  2. FT_KERNEL_NAME_main: one thread block per (key block of kBlockN = 128 keys, K/V head,
//     batch); a producer warpgroup and two consumer warpgroups, consumer cw owning keys
//     64cw .. 64cw + 63 of the block (every wgmma has M = 64).
//     - the producer's first warp: lane 0 loads the block's K and V tiles once, then for each
//       query step the Q and d_o tiles (kBlockM = 64 queries) into a two-stage ring by TMA;
//       all 32 lanes copy the step's lse (in the exp2 domain; +inf for rows past the end or
//       with no visible key, so their P is exactly 0) and delta into shared memory. A stage's
//       "full" mbarrier completes with the TMA bytes and the 32 lanes' arrivals; its "empty"
//       one with one arrival per consumer warp once its wgmmas have read the stage.
//     - per step, each consumer: Sᵀ = K_cw Qᵀ and dPᵀ = V_cw d_oᵀ (64 keys × 64 queries, SS
//       wgmma, K-major operands); Pᵀ = exp2(Sᵀ·scale·log2e − lse2) (masked: keys past the end,
//       causal), dSᵀ = Pᵀ ∘ (dPᵀ − delta), both packed to 16 bits in the accumulator layout,
//       which is the register-A layout; dV += Pᵀ d_o and dK += dSᵀ Q (RS wgmma, d_o / Q
//       MN-major); dSᵀ also to a shared [key][query] tile (128-byte swizzle).
//       dQ = dS K with A = dS read MN-major from the dSᵀ tile and B = K MN-major: consumer cw
//       computes output columns (D/2)cw .. over all 128 keys (after a barrier of both
//       consumers: the dSᵀ tile is complete). The fp32 tile [64 queries][D] (rows padded by
//       32 bytes) is added to the accumulator by cp.reduce.async.bulk, a row each: by lane 0
//       of each consumer warp (its slab of rows), whose reads must end before the next step's
//       first barrier, or (kDqWriter) by a writer warp while the consumers go on.
//     - dK (times the softmax scale) and dV: plain 16-bit stores from the accumulators.
//     GQA/MQA: the block walks every query head of its group, summing dK and dV in registers.
//     Causal (bottom-right): query blocks that see none of the block's keys are skipped.
//  3. FT_KERNEL_NAME_convert: dq = dq_accum · scale in the caller's dtype and strides.
//
// Deterministic mode (kDeterministic; fa2_bwd's turn-taking, FA-3's dQ writer): one int counter
// per (batch, query head, query block) in the workspace, zeroed by the preprocess; key block n
// adds its tile of a query block once the counter reads n and then sets it to n + 1, so every
// accumulator row sums its key blocks' tiles in key order. The turns are taken by the dQ writer
// (warps 1 and 2 of the producer warpgroup), off the consumers' path: the consumers write the
// step's tile into one of two buffers and go on (named barriers "full" / "empty" per buffer);
// buffer b's warp (its steps, it % 2 = b, so two turns are held at once) waits for the turn
// (ld.acquire.gpu), adds the tile (unpadded and swizzled, the accumulator in the same layout:
// one bulk reduction), frees the buffer once it has been read, waits for the reduction to
// complete, fences, and releases the counter (st.release.gpu). Query blocks
// are walked last to first: with causal masking, the key blocks that see a query block are
// 0 .. k, all reaching it at the same step of their walks, so no block waits on one that skips it.
// They do reach it together, though, so key block n's first turn waits for n holds of a turn.
// Descending turns (kTurnsDescending, det 2, causal only): query blocks walked first to last from
// each key block's first visible one, and every query block's turns taken from the last key
// block that sees it down to key block 0: key block n + 1 reaches a query block two steps
// before key block n, so no turn waits on a block at the same step. The grid is dispatched last
// key block first, so a block waits only for one dispatched before it. 1.02-1.08x the default's
// time on FA-2's causal grid where det 1 took 1.08-1.36x (session 18, docs/perf-notes.md).
//
// Dispatch groups (kDispatchGroup = c > 0, deterministic mode): the blocks are dispatched c key
// blocks of a head at a time, every head's first c, then every head's next c, ... instead of
// all of a head's key blocks together. The key blocks that reach a query block together then
// form chains of c turns, not of all of the head's key blocks: the wait of the last in a chain
// (c holds of a turn, about a microsecond each) is paid per wave of blocks, and at short N many
// waves start a fresh chain. The price: fewer blocks of one head share its Q / d_o / dQ tiles
// in L2. Still a block waits only for blocks dispatched before it.
//
// Parameters (ft_config): kBf16; kHeadDim (the tiles' head dim: 64 or 128); kHeadDimData (the
// tensors': kHeadDim, or 96 on d128's tiles: the maps' boxes read columns 96 .. 127 as zeros, so
// S, dP and the wgmma products are those of the data, and dQ, dK and dV columns past 96 are
// zeros, never stored; the dq accumulator and the dQ tile rows are at the data's width); kBlockN (128); kBlockM (64); kCausal;
// kDeterministic; kTurnsDescending; kDispatchGroup; kDqWriter (dQ tiles added by the writer
// warps: deterministic mode, or dqw1 without turns); kSmemBytes (checked against the layout below). No toolkit header: inline PTX only; the
// generator prepends the prologue and inlines ft_kernel_abi.cuh, ft_device.cuh and ft_hopper.cuh.
//
// Semantics: as fa2_bwd's: q [B, Nq, Hq, D], k/v [B, Nk, Hkv, D], d_o like o, dq like q, dk/dv
// like k/v (any batch/seq/head strides TMA can describe for q, k, v, d_o: the tensor maps the
// host encodes), lse [B, Hq, Nq] fp32 as the forward wrote it; query i sees keys
// j <= i + Nk - Nq when causal; rows that see no key get dq = 0.

#ifndef FT_CONFIG_PROVIDED
#define FT_KERNEL_NAME hopper_bwd_bf16_d128_bn128_bm64_det0_dqw0_full
namespace ft_config {
constexpr bool kBf16 = true;
constexpr int kHeadDim = 128;
constexpr int kHeadDimData = 128;
constexpr int kBlockN = 128;
constexpr int kBlockM = 64;
constexpr bool kCausal = false;
constexpr bool kDeterministic = false;
constexpr bool kTurnsDescending = false;
constexpr int kDispatchGroup = 0;
constexpr bool kDqWriter = false;
constexpr int kSmemBytes = 1024 + 2 * kBlockN * kHeadDim * 2 + 4 * kBlockM * kHeadDim * 2 + kBlockN * kBlockM * 2 +
                           (kDqWriter ? 2 : 1) * 64 * (kHeadDimData + (kDeterministic ? 0 : 8)) * 4 + 4 * kBlockM * 4 + 5 * 8;
}  // namespace ft_config
#endif

#define FT_CAT2(a, b) a##b
#define FT_CAT(a, b) FT_CAT2(a, b)

#include "ft_kernel_abi.cuh"

namespace ft {

using namespace ft_config;
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned long long u64;
typedef long long i64;

using FtParams = ft_abi::HopperBwdParams;
using FtBase = ft_abi::Fa2BwdParams;

constexpr int kThreads = 384;                  // producer warpgroup + two consumer warpgroups
constexpr int kPreThreads = 128;               // preprocess / convert blocks
constexpr int kPreRows = 16;                   // query rows per preprocess / convert block
constexpr int kChunks = kHeadDim / 64;         // 64-column, 128-byte-swizzled chunks
constexpr u32 kKVBytes = kBlockN * kHeadDim * 2;
constexpr u32 kKVChunkBytes = kBlockN * 128;
constexpr u32 kQBytes = kBlockM * kHeadDim * 2;  // one Q (or d_o) stage
constexpr u32 kQChunkBytes = kBlockM * 128;
constexpr u32 kDsBytes = kBlockN * kBlockM * 2;  // dSᵀ [key][query], one 128-byte row per key
// dQ: one [64][kHeadDim] fp32 tile a step, consumer cw computing columns kDqCols * cw .. over
// all 128 keys (N split). At d64 that is a 32-column wgmma whose B descriptor starts 64 bytes
// into K's 128-byte swizzle rows (the swizzle acts on address bits, as for the K-major k-steps):
// one tile to add instead of one per consumer (a K split), and no sum in deterministic mode.
constexpr int kDqCols = kHeadDim / 2;  // per consumer
// The tile's layout: the float2 writes of a warp (8 rows x 4 lanes) must fall on distinct banks,
// which plain rows 256 or 512 bytes apart do not (8-way conflicts). By default the rows are
// padded by 8 floats and each row is a bulk reduction of its own (64 a step). In deterministic
// mode, where the time a turn is held (issue to completion) bounds the step, the rows are unpadded
// and swizzled instead, 16-byte unit u of row r at u ^ (r % 8), and the accumulator holds the
// same layout (the convert reads through it): the whole tile is one reduction. The swizzle costs
// the consumers a few integer instructions per store, which made the default (dqw 1) 3% slower
// at d128 (session 17).
constexpr bool kDqSwizzled = kDeterministic;
// Rows at the data's width (kHeadDimData): the swizzle permutes units within aligned groups of 8
// (128 bytes), so a 96-column row's 24 units stay within the row.
constexpr u32 kDqRowBytes = (kHeadDimData + (kDqSwizzled ? 0 : 8)) * 4;
constexpr u32 kDqBufBytes = 64 * kDqRowBytes;  // one step's tile
// With the dQ writer: a buffer per writer warp, filled by the consumers in turn. Two; three (a
// third turn held at once in deterministic mode at d64, whose steps are shorter than a turn's
// hold; d128's third buffer would exceed the shared memory) compile without spills and await
// an A/B (session 17, docs/perf-notes.md).
constexpr int kDqBuffers = kDqWriter ? 2 : 1;
constexpr u32 kDqBytes = kDqBuffers * kDqBufBytes;
// The dQ writer (deterministic mode, or kDqWriter): warps 1 .. kDqBuffers of the producer
// warpgroup, warp 1 + b adding buffer b (the steps it with it % kDqBuffers = b), so that as many
// turns are held at once (deterministic mode), and its named barriers (0 is __syncthreads; 1 and
// 2 the consumers' own): full / empty per buffer, the 256 consumer threads and that buffer's warp.
constexpr int kWriterWarps = kDqWriter ? kDqBuffers : 0;
constexpr int kBarDqFull = 3;   // + buffer: the consumers arrive, the writer warp waits
constexpr int kBarDqEmpty = 6;  // + buffer: the writer warp arrives, the consumers wait
constexpr u32 kStatBytes = 4u * kBlockM * 4;             // lse2 and delta, two stages each
constexpr int kBarriers = 5;                             // kv_full, full[2], empty[2]
constexpr int kLayoutBytes = 1024 + 2 * kKVBytes + 4 * kQBytes + kDsBytes + kDqBytes + kStatBytes + kBarriers * 8;
// d96's accumulators are a quarter smaller (dK and dV at N = 96): its consumers give the producer
// warpgroup 16 registers, which its deterministic writer needs for the row products by 96 (at
// 24 it spilled 8 bytes).
constexpr int kProducerRegs = kHeadDimData < kHeadDim ? 40 : 24;
constexpr int kConsumerRegs = kHeadDimData < kHeadDim ? 232 : 240;  // (384 * 168 - 128 * kProducerRegs) / 256
static_assert(128 * kProducerRegs + 256 * kConsumerRegs == 384 * 168, "the register split must fill the launch bound");
constexpr float kLog2e = 1.4426950408889634f;

static_assert(kHeadDim == 64 || kHeadDim == 128, "hopper_bwd: head dim must be 64 or 128");
static_assert(kHeadDimData == kHeadDim || (kHeadDim == 128 && kHeadDimData == 96),
              "hopper_bwd: the tensors' head dim is the tiles' or 96 on d128's tiles");
static_assert(kBlockN == 128, "hopper_bwd: block_n must be 128 (two consumer warpgroups of 64 keys)");
static_assert(kBlockM == 64, "hopper_bwd: block_m must be 64 (one wgmma N of queries)");
static_assert(kSmemBytes == kLayoutBytes, "kSmemBytes disagrees with the template's shared-memory layout");
static_assert(kSmemBytes <= 232448, "shared memory exceeds the largest opt-in limit (227 KB)");
static_assert(kBlockM % 16 == 0, "the ordering counters are sized per 16 query rows (kMinBackwardQueryTile)");
static_assert(kPreRows == 16, "the preprocess zeroes one ordering counter per block of 16 query rows");
static_assert(1 + kWriterWarps <= 4, "the dQ writer's warps are the producer warpgroup's");
static_assert(kDqWriter || !kDeterministic, "deterministic mode adds dQ through the writer (kDqWriter)");
static_assert(!kTurnsDescending || (kDeterministic && kCausal), "descending turns order causal deterministic mode");
static_assert(kDispatchGroup >= 0 && (kDispatchGroup == 0 || kDeterministic),
              "dispatch groups order deterministic mode's turns");
// The query blocks' walk: last to first in deterministic mode (det 1), first to last otherwise.
constexpr bool kWalkLastToFirst = kDeterministic && !kTurnsDescending;

#include "ft_device.cuh"
#include "ft_hopper.cuh"
#include "ft_bwd_common.cuh"

// `x`, opaque to the compiler: a shared address made opaque inside the step loop keeps ptxas from
// hoisting the loop-invariant wgmma descriptors built from it (up to 64 registers at d128),
// which spilled; rebuilding them costs a few integer instructions per k-step.
__device__ __forceinline__ u32 opaque(u32 x) {
  asm volatile("mov.b32 %0, %0;\n" : "+r"(x));
  return x;
}

// Orders this thread's generic-proxy global accesses with its bulk (async-proxy) ones.
__device__ __forceinline__ void fence_proxy_async_global() {
  asm volatile("fence.proxy.async.global;\n" ::: "memory");
}

template <int R>
__device__ __forceinline__ void zero(float (&r)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) r[i] = 0.f;
}

// Sᵀ (or dPᵀ) [64 keys x 64 queries] = A B^T over the head dim: A = 64 key rows of K (or V)
// starting at byte `a_rows` of each chunk, B = the stage's Q (or d_o) tile; both K-major, as
// hopper_fwd's S = Q K^T (k-steps 32 bytes apart within a chunk, 8-row atoms 1024 bytes apart).
// Over the data's columns only: d96 leaves chunk 1's last two k-steps (zeros) out.
__device__ __forceinline__ void gemm_t(float (&acc)[kBlockM / 2], u32 a_addr, u32 b_addr) {
#pragma unroll
  for (int c = 0; c < kChunks; ++c)
#pragma unroll
    for (int kk = 0; kk < 4; ++kk)
      if (c * 64 + kk * 16 < kHeadDimData)
        Wgmma<kBlockM>::ss(acc, make_desc(a_addr + c * kKVChunkBytes + kk * 32, 16, 1024),
                           make_desc(b_addr + c * kQChunkBytes + kk * 32, 16, 1024), (c | kk) != 0);
}

// acc [64 keys x D] += A [64 keys x 64 queries] (registers) · B [64 queries x D]: B is a Q or
// d_o stage, MN-major (rows = queries = the k dimension), as hopper_fwd's P V: leading byte
// offset = the next 64 columns (chunk), stride = 8 rows (1024 B), a 16-query k-step 2048 B.
// D = the data's columns (kHeadDimData): d96's N = 96 leaves chunk 1's zero half out.
__device__ __forceinline__ void gemm_rs(float (&acc)[kHeadDimData / 2], const u32 (&a)[kBlockM / 16][4], u32 b_addr) {
#pragma unroll
  for (int kk = 0; kk < kBlockM / 16; ++kk)
    Wgmma<kHeadDimData>::rs(acc, a[kk], make_desc(b_addr + kk * 2048, kQChunkBytes, 1024), 1);
}

// dQ [64 queries x kDqCols columns] = dS · K over the block's 128 keys: A = the dSᵀ tile
// ([key][query], 64 queries = one 128-byte swizzle row: MN-major), B = kDqCols columns of K
// ([key][d]: MN-major) from k_addr. Both step 16 key rows (2048 B) per k-step.
__device__ __forceinline__ void gemm_dq(float (&acc)[kDqCols / 2], u32 ds_addr, u32 k_addr) {
#pragma unroll
  for (int kk = 0; kk < kBlockN / 16; ++kk)
    Wgmma<kDqCols>::ss_mn(acc, make_desc(ds_addr + kk * 2048, 8192, 1024),
                          make_desc(k_addr + kk * 2048, kKVChunkBytes, 1024), kk != 0);
}

}  // namespace ft

// 1. delta = rowsum(d_o ∘ o); zero the dq accumulator (and, deterministic, the ordering
// counters). Grid (ceil(Nq / 16), Hq, B), 128 threads: one warp per row at a time.
extern "C" __global__ void __launch_bounds__(ft::kPreThreads) FT_KERNEL_NAME(const __grid_constant__ ft::FtParams params) {
  ft::bwd_preprocess_rows<ft::kHeadDimData, ft::kPreRows, ft::kPreThreads / 32>(params.base, ft::kDeterministic);
}

// 3. dq = dq_accum · scale in the caller's dtype and strides. Grid as the preprocess.
extern "C" __global__ void __launch_bounds__(ft::kPreThreads)
    FT_CAT(FT_KERNEL_NAME, _convert)(const __grid_constant__ ft::FtParams params) {
  ft::bwd_convert_rows<ft::kHeadDimData, ft::kPreRows, ft::kPreThreads / 32, ft::kDqSwizzled>(params.base);
}

// 2. The main kernel. Grid (ceil(Nk / kBlockN), Hkv, B), kThreads threads.
extern "C" __global__ void __launch_bounds__(ft::kThreads, 1)
    FT_CAT(FT_KERNEL_NAME, _main)(const __grid_constant__ ft::FtParams params) {
  using namespace ft;
  extern __shared__ __align__(1024) unsigned char smem[];
  const FtBase& p = params.base;

  const int tid = threadIdx.x;
  const int warpgroup = tid / 128;
  // Descending turns (det 2): the last key block is dispatched first, so that a block only ever
  // waits for one dispatched before it (no deadlock however few blocks are resident).
  int n_order = blockIdx.x, kv_head = blockIdx.y, batch = blockIdx.z;
  if constexpr (kDispatchGroup > 0) {
    // Blocks are dispatched in linear order (x fastest): block L is key block g·c + L % width of
    // head L / width within group g (width c, or what is left of the head's key blocks).
    const int nb = gridDim.x, heads = gridDim.y * gridDim.z;
    const int L = blockIdx.x + nb * (blockIdx.y + gridDim.y * blockIdx.z);
    const int g = L / (kDispatchGroup * heads);
    const int rem = L - g * kDispatchGroup * heads;
    const int width = min(kDispatchGroup, nb - g * kDispatchGroup);
    const int hb = rem / width;
    n_order = g * kDispatchGroup + rem - hb * width;
    kv_head = hb % gridDim.y;
    batch = hb / gridDim.y;
  }
  const int n_block = kTurnsDescending ? (int)gridDim.x - 1 - n_order : n_order;
  const int group = p.heads_q / p.heads_kv;
  const int Nq = p.seqlen_q, Nk = p.seqlen_k;
  const int diag = Nk - Nq;  // query i sees keys j <= i + diag
  const int n0 = n_block * kBlockN;
  // Query blocks that see a key of this block (causal: from the first query that sees key n0).
  const int m_blocks = (Nq + kBlockM - 1) / kBlockM;
  int m_begin = 0;
  if (kCausal && n0 - diag > 0) m_begin = min(m_blocks, (n0 - diag) / kBlockM);
  const int steps_per_head = m_blocks - m_begin;
  const int total = group * steps_per_head;

  // Shared memory, every tile 1024-byte aligned: K, V, Q stages, d_o stages, dSᵀ, dQ tile(s)
  // (two with the writer), lse2 / delta stages, barriers.
  const u32 base = (smem_address(smem) + 1023u) & ~1023u;
  const u32 sK = base;
  const u32 sV = sK + kKVBytes;
  const u32 sQ = sV + kKVBytes;
  const u32 sdO = sQ + 2 * kQBytes;
  const u32 sdS = sdO + 2 * kQBytes;
  const u32 sdQ = sdS + kDsBytes;
  const u32 sLse = sdQ + kDqBytes;           // [2][kBlockM] floats
  const u32 sDelta = sLse + 2 * kBlockM * 4;  // [2][kBlockM] floats
  const u32 bars = sDelta + 2 * kBlockM * 4;
  const u32 bar_kv = bars;
  auto bar_full = [&](int s) { return bars + 8u * (1 + s); };
  auto bar_empty = [&](int s) { return bars + 8u * (3 + s); };

  if (tid == 0) {
    mbar_init(bar_kv, 1);
    for (int s = 0; s < 2; ++s) {
      mbar_init(bar_full(s), 1 + 32);  // the TMA bytes' arrival and the producer warp's 32 lanes
      mbar_init(bar_empty(s), 8);      // one arrival per consumer warp
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  // The walk over query steps: head by head of the group, query block by query block (last to
  // first in deterministic mode).
  auto step_head = [&](int it) { return kv_head * group + it / steps_per_head; };
  // (The last block is m_begin + steps_per_head - 1: the lambda captures what det 0's did, whose
  // code then stays as it was.)
  auto step_m0 = [&](int it) {
    const int j = it % steps_per_head;
    return (m_begin + (kWalkLastToFirst ? steps_per_head - 1 - j : j)) * kBlockM;
  };

  if (warpgroup == 0) {
    // ---- producer ---------------------------------------------------------------------------
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegs));
    if (tid < 32) {
      const int lane = tid;
      if (lane == 0) {
        prefetch_tensormap(&params.tmap_q);
        prefetch_tensormap(&params.tmap_k);
        prefetch_tensormap(&params.tmap_v);
        prefetch_tensormap(&params.tmap_do);
        mbar_expect_tx(bar_kv, 2 * kKVBytes);
#pragma unroll
        for (int c = 0; c < kChunks; ++c) {
          tma_load_4d(sK + c * kKVChunkBytes, &params.tmap_k, c * 64, kv_head, n0, batch, bar_kv);
          tma_load_4d(sV + c * kKVChunkBytes, &params.tmap_v, c * 64, kv_head, n0, batch, bar_kv);
        }
      }
      for (int it = 0; it < total; ++it) {
        const int s = it & 1;
        const u32 phase = (u32)(it >> 1) & 1u;
        const int hq = step_head(it), m0 = step_m0(it);
        mbar_wait(bar_empty(s), phase ^ 1u);
        if (lane == 0) {
          mbar_expect_tx(bar_full(s), 2 * kQBytes);
#pragma unroll
          for (int c = 0; c < kChunks; ++c) {
            tma_load_4d(sQ + s * kQBytes + c * kQChunkBytes, &params.tmap_q, c * 64, hq, m0, batch, bar_full(s));
            tma_load_4d(sdO + s * kQBytes + c * kQChunkBytes, &params.tmap_do, c * 64, hq, m0, batch, bar_full(s));
          }
        }
        const i64 row_base = ((i64)batch * p.heads_q + hq) * Nq;
#pragma unroll
        for (int j = 0; j < kBlockM / 32; ++j) {
          const int r = lane + 32 * j, q = m0 + r;
          float l2 = __int_as_float(0x7f800000), dl = 0.f;
          if (q < Nq) {
            const float l = p.lse[row_base + q];
            if (l != kNegInf) l2 = l * kLog2e;
            dl = p.delta[row_base + q];
          }
          asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(sLse + (u32)(s * kBlockM + r) * 4), "f"(l2) : "memory");
          asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(sDelta + (u32)(s * kBlockM + r) * 4), "f"(dl) : "memory");
        }
        mbar_arrive(bar_full(s));  // release: the stores above are visible to the waiting consumers
      }
    } else if (kDqWriter && tid < 32 * (1 + kWriterWarps)) {
      // ---- the dQ writer: warp 1 + b adds buffer b; deterministic mode takes turns ----------
      const int lane = tid % 32, b = tid / 32 - 1;
      // The walk's head and query block followed step by step (step_head / step_m0 without their
      // divisions in the loop, which cost the writer a spill on its 24 registers).
      int hq = kv_head * group + b / max(steps_per_head, 1), j = b % max(steps_per_head, 1);
      const u32 tile = sdQ + b * kDqBufBytes;
      for (int it = b; it < total; it += kDqBuffers) {
        const int m0 = (m_begin + (kWalkLastToFirst ? steps_per_head - 1 - j : j)) * kBlockM;  // step_m0(it)
        // (Computed where used: kept live, it spilled on the producer's 24 registers.)
        auto counter = [&] { return p.counters + ((i64)batch * p.heads_q + hq) * p.counters_per_head + m0 / 16; };
        // The turn: key block n adds once the counter reads n (det 1), or, with descending
        // turns, once it reads n_last - n, n_last the last key block that sees this query block
        // (the key blocks that do are 0 .. n_last: those with n * kBlockN < m0 + kBlockM + diag);
        // lane 0 spins while the consumers still compute the tile.
        const int turn = kTurnsDescending ? min((int)gridDim.x - 1, (m0 + kBlockM + diag - 1) / kBlockN) - n_block : n_block;
        if (kDeterministic && lane == 0)
          while (load_acquire(counter()) != turn) {
          }
        named_barrier_sync(kBarDqFull + b, 256 + 32);  // the tile written
        const int rows = min(kBlockM, Nq - m0);
        float* dst = p.dq_accum + (((i64)batch * p.heads_q + hq) * Nq + m0) * kHeadDimData;
        if constexpr (kDeterministic) {
          // The whole tile, one reduction, after the turn's acquire (lane 0's own).
          if (lane == 0) {
            fence_proxy_async_global();
            asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n" ::"l"(dst),
                         "r"(tile), "r"((u32)rows * kDqRowBytes)
                         : "memory");
          }
        } else {
          // Padded rows: lane l adds rows l and l + 32. At d96 in two fixed steps: as a loop of
          // unknown trip count ptxas unrolled it by 4, which spilled d96's row products by 96 on
          // 24 registers (d64 and d128 keep the loop: the SASS they were measured with).
          auto add_row = [&](int r) {
            asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n" ::"l"(
                           dst + (i64)r * kHeadDimData),
                         "r"(tile + (u32)r * kDqRowBytes), "n"(kHeadDimData * 4)
                         : "memory");
          };
          if constexpr (kHeadDimData < kHeadDim) {
#pragma unroll
            for (int j = 0; j < kBlockM / 32; ++j)
              if (lane + 32 * j < rows) add_row(lane + 32 * j);
          } else {
            for (int r = lane; r < rows; r += 32) add_row(r);
          }
        }
        asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
        asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
        __syncwarp();
        // The buffer is read: the consumers may fill it at step it + kDqBuffers (none wait past
        // the end).
        if (it + kDqBuffers < total) named_barrier_arrive(kBarDqEmpty + b, 256 + 32);
        if constexpr (kDeterministic) {
          if (lane == 0) {
            asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");  // the adds are complete
            fence_proxy_async_global();
            // acq_rel, not __threadfence's fence.sc (MEMBAR.SC.GPU), on the turn's critical path.
            asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
            store_release(counter(), turn + 1);
          }
        }
        // (A head may have fewer steps than there are buffers: one query block.)
        for (j += kDqBuffers; j >= steps_per_head; j -= steps_per_head) ++hq;
      }
      // Without turns the adds were only waited on for their reads: all complete before exit.
      if (!kDeterministic) asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
    }
  } else {
    // ---- consumers --------------------------------------------------------------------------
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kConsumerRegs));
    const int cw = warpgroup - 1;
    const int wtid = tid % 128;
    const int warp = wtid / 32;  // within the warpgroup: rows 16*warp .. 16*warp + 15 of each tile
    const int lane = tid % 32;
    const int g = lane / 4;
    const int t = lane % 4;
    const float scale_log2 = p.scale_log2;
    const int key_base = n0 + cw * 64 + warp * 16 + g;  // this thread's keys: key_base, key_base + 8
    const u32 sKw = sK + cw * 64 * 128;                 // this consumer's 64 key rows of each chunk
    const u32 sVw = sV + cw * 64 * 128;
    // dQ: columns dq_col0 .. over all keys into the shared tile; B = those columns of K (d128:
    // chunk cw; d64: 64 bytes into each 128-byte row for cw = 1).
    const int dq_col0 = cw * kDqCols;
    const u32 dq_b = kHeadDim == 64 ? sK + cw * kDqCols * 2 : sK + cw * kKVChunkBytes;
    // Bulk adds: lane 0 of each of the 8 consumer warps adds 8 padded tile rows, a row at a time.
    constexpr int kSlabRows = 8;
    const int slab_row0 = (cw * 4 + warp) * 8;

    float acc_dk[kHeadDimData / 2], acc_dv[kHeadDimData / 2];
    zero(acc_dk);
    zero(acc_dv);
    bool adds_pending = false;
    int dq_buf = 0;  // it % kDqBuffers

    mbar_wait(bar_kv, 0);
    for (int it = 0; it < total; ++it) {
      const int s = it & 1;
      const u32 phase = (u32)(it >> 1) & 1u;
      const int hq = step_head(it), m0 = step_m0(it);
      const u32 q_addr = sQ + s * kQBytes, do_addr = sdO + s * kQBytes;

      float acc_s[kBlockM / 2], acc_dp[kBlockM / 2];
      mbar_wait(bar_full(s), phase);
      wgmma_fence();
      gemm_t(acc_s, opaque(sKw), q_addr);
      gemm_t(acc_dp, opaque(sVw), do_addr);
      wgmma_commit();
      wgmma_wait<0>();
      fence_regs(acc_s);
      fence_regs(acc_dp);

      // Pᵀ and dSᵀ per accumulator: key row key_base + 8h, query column m0 + 8i + 2t + c; packed
      // to 16 bits as soon as a k-step's 16 columns are done (the fp32 values die there), and
      // dSᵀ stored to the shared tile: key row r, 16-byte unit u of the row at u ^ (r % 8) (as
      // TMA's 128-byte swizzle), query columns 8i + 2t, +1 in one 32-bit store.
      const bool need_mask = n0 + kBlockN > Nk || (kCausal && n0 + cw * 64 + 63 > m0 + diag);
      u32 p_frag[kBlockM / 16][4], ds_frag[kBlockM / 16][4];
#pragma unroll
      for (int i = 0; i < kBlockM / 8; ++i) {
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const int col = 8 * i + 2 * t + c;
          float l2, dl;
          asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(l2) : "r"(sLse + (u32)(s * kBlockM + col) * 4));
          asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(dl) : "r"(sDelta + (u32)(s * kBlockM + col) * 4));
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int e = 4 * i + 2 * h + c;
            float pr = fast_exp2(fmaf(acc_s[e], scale_log2, -l2));
            if (need_mask) {
              const int key = key_base + 8 * h;
              if (key >= Nk || (kCausal && key > m0 + col + diag)) pr = 0.f;
            }
            acc_s[e] = pr;
            acc_dp[e] = pr * (acc_dp[e] - dl);
          }
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int j = (i % 2) * 2 + h;  // A-fragment register: rows g / g + 8, k columns 2t / 2t + 8
          p_frag[i / 2][j] = pack2(acc_s[4 * i + 2 * h], acc_s[4 * i + 2 * h + 1]);
          ds_frag[i / 2][j] = pack2(acc_dp[4 * i + 2 * h], acc_dp[4 * i + 2 * h + 1]);
          const int r = cw * 64 + warp * 16 + g + 8 * h;
          const u32 addr = sdS + r * 128 + (((i ^ (r % 8)) * 16)) + t * 4;
          asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(addr), "r"(ds_frag[i / 2][j]) : "memory");
        }
      }

      // dV += Pᵀ d_o, dK += dSᵀ Q.
      wgmma_fence();
      gemm_rs(acc_dv, p_frag, do_addr);
      gemm_rs(acc_dk, ds_frag, q_addr);
      wgmma_commit();

      // The dSᵀ tile is complete (both consumers' rows, written by the generic proxy, visible
      // to wgmma's async proxy), and the last step's bulk adds have read the dQ tile.
      if (adds_pending && lane == 0) asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
      fence_proxy_async_shared();
      named_barrier_sync(1, 256);

      float acc_dq[kDqCols / 2];
      wgmma_fence();
      gemm_dq(acc_dq, opaque(sdS), opaque(dq_b));
      wgmma_commit();
      wgmma_wait<0>();
      fence_regs(acc_dk);
      fence_regs(acc_dv);
      fence_regs(acc_dq);
      // This warp's wgmmas have read the stage's Q and d_o (its lse / delta were read before).
      __syncwarp();
      if (lane == 0) mbar_arrive(bar_empty(s));

      // dQ to the fp32 tile: query row r = 16*warp + g + 8h, columns dq_col0 + 8i + 2t, +1
      // (swizzled: in 16-byte unit (column / 4) ^ (r % 8), r % 8 = g; recomputed here, g made
      // opaque: hoisted, its per-unit offsets took registers that d128 then spilled).
      // With the writer: buffer it % kDqBuffers, once its warp has read it (step it - kDqBuffers).
      // Columns past the data's (d96: consumer 1's last 32, zeros) are not stored: the rows end
      // at kHeadDimData.
      const u32 dq_tile = sdQ + (kDqWriter ? (u32)dq_buf * kDqBufBytes : 0u);
      if (kDqWriter && it >= kDqBuffers) named_barrier_sync(kBarDqEmpty + dq_buf, 256 + 32);
      const u32 gs = kDqSwizzled ? opaque((u32)g) : (u32)g;
      const u32 dq_row = dq_tile + (u32)(warp * 16) * kDqRowBytes + gs * kDqRowBytes;
#pragma unroll
      for (int i = 0; i < kDqCols / 8; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          if (kHeadDimData < kHeadDim && cw == 1 && kDqCols + 8 * i >= kHeadDimData) continue;
          const u32 col = (u32)(dq_col0 + 8 * i + 2 * t);
          const u32 addr = dq_row + h * 8 * kDqRowBytes + (kDqSwizzled ? ((col / 4) ^ gs) * 16 + (col % 4) * 4 : col * 4);
          asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(addr), "f"(acc_dq[4 * i + 2 * h]),
                       "f"(acc_dq[4 * i + 2 * h + 1])
                       : "memory");
        }
      fence_proxy_async_shared();
      named_barrier_sync(2, 256);  // the tile complete; every dQ wgmma has read dSᵀ
      if constexpr (kDqWriter) {
        named_barrier_arrive(kBarDqFull + dq_buf, 256 + 32);  // its writer warp adds it
        if (++dq_buf == kDqBuffers) dq_buf = 0;
        continue;
      }
      const int rows = min(kBlockM, Nq - m0);
      if (lane == 0 && slab_row0 < rows) {
        const int n = min(kSlabRows, rows - slab_row0);
        float* dst = p.dq_accum + (((i64)batch * p.heads_q + hq) * Nq + m0 + slab_row0) * kHeadDimData;
        for (int r = 0; r < n; ++r)
          asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n" ::"l"(
                         dst + (i64)r * kHeadDimData),
                       "r"(dq_tile + (u32)(slab_row0 + r) * kDqRowBytes), "n"(kHeadDimData * 4)
                       : "memory");
        asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
        adds_pending = true;
      }
    }
    // The bulk adds have finished reading shared memory before the block exits.
    if (adds_pending) asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");

    // dK (times the softmax scale) and dV: key rows key_base + 8h, columns 8i + 2t, +1.
    u16* dk = static_cast<u16*>(p.dk) + batch * p.dk_stride[0] + kv_head * p.dk_stride[2];
    u16* dv = static_cast<u16*>(p.dv) + batch * p.dv_stride[0] + kv_head * p.dv_stride[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int key = key_base + 8 * h;
      if (key < Nk) {
#pragma unroll
        for (int i = 0; i < kHeadDimData / 8; ++i) {
          const int col = 8 * i + 2 * t;
          *reinterpret_cast<u32*>(dk + (i64)key * p.dk_stride[1] + col) =
              pack2(acc_dk[4 * i + 2 * h] * p.scale, acc_dk[4 * i + 2 * h + 1] * p.scale);
          *reinterpret_cast<u32*>(dv + (i64)key * p.dv_stride[1] + col) = pack2(acc_dv[4 * i + 2 * h], acc_dv[4 * i + 2 * h + 1]);
        }
      }
    }
  }
}
