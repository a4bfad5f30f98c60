// FlashAttention-2 backward kernel template (flashtune): dq, dk, dv from q, k, v, o, lse, d_o.
// (Over 600 lines: the three kernels, the helpers both warp layouts share and the rows layout
// are one module's; the 2-D layout lives in fa2_bwd_2d.cuh.)
//
// Three kernels of one module, launched in order on one stream with the same parameters:
//  1. FT_KERNEL_NAME (preprocess): delta = rowsum(d_o ∘ o) per query row, and zeroes the fp32
//     dq accumulator and the ordering counters in the caller's workspace.
//  2. FT_KERNEL_NAME_main: one thread block per (key block of kBlockN keys, K/V head, batch).
//     It keeps its K and V tiles in shared memory and dK, dV in registers, and walks the query
//     blocks of every query head of its group (GQA/MQA: the group's sum happens in registers,
//     no workspace). Per query block it recomputes Sᵀ = K Qᵀ and Pᵀ = exp2(Sᵀ·scale·log2e −
//     lse·log2e) from the saved lse, then dPᵀ = V d_oᵀ, dSᵀ = Pᵀ ∘ (dPᵀ − delta),
//     dV += Pᵀ d_o, dK += dSᵀ Q, and dQ += dS K through shared memory (dSᵀ as 16-bit) into
//     the fp32 accumulator: `red.add` by default, or in deterministic mode in key-block order
//     (each block waits on a per-(head, query block) counter for its predecessor, adds, fences,
//     then releases the counter; query blocks walked last to first so causal blocks do not wait
//     on each other's earlier steps), so every run adds in the same order. kDqVec 2 adds two
//     adjacent floats per `red.add.v2` (sm_90 on) in both modes: under the counter only one
//     block adds to a row block at a time, so reductions keep the order; kDqVec 1 adds one
//     float per `red.add`, or in deterministic mode with a plain load and store.
//     kDqStaged: the block's dQ tile goes to shared memory (fp32) first and is added a row at a
//     time by the bulk-copy engine (`cp.reduce.async.bulk .add.f32`, sm_90; before sm_90 by
//     coalesced `red.add` from the tile): 16 × fewer L2 reduction requests than per-thread
//     `red.add.v2`, and in deterministic mode the dQ GEMM runs before the block waits its turn;
//     outside deterministic mode a step's tile is added after the next step's first barrier.
//     Warp layouts: rows (kGrid2d false) — each warp owns kBlockN / kWarps keys (whole 16-row
//     MMA tiles) of every GEMM; 2-D (kGrid2d, fa2_bwd_2d.cuh) — FA-2's warp grids, P and dS
//     through shared memory. Causal: query blocks that see none of the block's keys are
//     skipped; only tiles crossing the diagonal or the sequence end mask per element. Rows
//     with lse = -inf (no visible key) get P = 0.
//  3. FT_KERNEL_NAME_convert: dq = dq_accum · scale, to 16 bits with the caller's strides.
// mma.sync m16n8k16 with fp32 accumulation; ldmatrix (.trans where an operand is stored the
// other way round); Q / d_o tiles arrive by cp.async, double-buffered when kStages = 2.
//
// No toolkit header: inline PTX only. The generator prepends the prologue (ft_config,
// FT_KERNEL_NAME) and inlines ft_kernel_abi.cuh, ft_device.cuh and fa2_bwd_2d.cuh.
//
// Semantics: as fa2_fwd's (q [B, Nq, Hq, D], k/v [B, Nk, Hkv, D], any batch/seq/head strides,
// last dim contiguous; causal aligned bottom-right: query i sees keys j <= i + Nk - Nq);
// d_o like o, dq like q, dk/dv like k/v; lse [B, Hq, Nq] fp32 as the forward wrote it.

#ifndef FT_CONFIG_PROVIDED
#define FT_KERNEL_NAME fa2_bwd_bf16_d128_bc64_br64_w4_s2_det0_full
namespace ft_config {
constexpr bool kBf16 = true;
constexpr int kHeadDim = 128;
constexpr int kBlockN = 64;
constexpr int kBlockM = 64;
constexpr int kWarps = 4;
constexpr int kStages = 2;
constexpr bool kDeterministic = false;
constexpr bool kCausal = false;
constexpr int kDqCols = 16;
constexpr int kDqVec = 1;
constexpr bool kDqStaged = false;
constexpr bool kGrid2d = false;
constexpr int kSmemBytes = (2 * kBlockN + 2 * kStages * kBlockM) * (kHeadDim + 8) * 2 + kBlockN * (kBlockM + 8) * 2;
}  // namespace ft_config
#endif

#define FT_CAT2(a, b) a##b
#define FT_CAT(a, b) FT_CAT2(a, b)

#include "ft_kernel_abi.cuh"

namespace ft {

using namespace ft_config;
typedef unsigned int u32;
typedef unsigned short u16;
typedef long long i64;

using FtParams = ft_abi::Fa2BwdParams;

constexpr int kRowStride = kHeadDim + 8;  // elements; 16-byte pad spreads ldmatrix rows over banks
constexpr int kDsStride = kBlockM + 8;    // dSᵀ tile [key][query] (rows layout), padded likewise
constexpr int kPStride = kBlockN + 8;     // P and dS tiles [query][key] (2-D layout), padded likewise
// The layout's 16-bit tiles after the Q / d_o stages: dSᵀ (rows), or P and dS (2-D).
constexpr int kScratchBytes = kGrid2d ? 2 * kBlockM * kPStride * 2 : kBlockN * kDsStride * 2;
constexpr int kDqStride = kHeadDim + 8;   // staged fp32 dQ tile [query][d]: 8 rows of a float2 store hit distinct banks
constexpr int kThreads = kWarps * 32;
constexpr int kKeysPerWarp = kBlockN / kWarps;
constexpr int kKTiles = kKeysPerWarp / 16;  // 16-key MMA row tiles per warp
constexpr int kQTiles = kBlockM / 8;        // 8-query column tiles of Sᵀ
constexpr int kDTiles = kHeadDim / 8;       // 8-wide column tiles of dK / dV
constexpr int kChunksPerRow = kHeadDim / 8; // 16-byte chunks per row
constexpr int kPreRows = 16;                // query rows per preprocess / convert block
constexpr float kLog2e = 1.4426950408889634f;

static_assert(kHeadDim % 32 == 0 && kHeadDim >= 32 && kHeadDim <= 256,
              "head dim must be one of 32, 64, 96, 128, 160, 192, 224, 256");
static_assert(kBlockN == 64 || kBlockN == 128, "block_n (bc, keys per block) must be 64 or 128");
static_assert(kBlockM == 32 || kBlockM == 64 || kBlockM == 128, "block_m (br, queries per step) must be 32, 64 or 128");
static_assert(kWarps == 4 || kWarps == 8, "warps must be 4 or 8");
static_assert(kBlockN % (kWarps * 16) == 0, "block_n must be a multiple of 16 * warps: each warp owns whole 16-key tiles");
static_assert(kStages == 1 || kStages == 2, "stages must be 1 or 2");
static_assert((kDqCols == 16 || kDqCols == 32 || kDqCols == 64) && kHeadDim % kDqCols == 0,
              "dq_cols (dQ columns per warp item) must be 16, 32 or 64 and divide the head dim");
static_assert(kDqVec == 1 || kDqVec == 2, "dq_vec (floats per dQ reduction) must be 1 or 2");
static_assert(kBlockM % kPreRows == 0 && kBlockM >= 16, "the ordering counters are sized per 16 query rows");
static_assert(kSmemBytes == (2 * kBlockN + 2 * kStages * kBlockM) * kRowStride * 2 + kScratchBytes +
                                (kDqStaged ? kBlockM * kDqStride * 4 : 0),
              "kSmemBytes disagrees with the template's shared-memory layout");
static_assert(kSmemBytes <= 232448, "shared memory exceeds the largest opt-in limit (227 KB)");

#include "ft_device.cuh"
#include "ft_bwd_common.cuh"

// Copies rows [row0, row0 + kRows) of a [N, D] slice into a padded shared tile; rows at or past
// `rows_valid` are zero-filled.
// Runs every query step: a loop counted from threadIdx.x compiled to a remainder-handled loop
// with a 64-bit row multiply per chunk (about 300 of the 2-D layout's 1520 instructions per
// step at d128), so where whole rows tile the block's threads each thread keeps one column and
// walks its rows by a fixed pointer step instead (static trip count, no division).
template <int kRows>
__device__ __forceinline__ void load_tile(u32 dst, const u16* src, i64 row_stride, int row0, int rows_valid) {
  constexpr int kChunks = kRows * kChunksPerRow;
  if constexpr (kThreads % kChunksPerRow == 0) {
    constexpr int kRowsPerPass = kThreads / kChunksPerRow;
    constexpr int kPasses = (kRows + kRowsPerPass - 1) / kRowsPerPass;
    const int r0 = threadIdx.x / kChunksPerRow, col = (threadIdx.x % kChunksPerRow) * 8;
    const u16* g = src + (i64)(row0 + r0) * row_stride + col;
    const i64 pass_step = (i64)kRowsPerPass * row_stride;
    const u32 d = dst + (u32)((r0 * kRowStride + col) * 2);
#pragma unroll
    for (int i = 0; i < kPasses; ++i) {
      const int r = r0 + i * kRowsPerPass;
      if (kRows % kRowsPerPass == 0 || r < kRows) {
        const bool valid = row0 + r < rows_valid;
        cp_async16(d + (u32)(i * kRowsPerPass * kRowStride * 2), valid ? g + i * pass_step : src, valid ? 16 : 0);
      }
    }
    return;
  }
#pragma unroll
  for (int c = threadIdx.x; c < kChunks; c += kThreads) {
    const int r = c / kChunksPerRow;
    const int col = (c % kChunksPerRow) * 8;
    const bool valid = row0 + r < rows_valid;
    const u16* g = valid ? src + (i64)(row0 + r) * row_stride + col : src;
    cp_async16(dst + (u32)((r * kRowStride + col) * 2), g, valid ? 16 : 0);
  }
}

__device__ __forceinline__ void red_add(float* p, float x) {
  asm volatile("red.global.add.f32 [%0], %1;\n" ::"l"(p), "f"(x) : "memory");
}
// Two adjacent floats (8-byte aligned) in one reduction where the target has it (sm_90 on).
__device__ __forceinline__ void red_add2(float* p, float x, float y) {
#if __CUDA_ARCH__ >= 900
  asm volatile("red.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(p), "f"(x), "f"(y) : "memory");
#else
  red_add(p, x);
  red_add(p + 1, y);
#endif
}
__device__ __forceinline__ float load_cg(const float* p) {
  float x;
  asm volatile("ld.global.cg.f32 %0, [%1];\n" : "=f"(x) : "l"(p) : "memory");
  return x;
}
__device__ __forceinline__ void store_cg(float* p, float x) {
  asm volatile("st.global.cg.f32 [%0], %1;\n" ::"l"(p), "f"(x) : "memory");
}

// dst[0] += x, dst[1] += y in the fp32 dQ accumulator: one `red.add.v2` (kDqVec 2; in
// deterministic mode the counter already orders the blocks' adds), or one float at a time:
// `red.add`, or in deterministic mode a plain load and store (no other block adds meanwhile).
__device__ __forceinline__ void add_dq_pair(float* dst, float x, float y) {
  if constexpr (kDqVec == 2) {
    red_add2(dst, x, y);
  } else if constexpr (kDeterministic) {
    store_cg(dst, load_cg(dst) + x);
    store_cg(dst + 1, load_cg(dst + 1) + y);
  } else {
    red_add(dst, x);
    red_add(dst + 1, y);
  }
}

// Deterministic mode's turn-taking per (head, query block): block n adds after block n-1.
__device__ __forceinline__ void wait_turn(const int* counter, int n_block) {
  if (threadIdx.x == 0)
    while (load_acquire(counter) != n_block) {
    }
  __syncthreads();
}
// Called by every thread once its adds are issued (and, for bulk adds, complete).
__device__ __forceinline__ void pass_turn(int* counter, int n_block) {
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) store_release(counter, n_block + 1);
}

// The staged dQ tile's adds (kDqStaged). Every thread calls these; they act where they apply.
// fence_staged: this thread's st.shared to the tile before the bulk engine reads it (the
// caller then syncs the block). Before sm_90 there is no bulk engine and nothing to fence.
__device__ __forceinline__ void fence_staged() {
#if __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}
// Adds rows [0, rows) of the tile at `tile` (row stride kDqStride floats) to `dst` (row
// stride kHeadDim floats): lane 0 of warp w issues the bulk reductions of rows w, w + kWarps,
// ... (sm_90), or all threads add float4 chunks with red.add in row order (coalesced). One lane
// per warp because a bulk copy takes its operands from uniform registers: rows issued by 32
// lanes of one warp run one lane after another (ptxas's elect loop, ~10 instructions each),
// which made warps 0-1 arrive at the next barrier ~300 instructions after the others.
__device__ __forceinline__ void add_staged_dq(float* dst, const float* tile, int rows) {
#if __CUDA_ARCH__ >= 900
  if (threadIdx.x % 32 == 0)
    for (int r = threadIdx.x / 32; r < rows; r += kWarps)
      asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n" ::"l"(
                     dst + (i64)r * kHeadDim),
                   "r"(smem_address(tile + r * kDqStride)), "n"(kHeadDim * 4)
                   : "memory");
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
#else
  constexpr int kChunks = kHeadDim / 4;
  for (int c = threadIdx.x; c < rows * kChunks; c += kThreads) {
    const int r = c / kChunks, col = (c % kChunks) * 4;
    const float4 x = *reinterpret_cast<const float4*>(tile + r * kDqStride + col);
    add_dq_pair(dst + (i64)r * kHeadDim + col, x.x, x.y);
    add_dq_pair(dst + (i64)r * kHeadDim + col + 2, x.z, x.w);
  }
#endif
}
// The tile may be overwritten: this thread's bulk reductions have read it.
__device__ __forceinline__ void staged_dq_read() {
#if __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
#endif
}
// This thread's bulk reductions are complete in global memory and ordered before its later
// generic-proxy accesses (the deterministic counter's release).
__device__ __forceinline__ void staged_dq_done() {
#if __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
  asm volatile("fence.proxy.async.global;\n" ::: "memory");
#endif
}

// acc0[mi][j, j+1] += a0[mi] · b0 and acc1[mi][j, j+1] += a1[mi] · b1 for each of this warp's
// row tiles: the two GEMMs a step runs side by side (Sᵀ with dPᵀ, dV with dK), each B operand
// one ldmatrix.x4 of two 8-column tiles.
template <int kRows, int kCols>
__device__ __forceinline__ void mma_side_by_side(float (&acc0)[kRows][kCols][4], float (&acc1)[kRows][kCols][4],
                                                 int j, const u32 (&a0)[kRows][4], const u32 (&a1)[kRows][4],
                                                 const u32 (&b0)[4], const u32 (&b1)[4]) {
#pragma unroll
  for (int mi = 0; mi < kRows; ++mi) {
    mma_16816(acc0[mi][j], a0[mi], b0[0], b0[1]);
    mma_16816(acc0[mi][j + 1], a0[mi], b0[2], b0[3]);
    mma_16816(acc1[mi][j], a1[mi], b1[0], b1[1]);
    mma_16816(acc1[mi][j + 1], a1[mi], b1[2], b1[3]);
  }
}


// Zeroes two accumulators of the same shape (a GEMM pair's: dK and dV, S and dP).
template <int kRows, int kCols>
__device__ __forceinline__ void zero_pair(float (&a)[kRows][kCols][4], float (&b)[kRows][kCols][4]) {
#pragma unroll
  for (int i = 0; i < kRows; ++i)
#pragma unroll
    for (int j = 0; j < kCols; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) a[i][j][e] = b[i][j][e] = 0.f;
}

// One query step of a main-kernel block, as the warp layouts' step() and store() read it.
struct StepArgs {
  int batch, kv_head, n_block, n0, diag;  // the block: its key block and where it starts
  int m0;                                 // this step's first query row
  i64 row_base;                           // (batch, query head) row offset of lse, delta, dq_accum
  u32 k, v, q, d_o;                       // shared-memory tiles (q, d_o: this step's stage)
  unsigned char* scratch;                 // the layout's P / dS tiles
  float* dq_tile;                         // the staged dQ tile (kDqStaged)
  float* dq_acc;                          // dq_accum at row m0 of this step's head
  int* counter;                           // the deterministic turn counter of (head, m0)
};

template <bool kFirst, class A, class B>
struct Pick {
  typedef A type;
};
template <class A, class B>
struct Pick<false, A, B> {
  typedef B type;
};

// lse (in the exp2 domain) and delta of the step's query row m0 + `row`: a row past the end or
// with no visible key gets lse +inf, so its P is exactly 0.
__device__ __forceinline__ void load_lse_delta(const FtParams& p, const StepArgs& s, int row, float* lse2, float* dlt) {
  const int qi = s.m0 + row;
  const float l = qi < p.seqlen_q ? p.lse[s.row_base + qi] : kNegInf;
  *lse2 = l == kNegInf ? __int_as_float(0x7f800000) : l * kLog2e;
  *dlt = qi < p.seqlen_q ? p.delta[s.row_base + qi] : 0.f;
}

// One thread's two adjacent dQ values of the step's row `row`: into the staged tile, or added
// to the accumulator (rows past the end dropped).
__device__ __forceinline__ void put_dq_pair(const FtParams& p, const StepArgs& s, int row, int col, float x, float y) {
  if constexpr (kDqStaged) {
    *reinterpret_cast<float2*>(s.dq_tile + row * kDqStride + col) = make_float2(x, y);
  } else if (s.m0 + row < p.seqlen_q) {
    add_dq_pair(s.dq_acc + (i64)row * kHeadDim + col, x, y);
  }
}

// Staged and not deterministic: a step's tile is added after the next step's first barrier
// (or after the walk), which every thread reaches with its tile writes fenced, so the step
// needs no barrier of its own between the dQ GEMM and the adds. The tile is next written
// after the following step's P / dS barrier, which each issuing lane passes only once its bulk
// reads are done (staged_dq_read).
constexpr bool kDqAddsDeferred = kDqStaged && !kDeterministic;

// After a step's dQ values are put: the staged tile's adds (deferred: only the fence), then
// (deterministic) the turn passed on. Without staging, deterministic mode took its turn before
// the dQ GEMM.
__device__ __forceinline__ void finish_dq_step(const FtParams& p, const StepArgs& s) {
  if constexpr (kDqAddsDeferred) {
    fence_staged();
  } else if constexpr (kDqStaged) {
    fence_staged();
    __syncthreads();  // the dQ tile is complete
    if constexpr (kDeterministic) wait_turn(s.counter, s.n_block);
    add_staged_dq(s.dq_acc, s.dq_tile, min(kBlockM, p.seqlen_q - s.m0));
    if constexpr (kDeterministic) staged_dq_done();
  }
  if constexpr (kDeterministic) pass_turn(s.counter, s.n_block);
}

// dK (times the softmax scale) and dV at the block's key `key_local`, columns col, col + 1.
__device__ __forceinline__ void store_dk_dv_pair(const FtParams& p, const StepArgs& s, int key_local, int col,
                                                 float dk0, float dk1, float dv0, float dv1) {
  const int key = s.n0 + key_local;
  if (key >= p.seqlen_k) return;
  u16* dk = static_cast<u16*>(p.dk) + s.batch * p.dk_stride[0] + s.kv_head * p.dk_stride[2];
  u16* dv = static_cast<u16*>(p.dv) + s.batch * p.dv_stride[0] + s.kv_head * p.dv_stride[2];
  *reinterpret_cast<u32*>(dk + (i64)key * p.dk_stride[1] + col) = pack2(dk0 * p.scale, dk1 * p.scale);
  *reinterpret_cast<u32*>(dv + (i64)key * p.dv_stride[1] + col) = pack2(dv0, dv1);
}

}  // namespace ft

// 1. delta = rowsum(d_o ∘ o); zero the dq accumulator and the ordering counters.
// Grid (ceil(Nq / kPreRows), Hq, B), kThreads threads: one warp per row at a time.
extern "C" __global__ void __launch_bounds__(ft::kThreads) FT_KERNEL_NAME(const ft::FtParams p) {
  ft::bwd_preprocess_rows<ft::kHeadDim, ft::kPreRows, ft::kWarps>(p, true);
}

// 3. dq = dq_accum * scale in the caller's dtype and strides. Grid as the preprocess.
extern "C" __global__ void __launch_bounds__(ft::kThreads) FT_CAT(FT_KERNEL_NAME, _convert)(const ft::FtParams p) {
  ft::bwd_convert_rows<ft::kHeadDim, ft::kPreRows, ft::kWarps>(p);
}

namespace ft {

// The rows layout (kGrid2d false): each warp owns kBlockN / kWarps keys (whole 16-row MMA
// tiles) of every GEMM, so Pᵀ and dSᵀ stay in its registers as the dV / dK A operands; only dSᵀ
// goes through shared memory, for dQ. Accumulates dK and dV across the block's steps.
template <int kUnused>
struct RowsWork {
  float acc_dk[kKTiles][kDTiles][4];
  float acc_dv[kKTiles][kDTiles][4];

  __device__ void zero() { zero_pair(acc_dk, acc_dv); }

  __device__ void step(const FtParams& p, const StepArgs& s) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int warp_key0 = warp * kKeysPerWarp;
    u16* sdS = reinterpret_cast<u16*>(s.scratch);
    const u32 sdS_addr = smem_address(sdS);
    const int Nk = p.seqlen_k, m0 = s.m0, n0 = s.n0;

    // This thread's query columns: m0 + nj*8 + 2*(lane%4) + c. lse in the exp2 domain; a row
    // past the end or with no visible key gets +inf, so its P is exactly 0.
    float lse2[kQTiles][2], dlt[kQTiles][2];
#pragma unroll
    for (int nj = 0; nj < kQTiles; ++nj)
#pragma unroll
      for (int c = 0; c < 2; ++c) load_lse_delta(p, s, nj * 8 + 2 * (lane % 4) + c, &lse2[nj][c], &dlt[nj][c]);

    // Sᵀ = K Qᵀ (this warp's keys × the block's queries) and dPᵀ = V d_oᵀ, side by side: both
    // read their B operand the same way.
    float acc_s[kKTiles][kQTiles][4], acc_dp[kKTiles][kQTiles][4];
    zero_pair(acc_s, acc_dp);
#pragma unroll
    for (int ks = 0; ks < kHeadDim / 16; ++ks) {
      u32 ak[kKTiles][4], av[kKTiles][4];
#pragma unroll
      for (int mi = 0; mi < kKTiles; ++mi) {
        const u32 off = (u32)(((warp_key0 + mi * 16 + (lane % 16)) * kRowStride + ks * 16 + (lane / 16) * 8) * 2);
        ldmatrix_x4(ak[mi], s.k + off);
        ldmatrix_x4(av[mi], s.v + off);
      }
#pragma unroll
      for (int nj = 0; nj < kQTiles; nj += 2) {
        const u32 off =
            (u32)(((nj * 8 + (lane / 16) * 8 + (lane % 8)) * kRowStride + ks * 16 + ((lane / 8) % 2) * 8) * 2);
        u32 bq[4], bo[4];
        ldmatrix_x4(bq, s.q + off);
        ldmatrix_x4(bo, s.d_o + off);
        mma_side_by_side(acc_s, acc_dp, nj, ak, av, bq, bo);
      }
    }

    // Pᵀ and dSᵀ, packed to 16 bits as A operands; dSᵀ also to shared memory for dQ.
    const bool need_mask = (n0 + kBlockN > Nk) || (kCausal && n0 + warp_key0 + kKeysPerWarp - 1 > m0 + s.diag);
    u32 p_frag[kKTiles][kQTiles][2], ds_frag[kKTiles][kQTiles][2];
#pragma unroll
    for (int mi = 0; mi < kKTiles; ++mi)
#pragma unroll
      for (int nj = 0; nj < kQTiles; ++nj)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          float pv[2], dsv[2];
#pragma unroll
          for (int c = 0; c < 2; ++c) {
            float pr = fast_exp2(fmaf(acc_s[mi][nj][2 * r + c], p.scale_log2, -lse2[nj][c]));
            if (need_mask) {
              const int key = n0 + warp_key0 + mi * 16 + lane / 4 + r * 8;
              const int qi = m0 + nj * 8 + 2 * (lane % 4) + c;
              if (key >= Nk || (kCausal && key > qi + s.diag)) pr = 0.f;
            }
            pv[c] = pr;
            dsv[c] = pr * (acc_dp[mi][nj][2 * r + c] - dlt[nj][c]);
          }
          p_frag[mi][nj][r] = pack2(pv[0], pv[1]);
          ds_frag[mi][nj][r] = pack2(dsv[0], dsv[1]);
          const int key_local = warp_key0 + mi * 16 + lane / 4 + r * 8;
          *reinterpret_cast<u32*>(sdS + key_local * kDsStride + nj * 8 + 2 * (lane % 4)) = ds_frag[mi][nj][r];
        }

    // dV += Pᵀ d_o and dK += dSᵀ Q (B operands stored [query][d]: ldmatrix.trans).
#pragma unroll
    for (int kk = 0; kk < kBlockM / 16; ++kk) {
      u32 pa[kKTiles][4], da[kKTiles][4];
#pragma unroll
      for (int mi = 0; mi < kKTiles; ++mi) {
        pa[mi][0] = p_frag[mi][2 * kk][0];
        pa[mi][1] = p_frag[mi][2 * kk][1];
        pa[mi][2] = p_frag[mi][2 * kk + 1][0];
        pa[mi][3] = p_frag[mi][2 * kk + 1][1];
        da[mi][0] = ds_frag[mi][2 * kk][0];
        da[mi][1] = ds_frag[mi][2 * kk][1];
        da[mi][2] = ds_frag[mi][2 * kk + 1][0];
        da[mi][3] = ds_frag[mi][2 * kk + 1][1];
      }
#pragma unroll
      for (int dt = 0; dt < kDTiles; dt += 2) {
        const u32 off = (u32)(((kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8) * kRowStride + (dt + lane / 16) * 8) * 2);
        u32 bo[4], bq[4];
        ldmatrix_x4_trans(bo, s.d_o + off);
        ldmatrix_x4_trans(bq, s.q + off);
        mma_side_by_side(acc_dv, acc_dk, dt, pa, da, bo, bq);
      }
    }
    if constexpr (kDqStaged) staged_dq_read();  // the last step's bulk adds have read the dQ tile
    __syncthreads();  // dSᵀ is complete (and the dQ tile free)

    // dQ[m0 .. m0 + kBlockM) += dS K: 16 x kDqCols output items spread over the warps (wider
    // items read each dS fragment once for more columns). A = dS read from dSᵀ ([key][query])
    // with ldmatrix.trans; B = K ([key][d]) with ldmatrix.trans.
    if constexpr (kDeterministic && !kDqStaged) wait_turn(s.counter, s.n_block);  // adds go straight to global
    constexpr int kColGroups = kDqCols / 16;  // 16-column ldmatrix groups of one item
    constexpr int kItems = (kBlockM / 16) * (kHeadDim / kDqCols);
    for (int t = warp; t < kItems; t += kWarps) {
      const int mt = t / (kHeadDim / kDqCols), ct = t % (kHeadDim / kDqCols);
      float acc[2 * kColGroups][4];
#pragma unroll
      for (int j = 0; j < 2 * kColGroups; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[j][e] = 0.f;
#pragma unroll
      for (int kk = 0; kk < kBlockN / 16; ++kk) {
        u32 a[4];
        ldmatrix_x4_trans(a, sdS_addr + (u32)(((kk * 16 + (lane % 8) + (lane / 16) * 8) * kDsStride + mt * 16 +
                                               ((lane / 8) % 2) * 8) * 2));
#pragma unroll
        for (int g = 0; g < kColGroups; ++g) {
          u32 b[4];
          ldmatrix_x4_trans(b, s.k + (u32)(((kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8) * kRowStride +
                                            ((ct * kColGroups + g) * 2 + lane / 16) * 8) * 2));
          mma_16816(acc[2 * g], a, b[0], b[1]);
          mma_16816(acc[2 * g + 1], a, b[2], b[3]);
        }
      }
#pragma unroll
      for (int j = 0; j < 2 * kColGroups; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          put_dq_pair(p, s, mt * 16 + lane / 4 + h * 8, (ct * kColGroups * 2 + j) * 8 + 2 * (lane % 4), acc[j][2 * h],
                      acc[j][2 * h + 1]);
    }
    finish_dq_step(p, s);
  }

  // dK (times the softmax scale) and dV: this warp's key rows, two 16-bit values per store.
  __device__ void store(const FtParams& p, const StepArgs& s) const {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
    for (int mi = 0; mi < kKTiles; ++mi)
#pragma unroll
      for (int r = 0; r < 2; ++r)
#pragma unroll
        for (int dt = 0; dt < kDTiles; ++dt)
          store_dk_dv_pair(p, s, warp * kKeysPerWarp + mi * 16 + lane / 4 + r * 8, dt * 8 + 2 * (lane % 4),
                           acc_dk[mi][dt][2 * r], acc_dk[mi][dt][2 * r + 1], acc_dv[mi][dt][2 * r],
                           acc_dv[mi][dt][2 * r + 1]);
  }
};

}  // namespace ft

#include "fa2_bwd_2d.cuh"

// 2. The main kernel. Grid (ceil(Nk / kBlockN), Hkv, B): key blocks vary fastest, so in
// deterministic mode a block's predecessor (the key block before it) always has the smaller
// linear index and was scheduled first. The walk over query steps, the Q / d_o pipeline and
// the K / V tiles are the same for both warp layouts; each step's GEMMs are the layout's.
extern "C" __global__ void __launch_bounds__(ft::kThreads) FT_CAT(FT_KERNEL_NAME, _main)(const ft::FtParams p) {
  using namespace ft;
  extern __shared__ __align__(16) unsigned char smem[];

  const int n_block = blockIdx.x;
  const int kv_head = blockIdx.y;
  const int batch = blockIdx.z;
  const int group = p.heads_q / p.heads_kv;
  const int Nq = p.seqlen_q;
  const int Nk = p.seqlen_k;
  const int diag = Nk - Nq;  // query i sees keys j <= i + diag
  const int n0 = n_block * kBlockN;

  // Query blocks that see at least one key of this block: the first query that sees key n0 is
  // n0 - diag; every later one does too (causal); all of them do otherwise.
  const int m_blocks = (Nq + kBlockM - 1) / kBlockM;
  int m_begin = 0;
  if (kCausal && n0 - diag > 0) m_begin = min(m_blocks, (n0 - diag) / kBlockM);
  const int steps_per_head = m_blocks - m_begin;
  const int total = group * steps_per_head;

  const u16* k = static_cast<const u16*>(p.k) + batch * p.k_stride[0] + kv_head * p.k_stride[2];
  const u16* v = static_cast<const u16*>(p.v) + batch * p.v_stride[0] + kv_head * p.v_stride[2];

  StepArgs s;
  s.batch = batch;
  s.kv_head = kv_head;
  s.n_block = n_block;
  s.n0 = n0;
  s.diag = diag;
  s.k = smem_address(smem);
  s.v = s.k + kBlockN * kRowStride * 2;
  const u32 sQ_addr = s.v + kBlockN * kRowStride * 2;
  constexpr u32 kTileBytes = kBlockM * kRowStride * 2;
  const u32 sdO_addr = sQ_addr + kStages * kTileBytes;
  s.scratch = smem + (2 * kBlockN + 2 * kStages * kBlockM) * kRowStride * 2;
  s.dq_tile = reinterpret_cast<float*>(s.scratch + kScratchBytes);  // kDqStaged only

  load_tile<kBlockN>(s.k, k, p.k_stride[1], n0, Nk);
  load_tile<kBlockN>(s.v, v, p.v_stride[1], n0, Nk);
  cp_async_commit();

  // The walk: query head by query head of the group, query step by step within a head. Its
  // positions advance one step at a time (a division by steps_per_head per step cost ~30
  // instructions): `at` is the step being computed, `ahead` the next Q / d_o tile to issue.
  struct Walk {
    int head, step;
  };
  auto advance = [&](Walk& w) {
    if (++w.step == steps_per_head) {
      w.step = 0;
      ++w.head;
    }
  };
  Walk at{kv_head * group, 0}, ahead = at;
  // Deterministic mode walks the query blocks last to first: every key block then reaches a
  // query block at the same step, so each waits only for its predecessor's dQ adds there.
  // First to last, a causal block n would start at query block m_begin(n), which block n-1
  // reaches only m_begin(n) - m_begin(n-1) steps later: the blocks would run one after another.
  auto m0_of = [&](const Walk& w) { return (kDeterministic ? m_blocks - 1 - w.step : m_begin + w.step) * kBlockM; };
  auto issue = [&](int it) {
    if (it < total) {
      const int hq = ahead.head, m0 = m0_of(ahead);
      const u32 stage = (u32)(it % kStages) * kTileBytes;
      const u16* q = static_cast<const u16*>(p.q) + batch * p.q_stride[0] + hq * p.q_stride[2];
      const u16* d_o = static_cast<const u16*>(p.d_o) + batch * p.do_stride[0] + hq * p.do_stride[2];
      load_tile<kBlockM>(sQ_addr + stage, q, p.q_stride[1], m0, Nq);
      load_tile<kBlockM>(sdO_addr + stage, d_o, p.do_stride[1], m0, Nq);
      advance(ahead);
    }
    cp_async_commit();
  };

  typename Pick<kGrid2d, GridWork<0>, RowsWork<0>>::type work;
  work.zero();
  if (kStages == 2) issue(0);

  for (int it = 0; it < total; ++it) {
    if constexpr (kStages == 1) {
      __syncthreads();  // every warp is done with the only Q / d_o buffer and with the scratch tiles
      issue(it);
      cp_async_wait<0>();
      __syncthreads();
    } else {
      cp_async_wait<0>();  // this step's Q / d_o (and K / V on the first step) have landed
      // Past this barrier every warp is done with step it-1: its buffer and the scratch tiles
      // may be reused.
      __syncthreads();
      issue(it + 1);
    }
    if constexpr (kDqAddsDeferred) {
      if (it > 0) add_staged_dq(s.dq_acc, s.dq_tile, min(kBlockM, Nq - s.m0));  // the last step's tile
    }
    const int hq = at.head;
    s.m0 = m0_of(at);
    advance(at);
    const u32 stage = (u32)(it % kStages) * kTileBytes;
    s.q = sQ_addr + stage;
    s.d_o = sdO_addr + stage;
    s.row_base = ((i64)batch * p.heads_q + hq) * Nq;
    s.dq_acc = p.dq_accum + (s.row_base + s.m0) * kHeadDim;
    s.counter = p.counters + ((i64)batch * p.heads_q + hq) * p.counters_per_head + s.m0 / 16;
    work.step(p, s);
  }
  cp_async_wait<0>();
  if constexpr (kDqAddsDeferred) {
    __syncthreads();  // the last step's tile is complete
    if (total > 0) add_staged_dq(s.dq_acc, s.dq_tile, min(kBlockM, Nq - s.m0));
  }
  if constexpr (kDqStaged) staged_dq_done();  // bulk reads of the tile end before the block exits
  work.store(p, s);
}
