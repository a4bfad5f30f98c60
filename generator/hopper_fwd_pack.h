// generator/hopper_fwd_pack.h (private) — host side of templates/hopper_fwd.cuh: the variant's
// parameters, its prologue and shared-memory size, and the packing of one forward call into
// the kernel's launch geometry, tensor maps and parameter struct.
//
// The kernel (sm_90a only) reads Q, K, V through TMA tensor maps and writes O through one:
// each 16-bit tensor [B, N, H, D] with the call's strides is described as a rank-4 tiled map
// {D, H, N, B} (dimension 0 contiguous; byte strides {head, seq, batch}), 128-byte swizzle,
// a box of 64 columns x 1 head x rows x 1 batch, out-of-bounds rows read as zero. A varlen
// call's packed tensors [total, H, D] are maps of one batch {D, H, total, 1}; the kernel
// addresses each sequence's rows from cu_seqlens. Tensor maps
// embed the base pointer: a call's maps are described here (TensorMapRequest) and encoded by
// the JIT layer just before the launch (EncodeTensorMaps in flashtune/kernel.h, which reuses
// the maps of earlier calls on the same tensors).
//
// Generator layer: no driver, tuner, runtime or database; the hopper_fwd family
// (generator/families/hopper_fwd.cpp) wraps these functions.
// Thread safety: pure functions of their arguments.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "flashtune/forward_args.h"
#include "flashtune/status.h"
#include "flashtune/variant.h"
#include "generator/launch_packet.h"
#include "templates/ft_kernel_abi.cuh"

namespace flashtune::detail {

// Every compile-time parameter of templates/hopper_fwd.cuh.
struct HopperConfig {
  DType dtype = DType::kBF16;
  int head_dim = 128;    // the tensors': a multiple of 32 in [64, 256] (HopperTileHeadDim)
  bool causal = false;
  int block_m = 128;     // query rows per thread block = 64 * consumer_wgs
  int block_n = 128;     // keys per K/V block: a multiple of 16 in [16, 256]
  int consumer_wgs = 2;  // consumer warpgroups (1..3); one producer warpgroup besides
  int stages = 2;        // K/V shared-memory ring depth (2..4)
  bool persistent = false;  // grid of at most one block per SM, each looping over tiles
  bool pingpong = true;     // consumer warpgroups take turns issuing wgmma (no effect with one)
  bool overlap = true;      // S of block j+1 issued before P V of block j
  int q_buffers = 1;        // 2 (persistent only): the next tile's Q loads into a second buffer
  bool paged = false;       // K/V from a paged cache (the hopper_paged family; the template's kPagedKv)
  // Tiles claimed at run time from a counter in the call's workspace (p3: persistent, two Q
  // buffers, dense K/V; packed sequences only; the template's kClaimTiles, HopperTileClaims).
  bool claims = false;
  bool operator==(const HopperConfig&) const = default;
};

// The template's kernel-parameter struct: one declaration with it (templates/ft_kernel_abi.cuh).
using HopperTensorMap = ft_abi::TensorMap;
using HopperParams = ft_abi::HopperParams;

// The head dim of the kernel's tiles: head_dim rounded up to a multiple of 64 (whole 128-byte
// swizzle atoms). At 96, 160 and 224 the tensor maps describe the tensors' head_dim columns and
// their boxes read the rest as zeros: S skips those k-steps, P V and O run at head_dim columns
// (the wgmma's N; the O store's box drops the rest); shared memory and the register budget are
// the tile's.
int HopperTileHeadDim(const HopperConfig& config);

// "hopper_fwd_bf16_d128_bm128_bn128_wg2_s2_p0_pp1_ov1_causal" ("..._full" when not causal; p1
// for a persistent variant, p2 for one with two Q buffers, p3 for p2 claiming its tiles at run
// time (packed sequences), pp0 without ping-pong, ov0 without
// intra-warpgroup overlap): the hopper_fwd family's variant URI; "hopper_paged_..." for a paged
// config (the hopper_paged family: the same parameters).
std::string HopperUri(const HopperConfig& config);
// OK when the template accepts `config` (the rules its static_asserts enforce, and shared
// memory within `max_smem_bytes`); else kInvalidArgument naming the parameter.
Status CheckHopperConfig(const HopperConfig& config, int64_t max_smem_bytes = 232448);
// Whether the template splits a tail tile (its kSplitTail): with two or more consumer warpgroups
// taking ping-pong turns (the turns keep the split blocks in ring order), a tile whose rows all lie in its first warpgroup (a sequence's last tile of at most 64 rows)
// deals its K/V blocks among all of them and merges their partial results through a shared
// buffer ((consumer_wgs - 1) * (head_dim / 2 + 4) * 512 bytes), where that buffer fits beside the
// rest within 227 KB. (With the persistent rounds rotated so short tiles spread over the
// blocks, it took d64 192x128 at N 1k to 0.95x the time; alone it bought nothing: session 31.)
bool HopperSplitTail(const HopperConfig& config);
// Whether the kernel takes its tiles from a counter at run time (config.claims, the template's
// kTileClaims: p3), the counter in the call's workspace (kHopperClaimWorkspaceBytes), zeroed by
// the launch; a call without that workspace, whose sequences are all the longest, or too small
// to repay the counter's memset (HopperClaimsRepay) gets the static deal. For packed sequences:
// their lengths are on the device, and the static deal, which assumes every sequence is the
// longest, left the blocks that drew the long sequences' tiles with up to 1.6x the mean work
// (ft_tile_schedule.cuh's claim_tile has the claims' order).
bool HopperTileClaims(const HopperConfig& config);
// Whether a packed call of `total_q` query rows in `batch` sequences over `heads_q` heads, on a
// persistent grid of `blocks`, has enough tiles for claims to beat the static deal: at least
// kHopperClaimMinTilesPerBlock a block, counting ceil(rows / block_m) tiles a sequence and head
// (an upper bound; the lengths are on the device). The memset before the kernel costs about 2 us
// of the GPU's timeline; claims took 0.97-1.40x the static deal's time at 2-8 short sequences (at
// most 4.9 tiles a block) and 0.80-0.98x from 16 (9-14 tiles a block) on (session 50, H100).
inline constexpr int64_t kHopperClaimMinTilesPerBlock = 8;
bool HopperClaimsRepay(const HopperConfig& config, int64_t total_q, int64_t batch, int64_t heads_q, int64_t blocks);
// The workspace a call with claimed tiles uses (Family::WorkspaceWanted): the counter, in a
// 16-byte slot.
constexpr int64_t kHopperClaimWorkspaceBytes = 16;
// Dynamic shared memory the template needs (its kSmemBytes): 1 KB alignment slack, the Q
// tile(s), `stages` K and V tiles, the split tail's merge buffer (HopperSplitTail), and the
// mbarriers (2 per Q buffer + 4 * stages, + stages V "raw" barriers when paged, + 4 barriers
// and 2 ids with claimed tiles).
int64_t HopperSmemBytes(const HopperConfig& config);
// Threads per block: 128 per consumer warpgroup plus a producer warpgroup.
int HopperThreads(const HopperConfig& config);
// Blocks per SM the kernel is built for (its launch bounds; the template's kBlocksPerSm): one
// with two or three consumer warpgroups; with one, the most of 4 and 3 for which the
// accumulators fit the registers that share of the register file leaves a consumer thread
// (104, 136), S and O fit the launch bound's registers (64, 80: what ptxas compiles the S
// wgmma in), and that many blocks' shared memory fits an SM, else two.
int HopperBlocksPerSm(const HopperConfig& config);
// Registers per consumer thread after setmaxnreg (the producer keeps 24; with claimed tiles 32
// where the consumers lose nothing by it): 240 (two consumer warpgroups), 160 (three), 232, 136
// or 104 (one, at two, three or four blocks per SM).
int HopperConsumerRegs(const HopperConfig& config);
// The template's kRescaleThreshold: 8 (a row's running max moves only by more than 2^8, so the
// O rescale is skipped on almost every block) where it measured faster: d256, and three consumer
// warpgroups at d64 and d128; else 0 (the max follows every block).
int HopperRescaleThreshold(const HopperConfig& config);
// The constexpr prologue the template expects, with FT_KERNEL_NAME `uri`.
std::string HopperPrologue(const HopperConfig& config, const std::string& uri);

// OK when the kernel compiled for `config` can serve `args`: ValidateForwardArgs passes, the
// dtype, head dim and causal flag match, the K/V layout is the config's (paged: a paged cache,
// or a dense one with seqlens_k; else dense or packed without seqlens_k), and TMA can describe
// every tensor (each stride of a
// dimension longer than 1 a nonzero multiple of 16 bytes below 2^40, 16-byte aligned bases).
// Else kInvalidArgument saying why, so that a caller can fall back to fa2_fwd.
Status CanServe(const HopperConfig& config, const ForwardArgs& args);
// The TMA part of CanServe alone, for callers that have validated the call and matched its
// class already (the family's CanRun, on every launch): no second ValidateForwardArgs.
// Paged pools are described as {D, Hkv, block_size, num_blocks}; a paged call also needs pages
// of 16 keys or more (a block would otherwise take up to 16 boxes of a few rows: fa2_paged
// serves those) and at most 2^31 - 1 pages (a TMA coordinate). A dense cache with seqlens_k
// (read by hopper_paged as one page a sequence) needs seqlen_k <= 2^30.
Status CheckTmaDescribable(const ForwardArgs& args);

// One 16-bit [B, N, H, D] tensor (`seqlen` rows of `heads` heads, `batch` batches, with strides
// `s` in elements) as a rank-4 TMA map {D, H, N, B} with a {64, 1, box_rows, 1} box, 128-byte
// swizzle and zero fill, written at byte `offset` of the kernel's parameters (the Hopper
// families' tensor maps: hopper_fwd's q / k / v / o, hopper_bwd's q / k / v / d_o).
TensorMapRequest HopperTensorMapFor(size_t offset, DType dtype, const void* base, const Strides& s, int64_t batch,
                                    int64_t seqlen, int64_t heads, int head_dim, int box_rows);
// OK when TMA can describe tensor `name` with strides `s` of those extents (each stride of a
// dimension longer than 1 a nonzero multiple of 8 elements below 2^39); else kInvalidArgument
// "<family>: TMA cannot describe <name>_strides.<dim> ...".
Status CheckHopperTmaStrides(std::string_view family, const char* name, const Strides& s, int64_t batch,
                             int64_t seqlen, int64_t heads);

// A paged call's K/V maps have boxes of min(block_size, the largest power of two dividing
// block_n) rows (each within one page; a block is whole boxes), and the parameters carry
// seqlens_k, the block table and the log2 of block_size and of the box rows. A paged config on
// a dense cache with seqlens_k: maps {D, Hkv, Nk, B} with boxes of the largest power of two
// dividing block_n, no table (page b for sequence b) and block_shift 30.
// Packs one call into `out`: launch geometry ({ceil(Nq / block_m), Hq, B}; persistent:
// {min(tiles, sm_count x HopperBlocksPerSm), 1, 1}, fewer per SM when shared memory holds
// fewer), dynamic shared memory, the four tensor
// maps still to encode (q, k, v, o, at their offsets in HopperParams) and the parameters. `sm_count` (the device's
// multiprocessors) sizes a persistent grid; kInvalidArgument when a persistent config gets
// none. Allocates nothing.
Status PackHopper(const HopperConfig& config, const ForwardArgs& args, int sm_count, LaunchPacket* out);
// PackHopper without the checks, for callers that made them (the family: its variant was
// checked when loaded, the call by CanServe). A persistent config with sm_count < 1 gets a grid of 1.
void FillHopperPacket(const HopperConfig& config, const ForwardArgs& args, int sm_count, LaunchPacket* out);

}  // namespace flashtune::detail
