// Hopper (sm_90a) attention forward kernel template (flashtune). One file over 600 lines: the
// kernel and its Hopper-only PTX wrappers (mbarrier, TMA, wgmma), which no other template uses.
//
// Warp-specialised, FlashAttention-3 style. A thread block has one producer warpgroup and
// kConsumerWarpgroups consumer warpgroups (128 threads each, the producer first):
//  - the producer's first thread issues TMA (cp.async.bulk.tensor) loads: the block's Q tile
//    once, then K and V tiles into a kStages-deep ring of shared-memory buffers, each guarded
//    by a "full" mbarrier (TMA transaction bytes) and an "empty" mbarrier (consumer warps
//    arrive when they no longer read the buffer). It gives registers away (setmaxnreg.dec).
//  - each consumer warpgroup owns 64 query rows (one wgmma m64 tile) and takes the freed
//    registers (setmaxnreg.inc). Per K/V block: S = Q K^T by wgmma with both operands in
//    shared memory (128-byte swizzle, K-major descriptors); online softmax in registers with
//    exp2 (scale*log2(e) folded into one FMA); O += P V by wgmma with P from registers as the
//    A operand and V from shared memory as an MN-major ("transposed") B operand.
//    Intra-warpgroup overlap (kOverlap): S for block j+1 is issued before P V for block j, so
//    the tensor cores work while the softmax of block j+1 runs; without it each block runs
//    S, softmax, P V in turn (fewer live registers: S and P of different blocks never
//    coexist). Ping-pong (kPingPong, two or more consumer warpgroups): named barriers order
//    the warpgroups' wgmma issues so that one warpgroup's softmax overlaps the others' GEMMs.
//  - the epilogue divides by the row sum, writes this warpgroup's O rows into its own (now
//    dead) Q rows in the TMA 128-byte swizzled layout and stores them with one TMA store per
//    64 columns; TMA clips rows past seqlen_q. lse is written with plain stores.
//  - persistent (kPersistent): each block walks a static list of tiles, one per round of
//    gridDim.x tiles; the K/V ring and its phases run on across tiles, a "q_empty" mbarrier
//    hands the Q buffer back to the producer once the O stores have read it, and the next
//    tile's first K block is loaded before that, while the epilogue runs. Non-causal tiles go
//    in grid order, rotated by a block each round so that short last tiles spread over the
//    blocks (query blocks of one head together: K/V shared in L2). Causal tiles go in
//    pairs of equal total cost, query blocks m-1-i and i of one (head, batch), a pair per block
//    per round (ft_tile_schedule.cuh: balanced, and the rows in flight few enough to share
//    their K/V in L2).
//  - kQBuffers = 2 (persistent only): two Q buffers used by alternate tiles, so the next tile's
//    Q loads while this tile computes and its O is stored from the other buffer; with one,
//    that Q waits for this tile's O store to have read the buffer (a load latency per tile,
//    which short sequences' tiles of few K/V blocks feel most: 9-15% of the time at N 512-1k,
//    docs/perf-notes.md). The store's read is waited for only after the next tile's first S is
//    issued. (Issuing that S before this tile's epilogue as well was 2% slower: session 19.)
//  - the split tail (kSplitTail): a tile whose rows all lie in its first warpgroup's 64 (the
//    last tile of a sequence that leaves at most 64 rows to it, as N 1k does with 192-row tiles)
//    deals its K/V blocks to all consumer warpgroups in turn instead of leaving the others idle
//    while one works through every block;
//    each runs its blocks on the first warpgroup's rows without the overlap, taking its issue
//    turns in block order, and the first warpgroup merges the others' partial O, row max and
//    row sum from shared memory before its epilogue.
// K/V blocks are visited from the last to the first, so the only blocks that need masking
// (the ragged tail past seqlen_k and, when causal, the diagonal) come first; causal blocks
// that a whole query tile cannot see are skipped, and so, per consumer warpgroup, are the first
// blocks none of its rows sees (ft_tile_schedule.cuh's unseen_blocks; the producer arrives on
// their empty barriers for it). TMA zero-fills rows past the sequence ends.
//
// Parameters (ft_config): kBf16; kHeadDim (64, 128, 192, 256: a multiple of 64, one 128-byte
// swizzle atom per 64 columns); kHeadDimData (the tensors' head dim: kHeadDim, or 96, 160 or 224
// with kHeadDim the next multiple of 64: the maps' boxes read the missing columns as zeros, S
// skips their k-steps, P V runs at the data's width and the O store drops the rest); kBlockM = query rows per thread block = 64 * kConsumerWarpgroups
// (each consumer warpgroup owns 64 rows); kBlockN = keys per K/V block (multiple of 16, at
// most 256); kConsumerWarpgroups 1..4; kStages 2..4; kCausal; kPersistent (a grid of at most
// kBlocksPerSm blocks per SM, each looping over tiles; the host sizes the grid); kPingPong (two
// or more consumer warpgroups only); kOverlap; kSmemBytes (checked against the layout below);
// kBlocksPerSm (1, or 2-4 with one consumer warpgroup: the launch bounds, and so the registers
// setmaxnreg can hand the consumers; generator/hopper_fwd_pack.cpp's HopperBlocksPerSm);
// kRescaleThreshold (0, or the T of the thresholded rescale below: HopperRescaleThreshold);
// kSplitTail (the split tail above, with its merge buffer: HopperSplitTail).
//
// No toolkit header: every Hopper instruction goes through inline PTX. The generator prepends a
// constexpr prologue (namespace ft_config, FT_KERNEL_NAME) and inlines the two shared headers
// (ft_kernel_abi.cuh: the parameter struct the host fills; ft_device.cuh: common PTX helpers);
// without the prologue the defaults below let the file compile on its own.
//
// Semantics: q [B, Nq, Hq, D], k/v [B, Nk, Hkv, D], o like q (any batch/seq/head strides,
// described by the tensor maps the host encodes), lse [B, Hq, Nq] fp32 (optional). Causal
// masks align bottom-right: query i sees keys j <= i + Nk - Nq. A row that sees no key gets
// o = 0 and lse = -inf.
// Varlen (cu_seqlens set): q/o [total_q, Hq, D], k/v [total_k, Hkv, D] packed, lse
// [Hq, total_q]; the maps are {D, H, total, 1} and a tile addresses its sequence's rows from
// cu_seqlens[b]. Loads past a sequence's end read the next sequence's rows (finite data),
// which the key mask drops and whose query rows are never stored: a warpgroup whose 64 rows
// cross the sequence's end stores O with plain stores bounded by it instead of TMA.
// Paged K/V (kPagedKv, the hopper_paged family): k/v are page pools [num_blocks, block_size,
// Hkv, D] whose maps are {D, Hkv, block_size, num_blocks}; sequence b has seqlens_k[b] keys
// (read as at most Nk), key j in page block_table[b * stride + j / block_size]. A K/V block is
// loaded as boxes of 2^box_shift rows (each within one page), a box a lane: each lane reads
// its box's table entry, so a block costs one table round trip. The producer's first warp
// loads K (and Q), its third V: the boxes of a warp issue one at a time, so on 16-key pages one
// warp loading both ran behind the consumers. Boxes past the sequence's keys load page 0
// (never a table entry past the sequence's pages), and a page index outside the pool reads
// zeros (TMA bounds). Rows past the keys are masked in S, but P = 0 times a NaN in V is NaN,
// so the V rows past the keys of a sequence's last block (stale or uninitialised cache) are
// zeroed: that block's V lands on a "raw" barrier, the producer's second warp zeroes the rows
// and then completes the block's "full" barrier.
// Queries may be dense or packed (cu_seqlens_q, as varlen). A dense cache [B, Nk, Hkv, D] with
// per-sequence lengths (flash_attn_with_kvcache's cache_seqlens) runs as one page a sequence:
// block_table null means page b for sequence b, and its maps are {D, Hkv, Nk, B}.

#ifndef FT_CONFIG_PROVIDED
#define FT_KERNEL_NAME hopper_fwd_bf16_d128_bm128_bn128_wg2_s2_full
namespace ft_config {
constexpr bool kBf16 = true;
constexpr int kHeadDim = 128;
constexpr int kHeadDimData = 128;
constexpr int kBlockM = 128;
constexpr int kBlockN = 128;
constexpr int kConsumerWarpgroups = 2;
constexpr int kStages = 2;
constexpr bool kCausal = false;
constexpr bool kPersistent = false;
constexpr bool kPingPong = true;
constexpr bool kOverlap = true;
constexpr int kQBuffers = 1;
constexpr bool kSplitTail = true;
constexpr int kSmemBytes = 1024 + kQBuffers * kBlockM * kHeadDim * 2 + 2 * kStages * kBlockN * kHeadDim * 2 +
                           (kConsumerWarpgroups - 1) * (kHeadDim / 2 + 4) * 512 + (2 * kQBuffers + 4 * kStages) * 8;
// (kPagedKv adds kStages raw barriers: 8 bytes each.)
constexpr int kBlocksPerSm = 1;
constexpr int kRescaleThreshold = 0;
constexpr bool kPagedKv = false;
constexpr bool kClaimTiles = false;
}  // namespace ft_config
#endif

#include "ft_kernel_abi.cuh"
#include "ft_tile_schedule.cuh"

namespace ft {

using namespace ft_config;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;

using FtTensorMap = ft_abi::TensorMap;
using FtHopperParams = ft_abi::HopperParams;

// Ping-pong between consumer warpgroups (kPingPong): each issues its wgmmas only in its turn (a
// ring of named barriers), so one warpgroup's softmax runs while the next one's GEMMs occupy
// the tensor cores.
// Named barriers: 0 = __syncthreads, 1 + cw = consumer warpgroup cw's epilogue,
// kTurnBarrier + cw = "consumer warpgroup cw may issue" (its own 128 threads + the previous one's).
constexpr int kTurnBarrier = 5;  // after the four epilogue barriers
// The split tail's hand-over (kSplitTail): the other warpgroups' partials are in the merge
// buffer (kMergeFullBarrier), and the first warpgroup has read them (kMergeFreeBarrier).
constexpr int kMergeFullBarrier = 9;
constexpr int kMergeFreeBarrier = 10;
// FT_HOPPER_LAZY_RESCALE=1: skip the O rescale when no row of the warp moved its max (the
// skipped multiplies would all be by exactly 1.0f: bit-identical results).
#ifndef FT_HOPPER_LAZY_RESCALE
#define FT_HOPPER_LAZY_RESCALE 0
#endif
// kRescaleThreshold = T > 0 (log2 units; the generator's HopperRescaleThreshold): a row keeps its
// running max until a block's scores exceed it by more than T, so P = exp2(s - m) stays below
// 2^T (exact in fp32; bf16 / fp16 keep their relative precision, and fp16's range ends at 2^16),
// the row sum and O are relative to the same max, and lse = m + log2(sum) is unchanged. After a
// row's first blocks its max rarely moves by T, so the O rescale (kHeadDim / 2 multiplies a
// thread per block: 128 at d256) is skipped for the whole warp. FT_HOPPER_RESCALE_THRESHOLD=T
// overrides it (an A/B knob; 0 = off).
#ifdef FT_HOPPER_RESCALE_THRESHOLD
constexpr int kRescaleT = FT_HOPPER_RESCALE_THRESHOLD;
#else
constexpr int kRescaleT = kRescaleThreshold;
#endif
static_assert(kRescaleT >= 0 && kRescaleT <= 15, "P = exp2(s - m) < 2^T must fit fp16 (T <= 15)");
// FT_HOPPER_SYNCWARP_TILE=0 (an A/B knob: the template before session 14): no __syncwarp()
// closing each tile. Without it ptxas cannot prove the warps reconverged after the epilogue's
// per-thread branches (the one-thread TMA store, the varlen store loop) where a persistent
// block's loop comes back to the next tile's wgmma: it serialised every wgmma (C7520) and
// spilled, 1.02-2.17x slower (docs/perf-notes.md, session 14).
#ifndef FT_HOPPER_SYNCWARP_TILE
#define FT_HOPPER_SYNCWARP_TILE 1
#endif
// FT_HOPPER_BLOCKS=N (an A/B knob, non-persistent variants only: the host sizes persistent grids
// by kBlocksPerSm): the launch bound's blocks per SM instead of the generator's kBlocksPerSm.
#ifndef FT_HOPPER_BLOCKS
#define FT_HOPPER_BLOCKS 0
#endif
// FT_HOPPER_SPLIT_TAIL=0 (an A/B knob): every tile runs on its own warpgroups' rows, as before
// session 31; the merge buffer stays reserved, so the layout is the same.
#ifndef FT_HOPPER_SPLIT_TAIL
#define FT_HOPPER_SPLIT_TAIL 1
#endif
// FT_HOPPER_CAUSAL_ROTATE=0 (an A/B knob): persistent causal rounds as before session 33. On
// (ft_sched::causal_pair_tile's `rotate`), the row pairs a split tail makes cheaper spread over
// the blocks: d64 192-row causal N 1k / 2k 12% / 11% faster, N 4k and d128 within noise (H100).
#ifndef FT_HOPPER_CAUSAL_ROTATE
#define FT_HOPPER_CAUSAL_ROTATE 1
#endif

constexpr int kRowsPerWarpgroup = 64;
constexpr int kThreads = 128 * (kConsumerWarpgroups + 1);
constexpr int kChunks = kHeadDim / 64;                  // 64-column, 128-byte-swizzled chunks
// O's columns: P V runs at the tensors' head dim (a wgmma N of 96, 160 or 224 reads the last
// chunk's first columns only), so a padded head dim neither multiplies nor keeps V's zero columns.
constexpr int kHeadDimO = kHeadDimData;
constexpr u32 kQBytes = kBlockM * kHeadDim * 2;
constexpr u32 kKVBytes = kBlockN * kHeadDim * 2;        // one K (or V) buffer
constexpr u32 kQChunkBytes = kBlockM * 128;
constexpr u32 kKVChunkBytes = kBlockN * 128;
// Claimed tiles (kClaimTiles: persistent, two Q buffers, dense K/V; the p3 variants, which serve
// packed sequences): the blocks take their tiles from a counter at run time
// (HopperParams::tile_counter, in the call's workspace) in ft_sched::claim_tile's order, not by
// the static deal, which assumes every sequence is the longest. A scheduler warp claims them and
// hands each id to the loading thread and the consumers through a two-slot ring. A compile-time
// switch: the static deal's arithmetic runs in uniform registers, but a tile id read from shared
// memory moves the loading thread's tile arithmetic into ordinary ones, where it spills (12-48
// bytes at 24 registers, 0-32 at 32), so the producer keeps 32 where the consumers lose nothing
// by it (kProducerRegs).
// Paged K/V (several producer warps walk the tiles): the zeroing warp claims them, publishing
// tile n before it zeroes tile n-1's V tail, and each load warp reads the ids.
constexpr bool kTileClaims = kClaimTiles && kPersistent && kQBuffers == 2;
// q_full, k/v full and empty per stage, q_empty (per Q buffer); paged: a V "raw" barrier per
// stage; claimed tiles: an id-full and an id-empty barrier and the id per ring slot
constexpr int kBarriers = 2 * kQBuffers + 4 * kStages + (kPagedKv ? kStages : 0) + (kTileClaims ? 6 : 0);
// The split tail's merge buffer: for each consumer warpgroup but the first, every thread's O
// accumulators, row maxima and row sums (kMergeFloats floats), float k of thread t at k * 128 + t.
constexpr int kMergeFloats = kHeadDim / 2 + 4;
constexpr u32 kMergeWgBytes = kMergeFloats * 128 * 4;
constexpr u32 kMergeBytes = kSplitTail ? (kConsumerWarpgroups - 1) * kMergeWgBytes : 0;
constexpr bool kSplitTailOn = kSplitTail && FT_HOPPER_SPLIT_TAIL != 0;
constexpr int kLayoutBytes =
    1024 /* alignment slack */ + kQBuffers * kQBytes + 2 * kStages * kKVBytes + kMergeBytes + kBarriers * 8;
// Registers: each of kMinBlocks resident blocks gets its share of the 64K register file (the
// launch bound: per thread, rounded down to 8); the producer keeps 24 and the consumers share
// the rest, at most 240. One consumer warpgroup: 232, 136, 104 at two, three, four blocks per SM.
// FT_HOPPER_MAX_BLOCKS caps the blocks per SM (an A/B knob: the host sizes persistent grids
// by kBlocksPerSm, so only non-persistent variants may be capped).
#ifndef FT_HOPPER_MAX_BLOCKS
#define FT_HOPPER_MAX_BLOCKS 4
#endif
constexpr int kBlocksWanted = FT_HOPPER_BLOCKS > 0 ? FT_HOPPER_BLOCKS : kBlocksPerSm;
constexpr int kMinBlocks = kBlocksWanted < FT_HOPPER_MAX_BLOCKS ? kBlocksWanted : FT_HOPPER_MAX_BLOCKS;
constexpr int kLoadWarps = kStages % 3 == 0 ? 3 : 2;
static_assert(kStages % kLoadWarps == 0 && kLoadWarps <= 3, "each stage loaded by one of warps 0, 2, 3");
constexpr int kLaunchRegs = 65536 / (kMinBlocks * kThreads) / 8 * 8;
// Consumer registers when the producer keeps 24 or 32 (setmaxnreg's unit is 8; at most 240).
constexpr int kConsumerShareAt24 = (kThreads * kLaunchRegs - 128 * 24) / (128 * kConsumerWarpgroups) / 8 * 8;
constexpr int kConsumerShareAt32 = (kThreads * kLaunchRegs - 128 * 32) / (128 * kConsumerWarpgroups) / 8 * 8;
constexpr int kConsumerRegsAt24 = kConsumerShareAt24 < 240 ? kConsumerShareAt24 : 240;
constexpr int kConsumerRegsAt32 = kConsumerShareAt32 < 240 ? kConsumerShareAt32 : 240;
// Claimed tiles: 32 where that leaves the consumers as many (three and four warpgroups), else 24.
constexpr bool kProducerAt32 = kTileClaims && kConsumerRegsAt32 == kConsumerRegsAt24;
constexpr int kProducerRegs = kProducerAt32 ? 32 : 24;
constexpr int kConsumerRegs = kProducerAt32 ? kConsumerRegsAt32 : kConsumerRegsAt24;

static_assert(kHeadDim % 64 == 0 && kHeadDim >= 64 && kHeadDim <= 256,
              "head dim must be 64, 128, 192 or 256 (whole 64-column swizzle atoms)");
static_assert(kHeadDimData % 32 == 0 && kHeadDimData <= kHeadDim && kHeadDimData > kHeadDim - 64,
              "the tensors' head dim must be a multiple of 32 within the last 64-column chunk of kHeadDim");
static_assert(kConsumerWarpgroups >= 1 && kConsumerWarpgroups <= 4, "consumer warpgroups must be 1, 2, 3 or 4");
static_assert(kBlockM == kRowsPerWarpgroup * kConsumerWarpgroups,
              "block_m must be 64 * consumer warpgroups: each consumer warpgroup owns one 64-row wgmma tile");
static_assert(kBlockN % 16 == 0 && kBlockN >= 16 && kBlockN <= 256,
              "block_n must be a multiple of 16 in [16, 256] (wgmma N and TMA box limits)");
static_assert(kStages >= 2 && kStages <= 4, "stages must be 2, 3 or 4");
static_assert(kQBuffers == 1 || (kQBuffers == 2 && kPersistent), "two Q buffers serve persistent blocks only");
static_assert(kBlocksPerSm >= 1 && kBlocksPerSm <= 4 && (kBlocksPerSm == 1 || kConsumerWarpgroups == 1),
              "blocks per SM must be 1, or 2-4 with one consumer warpgroup");
static_assert(!kPingPong || kConsumerWarpgroups > 1, "ping-pong needs two or more consumer warpgroups");
static_assert(FT_HOPPER_BLOCKS == 0 || (!kPersistent && kConsumerWarpgroups == 1 && FT_HOPPER_BLOCKS <= 4),
              "FT_HOPPER_BLOCKS: 1-4 blocks per SM, one consumer warpgroup, non-persistent only");
// Without the overlap, S = Q K^T may be issued as two wgmma chains over the first kSplitN0 and
// the other keys of the block (two commit groups; the softmax waits for both): ptxas (NVRTC
// 13.0) compiles an S wgmma with O live only when that wgmma's S and O fit the launch bound's
// registers, so halves let 64x128 without overlap fit three blocks per SM (80 registers) and
// 64x80 four (64). Split only where the whole S does not fit: the halves cost a commit group.
// The generator's blocks per SM (HopperBlocksPerSm) counts the same way. kSplitN0 is half the
// keys rounded up to a whole wgmma k-step of K rows (16), so both halves are valid wgmma widths.
constexpr int kSplitN0 = (kBlockN / 2 + 15) / 16 * 16;
constexpr int kSplitN1 = kBlockN > kSplitN0 ? kBlockN - kSplitN0 : 16;  // (a valid width where unused)
constexpr bool kSplitS = !kOverlap && kMinBlocks > 1 && kBlockN >= 32 && kBlockN / 2 + kHeadDimO / 2 > kLaunchRegs;
static_assert(!kSplitS || kSplitN0 / 2 + kHeadDimO / 2 <= kLaunchRegs,
              "S halves and O do not fit the launch bound's registers");
static_assert(kSmemBytes == kLayoutBytes, "kSmemBytes disagrees with the template's shared-memory layout");
// (Ping-pong's issue turns keep the split tail's blocks in ring order: no split without them.)
static_assert(!kSplitTail || (kConsumerWarpgroups > 1 && kPingPong),
              "the split tail needs two or more consumer warpgroups taking ping-pong turns");
// Named barriers (16 in hardware): the epilogues', then the turns', then the merge's, apart.
static_assert(1 + kConsumerWarpgroups <= kTurnBarrier && kTurnBarrier + kConsumerWarpgroups <= kMergeFullBarrier &&
                  kMergeFreeBarrier < 16,
              "the named barriers' numbers overlap or pass the 16 the hardware has");
static_assert(!kSplitTail || kStages >= kConsumerWarpgroups - 1,
              "the split tail's S turns need kConsumerWarpgroups - 1 K blocks in flight (else the ring deadlocks)");
static_assert(kSmemBytes <= 232448, "shared memory exceeds the largest opt-in limit (227 KB)");
// With overlap, S of one block and P of the previous one are live together.
static_assert(kBlockN / 2 + kHeadDimO / 2 + (kOverlap ? kBlockN / 4 : 0) <= kConsumerRegs - 32,
              "S, P and O accumulators do not fit the consumer's register budget");

#include "ft_device.cuh"

#include "ft_hopper.cuh"

// S's columns [N0, N0 + N) (keys N0.. of the block; kSplitS issues two such halves) into s, this thread's
// N / 2 accumulators of them (the wgmma layout keeps a column range's accumulators contiguous:
// column group i of 8 is s[4i .. 4i + 3]). K's key rows are 128 bytes apart in each chunk.
// Each wgmma's descriptor is the operand's base descriptor plus the k-step's byte offset / 16 (one
// 64-bit add; building each from its address took 3-4 instructions that ptxas recomputed in every
// K/V block: 1-5% slower, session 16's A/B). Exact: shared addresses stay below 2^18, so the
// 14-bit start-address field never carries into the next field.
template <int N, int N0>
__device__ __forceinline__ void gemm_qk_part(float (&s)[N / 2], u32 q_addr, u32 k_addr) {
  const u64 dq = make_desc(q_addr, 16, 1024), dk = make_desc(k_addr, 16, 1024);
#pragma unroll
  for (int c = 0; c < kChunks; ++c)
#pragma unroll
    for (int kk = 0; kk < 4; ++kk)
      if (c * 64 + kk * 16 < kHeadDimData)  // columns past the tensors' head dim are zero: no k-step
        Wgmma<N>::ss(s, dq + (c * kQChunkBytes + kk * 32) / 16, dk + (c * kKVChunkBytes + N0 * 128 + kk * 32) / 16,
                     (c | kk) != 0);
}

// S[64 x kBlockN] = Q[64 x D] K^T: kHeadDimData / 16 wgmmas, both operands K-major in shared
// memory. Within a 64-column chunk the 16-column k-steps are 32 bytes apart; chunks are whole
// [rows x 128 B] swizzled regions. The stride byte offset is one 8-row swizzle atom (1024 B).
__device__ __forceinline__ void gemm_qk(float (&s)[kBlockN / 2], u32 q_addr, u32 k_addr) {
  gemm_qk_part<kBlockN, 0>(s, q_addr, k_addr);
}

// O[64 x D] += P[64 x kBlockN] V: kBlockN / 16 wgmmas, P from registers, V MN-major (its rows
// are keys = the k dimension). Leading byte offset: the next 64 output columns (next chunk);
// stride byte offset: the next 8 keys (1024 B). A 16-key k-step is 2048 bytes. At a padded head
// dim, N = kHeadDimO ends inside the last chunk: the wgmma reads that chunk's first columns (the
// swizzle is a function of the address, so part of an atom reads as the whole one would).
__device__ __forceinline__ void gemm_pv(float (&o)[kHeadDimO / 2], const u32 (&p)[kBlockN / 16][4], u32 v_addr) {
  const u64 dv = make_desc(v_addr, kKVChunkBytes, 1024);
#pragma unroll
  for (int kk = 0; kk < kBlockN / 16; ++kk) Wgmma<kHeadDimO>::rs(o, p[kk], dv + kk * 2048 / 16, 1);
}

// A tile's Q: kChunks boxes of 64 columns (rows `row` on, of head `head`, batch `tb`) into the
// Q buffer at `dst`, completing on `bar`.
__device__ __forceinline__ void load_q_tile(u32 dst, const FtTensorMap* map, int head, int row, int tb, u32 bar) {
#pragma unroll
  for (int c = 0; c < kChunks; ++c) tma_load_4d(dst + c * kQChunkBytes, map, c * 64, head, row, tb, bar);
}
}  // namespace ft

extern "C" __global__ void __launch_bounds__(ft::kThreads, ft::kMinBlocks)
    FT_KERNEL_NAME(const __grid_constant__ ft::FtHopperParams p) {
  using namespace ft;
  extern __shared__ __align__(1024) unsigned char smem[];

  const int tid = threadIdx.x;
  const int warpgroup = tid / 128;
  const int Nq = p.seqlen_q;  // varlen: the longest sequences (each tile has its own counts)
  const int Nk = p.seqlen_k;
  const int m_blocks = (Nq + kBlockM - 1) / kBlockM;
  const bool varlen = p.cu_seqlens_q != nullptr;  // packed queries (and, unless paged, packed K/V)

  // Tiles: (query block, head, batch). One per thread block from the grid, or, persistent, this
  // block's list: next_tile(slot) gives its next tile id (query block + m_blocks * (head + heads_q *
  // batch)), num_tiles when there is none. (Each role keeps its own `slot`: one declared for the
  // whole kernel lived in local memory once the paged producer's 24 registers ran short.)
  // Non-causal: round `slot` takes the next gridDim.x
  // tiles, rotated by a block a round (ft_sched::full_tile; query blocks of one head together:
  // the blocks in flight share K/V in L2); causal:
  // ft_tile_schedule.cuh's pairs of a long and a short query block of one row.
  const int num_tiles = kPersistent ? m_blocks * p.heads_q * p.batch : 1;
  // slot: this block's tiles taken so far (and, causal, skipped slots)
  auto next_tile = [&](int& slot) {
    if constexpr (!kPersistent) {
      return slot++ == 0 ? 0 : num_tiles;
    } else if constexpr (!kCausal) {
      const int t = ft_sched::full_tile(slot++, int(blockIdx.x), int(gridDim.x));
      return t < num_tiles ? t : num_tiles;
    } else {
      for (;;) {
        const int t = ft_sched::causal_pair_tile(slot++, int(blockIdx.x), int(gridDim.x), m_blocks, p.heads_q * p.batch,
                                                 FT_HOPPER_CAUSAL_ROTATE != 0);
        if (t != ft_sched::kSkip) return t >= 0 ? t : num_tiles;
      }
    }
  };
  // A tile's sequence: nq queries and nk keys (query i sees keys j <= i + diag when causal),
  // whose rows start at TMA row coordinates q_row / k_row of TMA batch coordinate tb (dense:
  // 0 and the batch; varlen: the packed rows cu_seqlens[batch] of the one-batch maps).
  struct Tile {
    int m0, head, batch, n_blocks;
    int nq, nk, diag, q_row, k_row, tb;
  };
  auto tile_at = [&](int t) {
    int m_block, head, batch;
    if constexpr (kPersistent) {
      m_block = t % m_blocks;
      head = t / m_blocks % p.heads_q;
      batch = t / m_blocks / p.heads_q;
    } else {
      // Causal: the last query blocks see the most keys; launch them first.
      m_block = kCausal ? int(gridDim.x - 1 - blockIdx.x) : int(blockIdx.x);
      head = blockIdx.y;
      batch = blockIdx.z;
    }
    Tile tile{m_block * kBlockM, head, batch, 0, Nq, Nk, 0, 0, 0, batch};
    if (varlen) {
      i64 row0;
      tile.nq = varlen_span(p.cu_seqlens_q, batch, Nq, p.total_q, &row0);
      tile.q_row = int(row0);
      tile.tb = 0;
      if constexpr (!kPagedKv) {
        tile.nk = varlen_span(p.cu_seqlens_k, batch, Nk, p.total_k, &row0);
        tile.k_row = int(row0);
      }
    }
    if constexpr (kPagedKv) tile.nk = min(max(p.seqlens_k[batch], 0), Nk);  // (k_row unused: pages)
    tile.diag = tile.nk - tile.nq;
    // A tile past its sequence's end (varlen) loads nothing and stores nothing.
    tile.n_blocks = ft_sched::tile_blocks(tile.m0, kBlockM, tile.nq, tile.nk, tile.diag, kBlockN, kCausal);
    return tile;
  };
  // Consumer warpgroup cw skips its tile's first unseen_blocks visits (ft_tile_schedule.cuh:
  // blocks past its rows' causal diagonal when kBlockN < kBlockM, or all of them when its rows
  // lie past the sequence's end, as in the last 192-row tile at N 512 and 1k); the producer makes
  // its warps' arrivals on those blocks' empty barriers. One warpgroup never skips: its tile's
  // blocks are its own.
  auto unseen_blocks = [&](const Tile& tile, int cw) {
    if constexpr (kConsumerWarpgroups == 1) return 0;
    return ft_sched::unseen_blocks(tile.m0 + cw * kRowsPerWarpgroup, kRowsPerWarpgroup, tile.nq, tile.diag,
                                   tile.n_blocks, kBlockN, kCausal);
  };

  // The split tail (kSplitTail): every K/V block of a tile of one live warpgroup goes to one
  // consumer warpgroup (ft_tile_schedule.cuh's split_tail_tile), which reads and releases it;
  // the producer makes the other warpgroups' arrivals, as for skipped blocks.
  auto split_tile = [&](const Tile& tile) {
    if constexpr (!kSplitTailOn) return false;
    return ft_sched::split_tail_tile(tile.m0, tile.nq, tile.n_blocks, kRowsPerWarpgroup);
  };

  // Varlen: a block whose only tile lies past its sequence's end leaves before any barrier.
  if (!kPersistent && varlen && tile_at(0).m0 >= tile_at(0).nq) return;

  // Shared memory: [Q chunks (x kQBuffers)][K stages][V stages][merge buffer][barriers], every
  // tile 1024-byte aligned.
  const u32 base = (smem_address(smem) + 1023u) & ~1023u;
  const u32 sQ = base;
  const u32 sK = sQ + kQBuffers * kQBytes;
  const u32 sV = sK + kStages * kKVBytes;
  const u32 sMerge = sV + kStages * kKVBytes;  // kMergeBytes (the split tail's partials)
  const u32 bars = sMerge + kMergeBytes;
  const u32 bar_q = bars;
  auto bar_k_full = [&](int s) { return bars + 8u * (1 + s); };
  auto bar_v_full = [&](int s) { return bars + 8u * (1 + kStages + s); };
  auto bar_k_empty = [&](int s) { return bars + 8u * (1 + 2 * kStages + s); };
  auto bar_v_empty = [&](int s) { return bars + 8u * (1 + 3 * kStages + s); };
  // The Q tile (which also stages O) is free again: one arrival per consumer warpgroup once
  // its O store has read shared memory. Only persistent blocks load a second Q.
  const u32 bar_q_empty = bars + 8u * (1 + 4 * kStages);
  // Tile number `tiles` of this block uses Q buffer tiles % kQBuffers, whose barriers (the second
  // buffer's after bar_q_empty) complete their phase (tiles / kQBuffers) & 1 for it.
  auto q_buf = [&](int tiles) { return kQBuffers > 1 ? tiles & 1 : 0; };
  auto q_phase = [&](int tiles) { return (u32)(kQBuffers > 1 ? tiles >> 1 : tiles) & 1u; };
  auto q_full_bar = [&](int b) { return b == 0 ? bar_q : bars + 8u * (2 + 4 * kStages); };
  auto q_empty_bar = [&](int b) { return b == 0 ? bar_q_empty : bars + 8u * (3 + 4 * kStages); };
  // Paged: the V TMA of a sequence's last block completes here; the zeroing warp then
  // completes bar_v_full (see the header).
  auto bar_v_raw = [&](int s) { return bars + 8u * (2 * kQBuffers + 4 * kStages + s); };
  // Paged: how many rows of the tile's first visited block (its last) hold keys; where fewer
  // than kBlockN, the second producer warp zeroes the others in V.
  auto v_tail_rows = [&](int n_blocks, int nk) { return nk - (n_blocks - 1) * kBlockN; };
  // Claimed tiles: ring slot b (tile number n uses slot n & 1, phase (n >> 1) & 1, as the Q
  // buffers) holds the id the scheduler warp claimed; its full barrier completes when the id is
  // there, its empty one when the loading thread and every consumer warp have read it.
  // (After the paged raw barriers.)
  constexpr int kIdBase = 2 * kQBuffers + 4 * kStages + (kPagedKv ? kStages : 0);
  auto id_full_bar = [&](int b) { return bars + 8u * (kIdBase + b); };
  auto id_empty_bar = [&](int b) { return bars + 8u * (kIdBase + 2 + b); };
  auto id_slot = [&](int b) { return bars + 8u * (kIdBase + 4 + b); };

  if (tid == 0) {
    for (int b = 0; b < kQBuffers; ++b) {
      mbar_init(q_full_bar(b), 1);
      mbar_init(q_empty_bar(b), kConsumerWarpgroups);
    }
    for (int s = 0; s < kStages; ++s) {
      mbar_init(bar_k_full(s), 1);
      mbar_init(bar_v_full(s), 1);
      mbar_init(bar_k_empty(s), 4 * kConsumerWarpgroups);  // one arrival per consumer warp
      mbar_init(bar_v_empty(s), 4 * kConsumerWarpgroups);
      if constexpr (kPagedKv) mbar_init(bar_v_raw(s), 1);
    }
    if constexpr (kTileClaims) {
      for (int b = 0; b < 2; ++b) {
        mbar_init(id_full_bar(b), 1);
        // each consumer warp and the loading thread (paged: each load warp)
        mbar_init(id_empty_bar(b), 4 * kConsumerWarpgroups + (kPagedKv ? kLoadWarps : 1));
      }
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (warpgroup == 0) {
    // ---- producer ---------------------------------------------------------------------------
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegs));
    const int lane = tid % 32;
    // Dense: the first thread issues everything. Paged: the first warp loads K and Q, the third
    // V, each lane one box of a block and lane 0 (the `leader`) the rest. A warp issues its
    // boxes one lane at a time (the TMA takes its operands from uniform registers), and 16-key
    // pages make 8 boxes a 64-column chunk: one warp issuing both K and V ran behind the
    // consumers (a second warp took 11-17% off 128x128 tiles on 16-key pages, session 36).
    const int pwarp = tid / 32;
    const int lw = pwarp == 0 ? 0 : pwarp - 1;  // loading warps 0, 2, 3 (the second zeroes)
    const bool leader = !kPagedKv || lane == 0;
    const bool loads_q = !kPagedKv || lw == 0;
    // Claimed tiles (the scheduler's): the next tile id, claimed from the counter (again at once
    // past a tile beyond its sequence's end: a packed call's grid counts every sequence as the
    // longest), or the static deal's without a counter (a call without the workspace, or one too
    // small or of equal lengths); then its hand-over through ring slot n & 1, up to two tiles
    // ahead of its readers. The last id handed over is num_tiles.
    auto claim_next = [&](int& slot) {
      if (p.tile_counter == nullptr) return next_tile(slot);
      for (int c = int(atomicAdd(p.tile_counter, 1u)); c < num_tiles; c = int(atomicAdd(p.tile_counter, 1u))) {
        const int t = ft_sched::claim_tile(c, m_blocks, p.heads_q * p.batch, kCausal);
        if (kPagedKv && !varlen) return t;  // queries [B, Nq]: every query block holds rows
        i64 row0;
        if (t % m_blocks * kBlockM < varlen_span(p.cu_seqlens_q, t / m_blocks / p.heads_q, Nq, p.total_q, &row0)) return t;
      }
      return num_tiles;
    };
    auto publish_id = [&](int n, int t) {
      mbar_wait(id_empty_bar(n & 1), ((u32)(n >> 1) & 1u) ^ 1u);
      st_shared_s32(id_slot(n & 1), t);
      mbar_arrive(id_full_bar(n & 1));
    };
    if (kPagedKv ? pwarp != 1 && lw < kLoadWarps : tid == 0) {
      if (leader) {
        prefetch_tensormap(&p.tmap_q);
        prefetch_tensormap(&p.tmap_k);
        prefetch_tensormap(&p.tmap_v);
      }
      int slot = 0;   // next_tile's
      int kv = 0;     // K/V blocks issued so far: ring slot kv % kStages, phase (kv / kStages) & 1
      int tiles = 0;  // tiles of this block so far (q_empty phases)
      // Claimed tiles: tile number n's id from the scheduler warp (below).
      auto producer_next = [&](int n) {
        if constexpr (kTileClaims && kPagedKv) {  // the whole load warp
          mbar_wait(id_full_bar(n & 1), (u32)(n >> 1) & 1u);
          const int t = __shfl_sync(0xffffffffu, lane == 0 ? ld_shared_s32(id_slot(n & 1)) : 0, 0);
          if (lane == 0) mbar_arrive(id_empty_bar(n & 1));
          return t;
        } else if constexpr (kTileClaims) {
          mbar_wait(id_full_bar(n & 1), (u32)(n >> 1) & 1u);
          const int t = ld_shared_s32(id_slot(n & 1));
          mbar_arrive(id_empty_bar(n & 1));
          return t;
        } else {
          return next_tile(slot);
        }
      };
      for (int ti = producer_next(0); ti < num_tiles; ti = producer_next(tiles + 1), ++tiles) {
        const Tile tile = tile_at(ti);
        const int kv_head = tile.head / (p.heads_q / p.heads_kv);
        // Paged: this warp's blocks are those of its stages, from `first` on. The first warp
        // loads every tile's Q, in order (with Q from several warps, a warp a tile ahead could
        // wait on a Q buffer's empty barrier two phases behind and pass on a stale parity):
        // after its first K block when it owns the tile's first, else before its first block.
        // (The Q load is not a lambda shared with the loop's: one changed the code ptxas made for
        // dense kernels.)
        constexpr int kStride = kPagedKv ? kLoadWarps : 1;
        const int first = kPagedKv ? ((lw - kv) % kStride + kStride) % kStride : 0;
        if constexpr (kPagedKv) {
          if (loads_q && leader && first != 0 && tile.n_blocks > 0) {
            const int qb = q_buf(tiles);
            mbar_wait(q_empty_bar(qb), q_phase(tiles) ^ 1u);
            mbar_expect_tx(q_full_bar(qb), kQBytes);
            load_q_tile(sQ + qb * kQBytes, &p.tmap_q, tile.head, tile.q_row + tile.m0, tile.tb, q_full_bar(qb));
          }
        }
        for (int it = first; it < tile.n_blocks; it += kStride) {
          const int kvi = kPagedKv ? kv + it : kv;  // the block's number in the ring
          const int s = kvi % kStages;
          const u32 phase = (u32)(kvi / kStages) & 1u;
          const int n0 = (tile.n_blocks - 1 - it) * kBlockN;
          // Paged: this lane's box of the block (keys n0 + lane * 2^box_shift on): its page,
          // read before the waits (page 0 past the sequence's keys: no table entry read there).
          // Its row and liveness are recomputed where used (the producer has 24 registers).
          int page = 0;
          if constexpr (kPagedKv) {
            const int key = n0 + (lane << p.box_shift);
            if (lane < (kBlockN >> p.box_shift) && key < tile.nk)
              page = p.block_table != nullptr
                         ? p.block_table[(i64)tile.batch * p.block_table_stride + (key >> p.block_shift)]
                         : tile.batch;
          }
          auto load_kv = [&](u32 dst, const FtTensorMap* map, u32 bar) {
            if constexpr (kPagedKv) {
              __syncwarp();  // the leader's expect_tx first
              const int key = n0 + (lane << p.box_shift);
              if (lane < (kBlockN >> p.box_shift)) {
                const int row = key < tile.nk ? key & ((1 << p.block_shift) - 1) : 0;
#pragma unroll
                for (int c = 0; c < kChunks; ++c)
                  tma_load_4d(dst + c * kKVChunkBytes + ((u32)lane << p.box_shift) * 128u, map, c * 64, kv_head, row,
                              page, bar);
              }
            } else {
#pragma unroll
              for (int c = 0; c < kChunks; ++c)
                tma_load_4d(dst + c * kKVChunkBytes, map, c * 64, kv_head, tile.k_row + n0, tile.tb, bar);
            }
          };
          mbar_wait(bar_k_empty(s), phase ^ 1u);
          if (leader) mbar_expect_tx(bar_k_full(s), kKVBytes);
          load_kv(sK + s * kKVBytes, &p.tmap_k, bar_k_full(s));
          // The arrivals of the warps that skip this block (unseen_blocks), for this use of the
          // buffers: the waits on the empty barriers have seen their previous use released.
          // In a split tail: every warpgroup but the block's owner.
          int skipping = split_tile(tile) ? 4 * (kConsumerWarpgroups - 1) : 0;
          if (kConsumerWarpgroups > 1 && !split_tile(tile)) {
#pragma unroll
            for (int c = 0; c < kConsumerWarpgroups; ++c) skipping += it < unseen_blocks(tile, c) ? 4 : 0;
          }
          if (leader && skipping > 0) mbar_arrive_count(bar_k_empty(s), skipping);
          if (loads_q && leader && it == 0) {
            // Q after the first K block, so that K already streams in while the previous
            // tile's O still occupies the Q buffer.
            const int qb = q_buf(tiles);
            mbar_wait(q_empty_bar(qb), q_phase(tiles) ^ 1u);
            mbar_expect_tx(q_full_bar(qb), kQBytes);
            load_q_tile(sQ + qb * kQBytes, &p.tmap_q, tile.head, tile.q_row + tile.m0, tile.tb, q_full_bar(qb));
          }
          mbar_wait(bar_v_empty(s), phase ^ 1u);
          // Paged: a sequence's last block with rows past its keys lands on the raw barrier,
          // for the zeroing warp.
          const u32 v_bar = kPagedKv && it == 0 && v_tail_rows(tile.n_blocks, tile.nk) < kBlockN ? bar_v_raw(s)
                                                                                                : bar_v_full(s);
          if (leader) mbar_expect_tx(v_bar, kKVBytes);
          load_kv(sV + s * kKVBytes, &p.tmap_v, v_bar);
          if (leader && skipping > 0) mbar_arrive_count(bar_v_empty(s), skipping);
          if constexpr (!kPagedKv) ++kv;
        }
        if constexpr (kPagedKv) kv += tile.n_blocks;
        // A tile with no visible key loads nothing, but its O (zeros) still goes through the Q
        // buffer: hand the buffer over all the same, so that q_full and q_empty advance one
        // phase per tile on both sides (a side two phases ahead would alias the parity).
        if (loads_q && leader && tile.n_blocks == 0) {
          mbar_wait(q_empty_bar(q_buf(tiles)), q_phase(tiles) ^ 1u);
          mbar_arrive(q_full_bar(q_buf(tiles)));
        }
      }
    } else if (kTileClaims && !kPagedKv && tid == 32) {
      // Claimed tiles, dense K/V: the scheduler is the producer warpgroup's second warp (idle
      // there), one thread, handing each id to the loading thread and the consumers.
      int slot = 0;  // next_tile's
      for (int n = 0;; ++n) {
        const int t = claim_next(slot);
        publish_id(n, t);
        if (t >= num_tiles) break;
      }
    } else if (kPagedKv && pwarp == 1) {
      // Paged: the zeroing warp. For each tile of this block whose last K/V block (its first
      // visited) holds rows past the sequence's keys, wait for that block's V on the raw barrier,
      // zero those rows of every chunk (whole 128-byte rows: the swizzle permutes within a row),
      // and complete the block's full barrier for the consumers. A stage's raw barrier is reused
      // only after its consumers released the block, which they read after this arrival.
      int slot = 0;
      int kv = 0;
      u32 raw_phases = 0;  // bit s: the parity of stage s's next raw phase
      auto zero_tail = [&](int ti) {
        const Tile tile = tile_at(ti);
        const int rows = tile.n_blocks > 0 ? v_tail_rows(tile.n_blocks, tile.nk) : kBlockN;
        if (rows < kBlockN) {
          const int s = kv % kStages;
          mbar_wait(bar_v_raw(s), (raw_phases >> s) & 1u);
          raw_phases ^= 1u << s;
          const u32 past = sV + s * kKVBytes + (u32)rows * 128u;
          const int units = (kBlockN - rows) * 8;  // 16-byte units past the keys, per chunk
#pragma unroll
          for (int c = 0; c < kChunks; ++c)
            for (int u = lane; u < units; u += 32)
              asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(past + c * kKVChunkBytes + u * 16u),
                           "r"(0)
                           : "memory");
          fence_proxy_async_shared();
          __syncwarp();
          if (lane == 0) mbar_arrive(bar_v_full(s));
        }
        kv += tile.n_blocks;
      };
      if constexpr (kTileClaims) {
        // Claimed tiles: this warp is the scheduler too. Lane 0 claims and publishes tile n, then
        // the warp zeroes tile n-1's tail: publishing n waits only on the readers of tile n-2,
        // and zeroing n-1 only on its first V block, which the load warps issue once they have
        // read n-1, so nothing waits in a circle.
        for (int n = 0, prev = num_tiles;; ++n) {
          int t = 0;
          if (lane == 0) {
            t = claim_next(slot);
            publish_id(n, t);
          }
          t = __shfl_sync(0xffffffffu, t, 0);
          if (prev < num_tiles) zero_tail(prev);
          if (t >= num_tiles) break;
          prev = t;
        }
      } else {
        for (int ti = next_tile(slot); ti < num_tiles; ti = next_tile(slot)) zero_tail(ti);
      }
    }
  } else {
    // ---- consumers --------------------------------------------------------------------------
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kConsumerRegs));
    const int cw = warpgroup - 1;
    const int wtid = tid % 128;
    const int warp = wtid / 32;  // within the warpgroup: owns rows 16*warp .. 16*warp+15
    const int lane = tid % 32;
    const int g = lane / 4;
    const int t = lane % 4;
    // This warpgroup's rows of each Q chunk, in the current tile's Q buffer.
    u32 sQw = sQ + cw * kRowsPerWarpgroup * 128;
    const float scale_log2 = p.scale_log2;

    float acc_o[kHeadDimO / 2];
    float row_max[2];  // running max of scores, times scale*log2(e)
    float row_sum[2];  // this thread's share of the row sums
    int warp_row0 = 0;  // this warp's first query row in the current tile
    int Nk = 0, diag = 0;  // the current tile's sequence: keys, and query i sees keys j <= i + diag

    // One arrival per warp on an "empty" barrier once the warp's wgmmas have read the buffer.
    auto release = [&](u32 bar) {
      __syncwarp();
      if (lane == 0) mbar_arrive(bar);
    };

    // Masks scores of block `n_block` (keys past seqlen_k; causal) and runs the online
    // softmax step: s becomes exp2(s * scale - m) in place; `correction` rescales O.
    auto softmax = [&](float (&s)[kBlockN / 2], int n_block, float (&correction)[2]) {
      const int n0 = n_block * kBlockN;
      if (n0 + kBlockN > Nk || (kCausal && n0 + kBlockN - 1 > warp_row0 + diag)) {
#pragma unroll
        for (int i = 0; i < kBlockN / 8; ++i)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int row = warp_row0 + g + (e >= 2 ? 8 : 0);
            const int col = n0 + i * 8 + 2 * t + (e & 1);
            if (col >= Nk || (kCausal && col > row + diag)) s[4 * i + e] = kNegInf;
          }
      }
      // Row max and row sum over this thread's kBlockN / 4 scores of each row, with four
      // independent partial results so the reductions are not one long dependent chain.
      constexpr int kParts = kBlockN / 8 >= 4 ? 4 : kBlockN / 8;
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float part[kParts];
#pragma unroll
        for (int j = 0; j < kParts; ++j) part[j] = kNegInf;
#pragma unroll
        for (int i = 0; i < kBlockN / 8; ++i)
          part[i % kParts] = fmaxf(part[i % kParts], fmaxf(s[4 * i + 2 * r], s[4 * i + 2 * r + 1]));
        float mx = part[0];
#pragma unroll
        for (int j = 1; j < kParts; ++j) mx = fmaxf(mx, part[j]);
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        float m_base;
        if constexpr (kRescaleT > 0) {
          // The max moves only by more than T (-inf + T is -inf: a row's first visible key sets it).
          if (mx * scale_log2 > row_max[r] + float(kRescaleT)) {
            correction[r] = fast_exp2(row_max[r] - mx * scale_log2);
            row_max[r] = mx * scale_log2;
          } else {
            correction[r] = 1.f;
          }
          m_base = row_max[r] == kNegInf ? 0.f : row_max[r];
        } else {
          const float m_new = fmaxf(row_max[r], mx * scale_log2);
          // A row with no visible key yet keeps m = -inf; subtracting 0 keeps exp2 at 0, not NaN.
          m_base = m_new == kNegInf ? 0.f : m_new;
          correction[r] = fast_exp2(row_max[r] - m_base);
          row_max[r] = m_new;
        }
#pragma unroll
        for (int j = 0; j < kParts; ++j) part[j] = 0.f;
#pragma unroll
        for (int i = 0; i < kBlockN / 8; ++i) {
          s[4 * i + 2 * r] = fast_exp2(fmaf(s[4 * i + 2 * r], scale_log2, -m_base));
          s[4 * i + 2 * r + 1] = fast_exp2(fmaf(s[4 * i + 2 * r + 1], scale_log2, -m_base));
          part[i % kParts] += s[4 * i + 2 * r] + s[4 * i + 2 * r + 1];
        }
        float sum = part[0];
#pragma unroll
        for (int j = 1; j < kParts; ++j) sum += part[j];
        row_sum[r] = row_sum[r] * correction[r] + sum;
      }
    };
    // P in the wgmma A-operand register layout: k-step kk covers S columns 16kk..16kk+15.
    auto to_p = [&](const float (&s)[kBlockN / 2], u32 (&pf)[kBlockN / 16][4]) {
#pragma unroll
      for (int kk = 0; kk < kBlockN / 16; ++kk) {
        pf[kk][0] = pack2(s[8 * kk + 0], s[8 * kk + 1]);
        pf[kk][1] = pack2(s[8 * kk + 2], s[8 * kk + 3]);
        pf[kk][2] = pack2(s[8 * kk + 4], s[8 * kk + 5]);
        pf[kk][3] = pack2(s[8 * kk + 6], s[8 * kk + 7]);
      }
    };
    auto rescale_o = [&](const float (&correction)[2]) {
      if ((FT_HOPPER_LAZY_RESCALE || kRescaleT > 0) && !__any_sync(0xffffffffu, correction[0] != 1.f || correction[1] != 1.f)) return;
#pragma unroll
      for (int i = 0; i < kHeadDimO / 8; ++i) {
        acc_o[4 * i + 0] *= correction[0];
        acc_o[4 * i + 1] *= correction[0];
        acc_o[4 * i + 2] *= correction[1];
        acc_o[4 * i + 3] *= correction[1];
      }
    };

    // Ping-pong turns: a warpgroup waits for its turn before issuing wgmmas and passes the turn
    // on right after; every warpgroup has the same number of issue phases. The last warpgroup
    // opens the ring once, and the first one takes that extra turn at the very end, so every
    // barrier sees as many arrivals as waits.
    auto turn_wait = [&]() {
      if constexpr (kPingPong) named_barrier_sync(kTurnBarrier + cw, 256);
    };
    auto turn_pass = [&]() {
      if constexpr (kPingPong) named_barrier_arrive(kTurnBarrier + (cw + 1) % kConsumerWarpgroups, 256);
    };
    if constexpr (kPingPong) {
      if (cw == kConsumerWarpgroups - 1) named_barrier_arrive(kTurnBarrier, 256);
    }

    // The K/V block at ring position j (blocks consumed by this block so far): slot j % kStages,
    // filled in phase (j / kStages) & 1, as the producer counts. issue_* wait for the block's
    // TMA bytes and issue its wgmmas (the caller holds the turn); *_landed follow the wgmma wait
    // that retired them and hand the buffer back to the producer.
    auto issue_qk = [&](float (&s_acc)[kBlockN / 2], int j) {
      mbar_wait(bar_k_full(j % kStages), (u32)(j / kStages) & 1u);
      wgmma_fence();
      gemm_qk(s_acc, sQw, sK + (j % kStages) * kKVBytes);
      wgmma_commit();
    };
    // Two commit groups: keys [0, kSplitN0) of the block, then the rest.
    auto issue_qk_split = [&](float (&s_acc)[kBlockN / 2], int j) {
      mbar_wait(bar_k_full(j % kStages), (u32)(j / kStages) & 1u);
      const u32 k_addr = sK + (j % kStages) * kKVBytes;
      float(&lo)[kSplitN0 / 2] = *reinterpret_cast<float(*)[kSplitN0 / 2]>(&s_acc[0]);
      float(&hi)[kSplitN1 / 2] = *reinterpret_cast<float(*)[kSplitN1 / 2]>(&s_acc[kSplitN0 / 2]);
      wgmma_fence();
      gemm_qk_part<kSplitN0, 0>(lo, sQw, k_addr);
      wgmma_commit();
      gemm_qk_part<kSplitN1, kSplitN0>(hi, sQw, k_addr);
      wgmma_commit();
    };
    auto issue_pv = [&](const u32 (&pf)[kBlockN / 16][4], int j, bool fence) {
      mbar_wait(bar_v_full(j % kStages), (u32)(j / kStages) & 1u);
      if (fence) wgmma_fence();
      gemm_pv(acc_o, pf, sV + (j % kStages) * kKVBytes);
      wgmma_commit();
    };
    auto s_landed = [&](float (&s_acc)[kBlockN / 2], int j) {
      fence_regs(s_acc);
      release(bar_k_empty(j % kStages));
    };
    auto o_landed = [&](int j) {
      fence_regs(acc_o);
      release(bar_v_empty(j % kStages));
    };

    // Two Q buffers: the previous tile's O store is still reading its buffer when this tile
    // starts. Its issuing thread waits for that read only once this tile's first wgmmas are
    // issued, and then hands the buffer back (with one Q buffer the epilogue waits at once: the
    // producer needs the buffer for the very next tile).
    bool store_pending = false;  // wtid 0: the previous tile's TMA store may still read its buffer
    auto release_previous_q = [&](int tiles) {
      if constexpr (kQBuffers > 1) {
        if (store_pending) {
          tma_store_wait_read();
          mbar_arrive(q_empty_bar(q_buf(tiles - 1)));
          store_pending = false;
        }
      }
    };

    // The epilogue of a tile, in two parts. pack_o: lse, and O / rowsum as 16-bit pairs in
    // registers (element pair i of row half r in o_out[2 * i + r]). store_o (tile number tile_no):
    // those into this warpgroup's rows of the tile's Q buffer (TMA 128-byte swizzle: 16-byte unit j
    // of row r sits at unit j ^ (r % 8)), then one TMA store per 64 columns.
    // lse: dense [B, Hq, Nq]; varlen [Hq, total_q].
    auto pack_o = [&](const Tile& tile, u32 (&o_out)[kHeadDimO / 4]) {
      const int row0 = tile.m0 + cw * kRowsPerWarpgroup + warp * 16;  // this warp's first row
      float* lse = p.lse == nullptr ? nullptr
                   : varlen       ? p.lse + (i64)tile.head * p.total_q + tile.q_row
                                  : p.lse + ((i64)tile.batch * p.heads_q + tile.head) * Nq;
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float sum = row_sum[r];
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        sum += __shfl_xor_sync(0xffffffffu, sum, 2);
        const float inv = sum > 0.f ? 1.f / sum : 0.f;
        const int row = row0 + g + 8 * r;
        if (lse != nullptr && t == 0 && row < tile.nq)
          lse[row] = sum > 0.f ? (row_max[r] + fast_log2(sum)) * 0.69314718055994531f : kNegInf;
#pragma unroll
        for (int i = 0; i < kHeadDimO / 8; ++i)
          o_out[2 * i + r] = pack2(acc_o[4 * i + 2 * r] * inv, acc_o[4 * i + 2 * r + 1] * inv);
      }
    };
    auto store_o = [&](const Tile& tile, int tile_no, const u32 (&o_in)[kHeadDimO / 4]) {
      const u32 sQt = sQ + q_buf(tile_no) * kQBytes + cw * kRowsPerWarpgroup * 128;
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int local_row = warp * 16 + g + 8 * r;  // within the warpgroup's 64 rows
#pragma unroll
        for (int i = 0; i < kHeadDimO / 8; ++i) {
          const u32 addr = sQt + (i / 8) * kQChunkBytes + local_row * 128 + (((i % 8) ^ (local_row % 8)) * 16) + t * 4;
          asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(addr), "r"(o_in[2 * i + r]) : "memory");
        }
      }
      fence_proxy_async_shared();
      named_barrier_sync(1 + cw, 128);
      const int wg_row0 = tile.m0 + cw * kRowsPerWarpgroup;
      if (!varlen || wg_row0 + kRowsPerWarpgroup <= tile.nq) {
        // TMA clips rows past the tensor's end, which in a dense tensor is the sequence's end.
        if (wtid == 0) {
#pragma unroll
          for (int c = 0; c < kChunks; ++c)
            tma_store_4d(&p.tmap_o, sQt + c * kQChunkBytes, c * 64, tile.head, tile.q_row + wg_row0, tile.tb);
          if constexpr (kQBuffers > 1) {
            tma_store_commit();  // released by release_previous_q, or after the loop
            store_pending = true;
          } else {
            tma_store_commit_and_wait_read();
            mbar_arrive(q_empty_bar(q_buf(tile_no)));  // this warpgroup's rows of the Q buffer may be refilled
          }
        }
      } else {
        // Varlen rows past the sequence's end belong to the next sequence: the warpgroup
        // stores its rows below nq itself, 16 bytes a thread, un-swizzling as it reads.
        unsigned short* o = static_cast<unsigned short*>(p.o) + (i64)tile.head * p.o_stride[2];
        constexpr int kUnits = kHeadDimData / 8;  // 16-byte units per row of o
        for (int c = wtid; c < kRowsPerWarpgroup * kUnits; c += 128) {
          const int r = c / kUnits, u = c % kUnits;
          if (wg_row0 + r >= tile.nq) break;  // rows ascend with c
          const u32 addr = sQt + (u / 8) * kQChunkBytes + r * 128 + (((u % 8) ^ (r % 8)) * 16);
          uint4 chunk;
          asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                       : "=r"(chunk.x), "=r"(chunk.y), "=r"(chunk.z), "=r"(chunk.w) : "r"(addr));
          *reinterpret_cast<uint4*>(o + (i64)(tile.q_row + wg_row0 + r) * p.o_stride[1] + u * 8) = chunk;
        }
        named_barrier_sync(1 + cw, 128);  // every thread has read its rows of the buffer
        if (wtid == 0) mbar_arrive(q_empty_bar(q_buf(tile_no)));
      }
    };

    // The split tail's merge: the other warpgroups leave their partial O, row maxima and
    // (per-thread) row sums in the merge buffer; the first one rescales its own and theirs to
    // the larger max and adds them up, exactly as the online softmax would have (with the
    // thresholded rescale too: each partial is relative to its own max). A partial that saw no
    // key (max -inf) weighs 0.
    auto merge_split = [&]() {
      if (__shfl_sync(0xffffffffu, cw, 0) > 0) {  // warp-uniform for ptxas, as below
        const u32 at = sMerge + (cw - 1) * kMergeWgBytes + wtid * 4;
#pragma unroll
        for (int i = 0; i < kHeadDimO / 2; ++i) st_shared_f32(at + i * 512, acc_o[i]);
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          st_shared_f32(at + (kHeadDim / 2 + r) * 512, row_max[r]);
          st_shared_f32(at + (kHeadDim / 2 + 2 + r) * 512, row_sum[r]);
        }
        named_barrier_arrive(kMergeFullBarrier, 128 * kConsumerWarpgroups);
        named_barrier_sync(kMergeFreeBarrier, 128 * kConsumerWarpgroups);  // the buffer is read
        return;
      }
      named_barrier_sync(kMergeFullBarrier, 128 * kConsumerWarpgroups);
#pragma unroll 1
      for (int w = 1; w < kConsumerWarpgroups; ++w) {
        const u32 at = sMerge + (w - 1) * kMergeWgBytes + wtid * 4;
        float own[2], other[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const float m_other = ld_shared_f32(at + (kHeadDim / 2 + r) * 512);
          const float m = fmaxf(row_max[r], m_other);
          const float base = m == kNegInf ? 0.f : m;  // no key on either side: both weigh 0
          own[r] = fast_exp2(row_max[r] - base);
          other[r] = fast_exp2(m_other - base);
          row_sum[r] = row_sum[r] * own[r] + ld_shared_f32(at + (kHeadDim / 2 + 2 + r) * 512) * other[r];
          row_max[r] = m;
        }
#pragma unroll
        for (int i = 0; i < kHeadDimO / 2; ++i) {
          const int r = (i % 4) / 2;
          acc_o[i] = acc_o[i] * own[r] + ld_shared_f32(at + i * 512) * other[r];
        }
      }
      named_barrier_arrive(kMergeFreeBarrier, 128 * kConsumerWarpgroups);
    };

    int slot = 0;   // next_tile's
    int kv = 0;     // K/V blocks consumed so far (ring slot and phase, as in the producer)
    int tiles = 0;  // tiles of this block so far (q_full phase)
    // Claimed tiles: tile number n's id from the scheduler warp (lane 0 reads it and the warp
    // takes it by shuffle: ptxas then knows it warp-uniform, see C7520 below).
    auto consumer_next = [&](int n) {
      if constexpr (kTileClaims) {
        mbar_wait(id_full_bar(n & 1), (u32)(n >> 1) & 1u);
        const int t = __shfl_sync(0xffffffffu, lane == 0 ? ld_shared_s32(id_slot(n & 1)) : 0, 0);
        if (lane == 0) mbar_arrive(id_empty_bar(n & 1));
        return t;
      } else {
        return next_tile(slot);
      }
    };
    for (int ti = consumer_next(0); ti < num_tiles; ti = consumer_next(tiles + 1), ++tiles) {
      const Tile tile = tile_at(ti);
      const bool split = split_tile(tile);  // all warpgroups work on the first one's rows
      // The blocks no row of this warpgroup sees are skipped (unseen_blocks; the producer
      // arrives for them); the schedules below run on the others, n_blocks of them from ring
      // position kv, block n_blocks - 1 first. With ping-pong a skipped block's issue turns are
      // taken empty, and a warpgroup that skips every block takes the last P V's turn too, so
      // that every warpgroup takes as many turns per tile. (The count is broadcast from lane 0:
      // it is the warpgroup's, but ptxas cannot tell, and a wgmma loop whose trip count might
      // differ within a warp gets every wgmma serialised, C7520.)
      const int skip = kConsumerWarpgroups > 1 && !split ? __shfl_sync(0xffffffffu, unseen_blocks(tile, cw), 0) : 0;
      const int n_blocks = tile.n_blocks - skip;
      if (kPingPong && !split) {
        const int empty_turns = kOverlap ? skip + (skip > 0 && n_blocks == 0 ? 1 : 0) : 2 * skip;
#pragma unroll 1
        for (int i = 0; i < empty_turns; ++i) {
          turn_wait();
          turn_pass();
        }
      }
      kv += skip;
      const int row_wg = split ? 0 : cw;  // the warpgroup whose rows this one computes
      sQw = sQ + q_buf(tiles) * kQBytes + row_wg * kRowsPerWarpgroup * 128;
      mbar_wait(q_full_bar(q_buf(tiles)), q_phase(tiles));  // Q loaded (or, without keys, the buffer handed over)
      warp_row0 = tile.m0 + row_wg * kRowsPerWarpgroup + warp * 16;
      Nk = tile.nk;
      diag = tile.diag;
#pragma unroll
      for (int i = 0; i < kHeadDimO / 2; ++i) acc_o[i] = 0.f;
      row_max[0] = row_max[1] = kNegInf;
      row_sum[0] = row_sum[1] = 0.f;

      if (split || (n_blocks > 0 && !kOverlap)) {
        // Each block in turn: S, softmax, rescale, P V, with an issue turn for S and one for
        // P V. Without the overlap every block of the tile; in a split tail every
        // kConsumerWarpgroups-th from this warpgroup's index (block kv + it is warpgroup
        // it % kConsumerWarpgroups's; the producer makes the others' arrivals for it), on the
        // first warpgroup's rows. The turns go round the warpgroups in block order, so every
        // block's S turn comes after those of the blocks before it, each of which waited for
        // its block to land: a block's "full" parity is never read while the slot's previous
        // use is still in flight (the skips above rely on the same). A warpgroup with fewer
        // blocks of a split tail than the first takes its last two turns empty. (A split
        // warpgroup loops over its own blocks, not over all with a test for them: ptxas
        // serialises wgmma under a branch it cannot prove warp-uniform, C7520.)
        const int first = split ? __shfl_sync(0xffffffffu, cw, 0) : 0;
        const int step = split ? kConsumerWarpgroups : 1;
#pragma unroll 1
        for (int it = first; it < n_blocks; it += step) {
          float acc_s[kBlockN / 2];
          u32 p_frag[kBlockN / 16][4];
          float correction[2];
          const int j = kv + it;
          turn_wait();
          if constexpr (kSplitS)
            issue_qk_split(acc_s, j);
          else
            issue_qk(acc_s, j);
          turn_pass();
          if (!split && it == 0) release_previous_q(tiles);  // (a split tail's: after its loop)
          wgmma_wait<0>();
          s_landed(acc_s, j);
          softmax(acc_s, n_blocks - 1 - it, correction);
          rescale_o(correction);
          to_p(acc_s, p_frag);
          turn_wait();
          issue_pv(p_frag, j, true);
          turn_pass();
          wgmma_wait<0>();
          o_landed(j);
        }
        if (split && first > 0 && (n_blocks - 1) % kConsumerWarpgroups < first) {
          turn_wait();
          turn_pass();
          turn_wait();
          turn_pass();
        }
      } else if (n_blocks > 0) {
        float acc_s[kBlockN / 2];
        u32 p_frag[kBlockN / 16][4];
        float correction[2];
        // Block 0 (the last K/V block): S, softmax, P.
        turn_wait();
        issue_qk(acc_s, kv);
        turn_pass();
        release_previous_q(tiles);
        wgmma_wait<0>();
        s_landed(acc_s, kv);
        softmax(acc_s, n_blocks - 1, correction);
        to_p(acc_s, p_frag);
        // Steady state: S of block it runs on the tensor cores with P V of block it-1.
        for (int it = 1; it < n_blocks; ++it) {
          turn_wait();
          issue_qk(acc_s, kv + it);
          issue_pv(p_frag, kv + it - 1, false);  // one fence covers both
          turn_pass();
          wgmma_wait<1>();
          s_landed(acc_s, kv + it);
          softmax(acc_s, n_blocks - 1 - it, correction);
          wgmma_wait<0>();
          o_landed(kv + it - 1);
          rescale_o(correction);
          to_p(acc_s, p_frag);
        }
        turn_wait();
        issue_pv(p_frag, kv + n_blocks - 1, true);
        turn_pass();
        wgmma_wait<0>();
        o_landed(kv + n_blocks - 1);
      }
      kv += n_blocks;  // both schedules: the ring's slots and phases run on into the next tile
      release_previous_q(tiles);  // (a tile without keys issued no wgmma)
      if (split) merge_split();
      u32 o_packed[kHeadDimO / 4];
      pack_o(tile, o_packed);
      store_o(tile, tiles, o_packed);

#if FT_HOPPER_SYNCWARP_TILE
      __syncwarp();
#endif
    }
    // The last store must have read shared memory before the block exits (no arrival: the
    // producer loads no further Q).
    if constexpr (kQBuffers > 1) {
      if (store_pending) tma_store_wait_read();
    }
    if constexpr (kPingPong) {
      if (cw == 0) turn_wait();  // the ring's opening arrival
    }
  }
}
