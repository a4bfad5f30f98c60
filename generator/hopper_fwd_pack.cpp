// Host side of templates/hopper_fwd.cuh: see generator/hopper_fwd_pack.h.
#include "generator/hopper_fwd_pack.h"

#include "flashtune/arch.h"
#include "flashtune/problem_set.h"
#include "generator/prologue.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>

namespace flashtune::detail {
namespace {

Status Invalid(std::string message) { return Status(Code::kInvalidArgument, std::move(message)); }

constexpr int kRowsPerWarpgroup = 64;
constexpr int kSwizzleColumns = 64;  // 128 bytes of 16-bit elements: one swizzle atom row

}  // namespace

TensorMapRequest HopperTensorMapFor(size_t offset, DType dtype, const void* base, const Strides& s, int64_t batch,
                                    int64_t seqlen, int64_t heads, int head_dim, int box_rows) {
  TensorMapRequest m;
  m.offset = uint32_t(offset);
  m.bf16 = dtype == DType::kBF16;
  m.rank = 4;
  m.base = base;
  const uint64_t dims[4] = {uint64_t(head_dim), uint64_t(heads), uint64_t(seqlen), uint64_t(batch)};
  for (int i = 0; i < 4; ++i) m.dims[i] = dims[i];
  // A dimension of extent 1 is never stepped: any legal stride describes it.
  auto stride = [](int64_t elements, int64_t extent) { return extent == 1 ? uint64_t(16) : uint64_t(elements) * 2; };
  m.strides_bytes[0] = stride(s.head, heads);
  m.strides_bytes[1] = stride(s.seq, seqlen);
  m.strides_bytes[2] = stride(s.batch, batch);
  m.box[0] = uint32_t(kSwizzleColumns);
  m.box[1] = 1;
  m.box[2] = uint32_t(box_rows);
  m.box[3] = 1;
  m.box[4] = 1;
  m.swizzle = TensorMapRequest::Swizzle::k128B;
  m.oob_zero = true;
  m.l2_promotion = 128;
  return m;
}

Status CheckHopperTmaStrides(std::string_view family, const char* name, const Strides& s, int64_t batch,
                             int64_t seqlen, int64_t heads) {
  const struct {
    const char* dim;
    int64_t stride, extent;
  } dims[] = {{"batch", s.batch, batch}, {"seq", s.seq, seqlen}, {"head", s.head, heads}};
  for (const auto& d : dims) {
    if (d.extent == 1) continue;
    const int64_t bytes = d.stride * 2;
    if (d.stride <= 0 || bytes % 16 != 0 || bytes >= (int64_t(1) << 40))
      return Invalid(std::string(family) + ": TMA cannot describe " + name + "_strides." + d.dim + " (" +
                     std::to_string(d.stride) + " elements): it must be a nonzero multiple of 8 elements below 2^39");
  }
  return Status::Ok();
}

namespace {

// The extents the tensor maps describe (batch and rows of q / o, and of k / v): dense
// [B, N, H, D]; packed rows as one batch (at least 1 row: a map's dimensions are nonzero, and
// an empty batch loads nothing); a paged pool as num_blocks batches of block_size rows.
struct TmaExtents {
  int64_t batch_q, rows_q, batch_k, rows_k;
};
TmaExtents TmaExtentsOf(const ForwardArgs& a) {
  TmaExtents e{a.problem.batch, a.problem.seqlen_q, a.problem.batch, a.problem.seqlen_k};
  if (PackedQueries(a)) {
    e.batch_q = 1;
    e.rows_q = std::max<int64_t>(1, a.varlen.total_q);
  }
  if (a.problem.layout == Layout::kVarlen) {
    e.batch_k = 1;
    e.rows_k = std::max<int64_t>(1, a.varlen.total_k);
  } else if (a.problem.layout == Layout::kPaged) {
    e.batch_k = a.paged.num_blocks;
    e.rows_k = a.paged.block_size;
  }
  return e;
}

// Pages below this many keys are not read through TMA boxes (a block would take up to 16
// boxes of a few rows): fa2_paged serves them.
constexpr int kMinPagedBlockSize = 16;

// The rows of a paged K/V TMA box: whole pages' worth up to the largest power of two that
// divides block_n, so that a box lies in one page and a block is whole boxes.
int PagedBoxRows(const HopperConfig& c, int block_size) { return std::min(block_size, c.block_n & -c.block_n); }

// A dense cache with per-sequence lengths is read as one page a sequence, every key in page 0
// of its table (block_shift 30: the kernel's row mask is (1 << block_shift) - 1 in 32 bits).
constexpr int kDenseCacheBlockShift = 30;
constexpr int64_t kMaxDenseCacheKeys = int64_t(1) << kDenseCacheBlockShift;

// Whether a call reads K/V the way hopper_paged does: a paged cache, or a dense one with
// per-sequence key counts (whose rows past a sequence's keys may hold anything).
bool ReadsCache(const ForwardArgs& a) { return a.problem.layout == Layout::kPaged || DenseWithLengths(a); }

}  // namespace

int HopperTileHeadDim(const HopperConfig& c) { return (c.head_dim + 63) / 64 * 64; }

std::string HopperUri(const HopperConfig& c) {
  return std::string(c.paged ? "hopper_paged_" : "hopper_fwd_") + std::string(DTypeName(c.dtype)) + "_d" +
         std::to_string(c.head_dim) + "_bm" + std::to_string(c.block_m) + "_bn" + std::to_string(c.block_n) + "_wg" +
         std::to_string(c.consumer_wgs) + "_s" + std::to_string(c.stages) + "_p" +
         (c.persistent ? (c.claims ? "3" : c.q_buffers == 2 ? "2" : "1") : "0") + "_pp" + (c.pingpong ? "1" : "0") + "_ov" +
         (c.overlap ? "1" : "0") + (c.causal ? "_causal" : "_full");
}

bool HopperTileClaims(const HopperConfig& c) { return c.claims && c.persistent && c.q_buffers == 2; }

bool HopperClaimsRepay(const HopperConfig& c, int64_t total_q, int64_t batch, int64_t heads_q, int64_t blocks) {
  const int64_t tiles = (total_q + batch * (c.block_m - 1)) / c.block_m * heads_q;
  return tiles >= kHopperClaimMinTilesPerBlock * std::max<int64_t>(blocks, 1);
}

namespace {
// Shared memory without the split tail's merge buffer.
int64_t BaseSmemBytes(const HopperConfig& c) {
  const int64_t tile_q = int64_t(c.block_m) * HopperTileHeadDim(c) * 2;
  const int64_t tile_kv = int64_t(c.block_n) * HopperTileHeadDim(c) * 2;
  // (Claimed tiles, HopperTileClaims: two id-full and two id-empty barriers and two ids.)
  const int64_t barriers = 2 * c.q_buffers + 4 * c.stages + (c.paged ? c.stages : 0) + (HopperTileClaims(c) ? 6 : 0);
  return 1024 + c.q_buffers * tile_q + 2 * c.stages * tile_kv + barriers * 8;
}
// The merge buffer: each consumer warpgroup but the first leaves O (head_dim / 2 floats a
// thread), two row maxima and two row sums per thread of its 128.
int64_t MergeBytes(const HopperConfig& c) {
  return int64_t(c.consumer_wgs - 1) * (HopperTileHeadDim(c) / 2 + 4) * 128 * 4;
}
}  // namespace

// A split tile runs S for consumer_wgs blocks in a row (one a warpgroup, in turn order) before
// the first warpgroup's P V frees a V slot, so the producer must have that many K blocks in
// flight behind one V: stages >= consumer_wgs - 1, or the ring deadlocks (four warpgroups over two
// stages hung on an H100, session 47).
bool HopperSplitTail(const HopperConfig& c) {
  return c.consumer_wgs > 1 && c.pingpong && c.stages >= c.consumer_wgs - 1 &&
         BaseSmemBytes(c) + MergeBytes(c) <= FindGpuArch(9, 0)->max_smem_per_block_optin;
}

int64_t HopperSmemBytes(const HopperConfig& c) { return BaseSmemBytes(c) + (HopperSplitTail(c) ? MergeBytes(c) : 0); }

int HopperThreads(const HopperConfig& c) { return 128 * (c.consumer_wgs + 1); }

namespace {
// Shared memory of an sm_90a SM for all resident blocks (hopper_fwd exists on sm_90a only).
int64_t HopperSmemPerSm() { return FindGpuArch(9, 0)->smem_per_sm; }

// The register file (64K) split among `blocks` resident blocks: the launch bound gives each
// thread floor(65536 / (blocks * threads)) registers, rounded down to 8; the producer
// warpgroup keeps 24 (claimed tiles: 32 where the consumers lose nothing by it) and the
// consumers share the rest, at most 240 each (setmaxnreg's unit is 8).
int LaunchRegsAt(const HopperConfig& c, int blocks) { return 65536 / (blocks * HopperThreads(c)) / 8 * 8; }
int ConsumerRegsAt(const HopperConfig& c, int blocks) {
  const int threads = HopperThreads(c);
  auto with = [&](int producer) {
    return std::min(240, (threads * LaunchRegsAt(c, blocks) - 128 * producer) / (128 * c.consumer_wgs) / 8 * 8);
  };
  // The template's kProducerRegs: claimed tiles keep 32 where the consumers lose nothing by it.
  return HopperTileClaims(c) && with(32) == with(24) ? with(32) : with(24);
}
// Without the overlap, the template issues S in two wgmma halves where the whole S and O do not
// fit the launch bound (kSplitS); the larger half is kSplitN0 keys, half the block rounded up to 16.
int SplitN0(int block_n) { return (block_n / 2 + 15) / 16 * 16; }
// S, P and O accumulators of one consumer thread; with overlap, S of one block and P of the
// previous one are live together. 32 registers stay for addresses, row statistics and loop state.
// Besides, ptxas (NVRTC 13.0) compiles the S wgmma with O live only when that wgmma's S and O fit
// the launch bound's registers, not setmaxnreg's: 64x80 and 64x112 without overlap stopped with
// C7602 ("insufficient registers (64)" at four blocks, "(80)" at three) though their accumulators
// fit 104 and 136 (docs/perf-notes.md, session 15); S in halves (no overlap) fits them.
bool AccumulatorsFit(const HopperConfig& c, int blocks) {
  const int o = c.head_dim / 2;  // O at the tensors' width (the template's kHeadDimO)
  const int s_and_o = c.block_n / 2 + o;
  const int wgmma_s = !c.overlap && c.block_n >= 32 ? SplitN0(c.block_n) : c.block_n;
  return s_and_o + (c.overlap ? c.block_n / 4 : 0) <= ConsumerRegsAt(c, blocks) - 32 &&
         (blocks == 1 || wgmma_s / 2 + o <= LaunchRegsAt(c, blocks));
}
}  // namespace

int HopperBlocksPerSm(const HopperConfig& c) {
  if (c.consumer_wgs > 1) return 1;
  // One consumer warpgroup: the most blocks per SM (4, 3, else 2) whose accumulators fit their
  // share of the registers (104, 136, 232) and whose shared memory fits the SM's 228 KB (1 KB
  // reserved per block). More resident blocks hide the load latency of short tiles.
  const int64_t by_smem = HopperSmemPerSm() / (HopperSmemBytes(c) + 1024);
  for (int blocks = 4; blocks > 2; --blocks)
    if (by_smem >= blocks && AccumulatorsFit(c, blocks)) return blocks;
  return 2;
}

int HopperConsumerRegs(const HopperConfig& c) { return ConsumerRegsAt(c, HopperBlocksPerSm(c)); }

int HopperRescaleThreshold(const HopperConfig& c) {
  // Measured per tile (interleaved runs on an H100, hopper_probe --ab27 in session 27 and --ab28
  // in session 28): d256 gained 0.8-3.6% on all six shapes and both tiles (bn64, bn80); three
  // consumer warpgroups gained at d64 (192x128: 2.7-3.3%) and at d128 (192x80 p2: 4.6-4.8%).
  // With one or two it lost or tied: d128 bn192 7.5%, bn176 2.4%, bn128 p2 0.8-2.5% slower;
  // d64 128x128 p2 0.9-2.1% slower, one warpgroup -1.6% to +2.3%. The vote and the branch cost
  // about what the skipped multiplies save unless O is wide (d256: 128 a thread) or three
  // warpgroups share the SM's issue slots. d192 is unmeasured, so off; the padded head dims
  // (96, 160, 224) follow their tile's (HopperTileHeadDim; O a quarter to an eighth narrower),
  // unmeasured.
  const int d = HopperTileHeadDim(c);
  const bool three_wgs = c.consumer_wgs >= 3 && (d == 64 || d == 128);
  return d == 256 || three_wgs ? 8 : 0;
}

Status CheckHopperConfig(const HopperConfig& c, int64_t max_smem_bytes) {
  const std::string uri = HopperUri(c);
  if (c.dtype != DType::kBF16 && c.dtype != DType::kF16) return Invalid(uri + ": dtype must be f16 or bf16");
  if (c.head_dim % 32 != 0 || c.head_dim < 64 || c.head_dim > 256)
    return Invalid(uri + ": head_dim (" + std::to_string(c.head_dim) + ") must be 64, 96, 128, 160, 192, 224 or 256");
  if (c.consumer_wgs < 1 || c.consumer_wgs > 4)
    return Invalid(uri + ": consumer_wgs (" + std::to_string(c.consumer_wgs) + ") must be 1, 2, 3 or 4");
  if (c.block_m != kRowsPerWarpgroup * c.consumer_wgs)
    return Invalid(uri + ": block_m (" + std::to_string(c.block_m) + ") must be 64 * consumer_wgs (" +
                   std::to_string(kRowsPerWarpgroup * c.consumer_wgs) + ")");
  if (c.block_n % 16 != 0 || c.block_n < 16 || c.block_n > 256)
    return Invalid(uri + ": block_n (" + std::to_string(c.block_n) + ") must be a multiple of 16 in [16, 256]");
  if (c.stages < 2 || c.stages > 4) return Invalid(uri + ": stages (" + std::to_string(c.stages) + ") must be 2, 3 or 4");
  if (c.q_buffers != 1 && !(c.q_buffers == 2 && c.persistent))
    return Invalid(uri + ": q_buffers (" + std::to_string(c.q_buffers) +
                   ") must be 1, or 2 with the persistent tile loop (a block of one tile has no next Q)");
  if (c.claims && !(c.persistent && c.q_buffers == 2))
    return Invalid(uri + ": claimed tiles (p3) need the persistent loop with two Q buffers");
  // The consumer's accumulators (S, P, O) must fit its register budget (the template asserts it).
  const int blocks = HopperBlocksPerSm(c);
  if (!AccumulatorsFit(c, blocks))
    return Invalid(uri + ": block_n and head_dim need more accumulator registers than " +
                   std::to_string(ConsumerRegsAt(c, blocks)) + " per consumer thread (" +
                   std::to_string(LaunchRegsAt(c, blocks)) + " at launch) allow");
  const int64_t smem = HopperSmemBytes(c);
  if (smem > max_smem_bytes)
    return Invalid(uri + ": needs " + std::to_string(smem) + " bytes of shared memory; the limit is " +
                   std::to_string(max_smem_bytes));
  return Status::Ok();
}

std::string HopperPrologue(const HopperConfig& c, const std::string& uri) {
  return PrologueBuilder(uri)
      .Bool("kBf16", c.dtype == DType::kBF16, "false = fp16")
      .Int("kHeadDim", HopperTileHeadDim(c))
      .Int("kHeadDimData", c.head_dim)
      .Int("kBlockM", c.block_m)
      .Int("kBlockN", c.block_n)
      .Int("kConsumerWarpgroups", c.consumer_wgs)
      .Int("kStages", c.stages)
      .Bool("kCausal", c.causal)
      .Bool("kPersistent", c.persistent)
      .Bool("kPingPong", c.pingpong && c.consumer_wgs > 1, "turns between consumer warpgroups")
      .Bool("kOverlap", c.overlap, "S of block j+1 before P V of block j")
      .Int("kQBuffers", c.q_buffers)
      .Int("kSmemBytes", HopperSmemBytes(c))
      .Int("kBlocksPerSm", HopperBlocksPerSm(c))
      .Int("kRescaleThreshold", HopperRescaleThreshold(c))
      .Bool("kSplitTail", HopperSplitTail(c), "a one-warpgroup tile deals its K/V blocks to every warpgroup")
      .Bool("kPagedKv", c.paged, "K/V through the block table")
      .Bool("kClaimTiles", HopperTileClaims(c), "tiles claimed from a counter at run time (packed sequences)")
      .Finish("hopper_fwd.cuh");
}

Status CanServe(const HopperConfig& c, const ForwardArgs& a) {
  FT_RETURN_IF_ERROR(ValidateForwardArgs(a));
  // The URI only on failure: this runs on every launch and must not allocate when it passes.
  if (a.problem.dtype != c.dtype)
    return Invalid(HopperUri(c) + " cannot serve dtype " + std::string(DTypeName(a.problem.dtype)));
  if (a.problem.head_dim != c.head_dim) return Invalid(HopperUri(c) + " cannot serve head_dim " + std::to_string(a.problem.head_dim));
  if (a.problem.causal != c.causal)
    return Invalid(HopperUri(c) + " cannot serve a " + (a.problem.causal ? "causal" : "non-causal") + " call");
  if (c.paged ? !ReadsCache(a) : a.problem.layout == Layout::kPaged)
    return Invalid(HopperUri(c) + (c.paged ? " reads a paged K/V cache or a dense one with seqlens_k; this call's "
                                             "layout is "
                                           : " reads dense or packed K/V; this call's layout is ") +
                   std::string(LayoutName(a.problem.layout)) + (c.paged ? " without seqlens_k" : ""));
  if (!c.paged && a.seqlens_k != nullptr)
    return Invalid(HopperUri(c) + " does not read per-sequence key counts (seqlens_k); hopper_paged does");
  if (HopperTileClaims(c) && !c.paged && a.problem.layout != Layout::kVarlen)
    return Invalid(HopperUri(c) + " claims its tiles at run time: it serves packed sequences (layout varlen); this "
                   "call's layout is " + std::string(LayoutName(a.problem.layout)));
  return CheckTmaDescribable(a);
}

Status CheckTmaDescribable(const ForwardArgs& a) {
  if (a.problem.layout == Layout::kPaged) {
    if (a.paged.block_size < kMinPagedBlockSize)
      return Invalid("hopper_paged: paged.block_size (" + std::to_string(a.paged.block_size) +
                     ") is below 16: a K/V TMA box would be a few rows (pages of 16 to 256 keys)");
    if (a.paged.num_blocks > INT32_MAX)
      return Invalid("hopper_paged: paged.num_blocks (" + std::to_string(a.paged.num_blocks) +
                     ") exceeds 2^31 - 1, the largest TMA coordinate");
  }
  if (DenseWithLengths(a) && a.problem.seqlen_k > kMaxDenseCacheKeys)
    return Invalid("hopper_paged: seqlen_k (" + std::to_string(a.problem.seqlen_k) +
                   ") exceeds 2^30, the most keys it reads from a dense cache with seqlens_k");
  const TmaExtents e = TmaExtentsOf(a);
  const std::string_view family = ReadsCache(a) ? "hopper_paged" : "hopper_fwd";
  FT_RETURN_IF_ERROR(CheckHopperTmaStrides(family, "q", a.q_strides, e.batch_q, e.rows_q, a.problem.heads_q));
  FT_RETURN_IF_ERROR(CheckHopperTmaStrides(family, "k", a.k_strides, e.batch_k, e.rows_k, a.problem.heads_kv));
  FT_RETURN_IF_ERROR(CheckHopperTmaStrides(family, "v", a.v_strides, e.batch_k, e.rows_k, a.problem.heads_kv));
  FT_RETURN_IF_ERROR(CheckHopperTmaStrides(family, "o", a.o_strides, e.batch_q, e.rows_q, a.problem.heads_q));
  return Status::Ok();
}

Status PackHopper(const HopperConfig& c, const ForwardArgs& a, int sm_count, LaunchPacket* out) {
  FT_RETURN_IF_ERROR(CheckHopperConfig(c));
  FT_RETURN_IF_ERROR(CanServe(c, a));
  if (c.persistent && sm_count < 1) return Invalid(HopperUri(c) + ": a persistent variant needs the device's SM count");
  FillHopperPacket(c, a, sm_count, out);
  return Status::Ok();
}

void FillHopperPacket(const HopperConfig& c, const ForwardArgs& a, int sm_count, LaunchPacket* out) {
  const int64_t m_blocks = (a.problem.seqlen_q + c.block_m - 1) / c.block_m;
  if (c.persistent) {
    // Tiles fit 2^31: ValidateForwardArgs bounds B, H and N. One block per resident slot
    // (HopperBlocksPerSm: the template's launch bounds), fewer when shared memory allows fewer.
    const int64_t tiles = m_blocks * a.problem.heads_q * a.problem.batch;
    const int64_t by_smem = HopperSmemPerSm() / (HopperSmemBytes(c) + 1024);
    const int64_t per_sm = std::max<int64_t>(1, std::min<int64_t>(HopperBlocksPerSm(c), by_smem));
    out->grid[0] = unsigned(std::min<int64_t>(tiles, std::max(sm_count, 1) * per_sm));
    out->grid[1] = 1;
    out->grid[2] = 1;
  } else {
    out->grid[0] = unsigned(m_blocks);
    out->grid[1] = unsigned(a.problem.heads_q);
    out->grid[2] = unsigned(a.problem.batch);
  }
  out->block[0] = unsigned(HopperThreads(c));
  out->block[1] = 1;
  out->block[2] = 1;
  out->smem_bytes = unsigned(HopperSmemBytes(c));
  out->tensor_maps = 4;
  const TmaExtents e = TmaExtentsOf(a);
  const Problem& f = a.problem;
  const bool paged = f.layout == Layout::kPaged;
  // A dense cache with lengths (c.paged on the dense layout): boxes of the largest power of two
  // dividing block_n, as on pages that large (the kernel issues a box a lane).
  const int kv_box = paged ? PagedBoxRows(c, a.paged.block_size) : c.paged ? c.block_n & -c.block_n : c.block_n;
  out->maps[0] = HopperTensorMapFor(offsetof(HopperParams, tmap_q), f.dtype, a.q, a.q_strides, e.batch_q, e.rows_q,
                                    f.heads_q, f.head_dim, c.block_m);
  out->maps[1] = HopperTensorMapFor(offsetof(HopperParams, tmap_k), f.dtype, a.k, a.k_strides, e.batch_k, e.rows_k,
                                    f.heads_kv, f.head_dim, kv_box);
  out->maps[2] = HopperTensorMapFor(offsetof(HopperParams, tmap_v), f.dtype, a.v, a.v_strides, e.batch_k, e.rows_k,
                                    f.heads_kv, f.head_dim, kv_box);
  out->maps[3] = HopperTensorMapFor(offsetof(HopperParams, tmap_o), f.dtype, a.o, a.o_strides, e.batch_q, e.rows_q,
                                    f.heads_q, f.head_dim, kRowsPerWarpgroup);
  HopperParams p{};
  p.o = a.o;
  p.lse = a.lse;
  p.o_stride[0] = a.o_strides.batch;
  p.o_stride[1] = a.o_strides.seq;
  p.o_stride[2] = a.o_strides.head;
  p.batch = int32_t(a.problem.batch);
  p.seqlen_q = int32_t(a.problem.seqlen_q);
  p.seqlen_k = int32_t(a.problem.seqlen_k);
  p.heads_q = int32_t(a.problem.heads_q);
  p.heads_kv = int32_t(a.problem.heads_kv);
  p.scale_log2 = float(double(a.EffectiveScale()) * 1.4426950408889634);
  if (PackedQueries(a)) {
    p.cu_seqlens_q = a.varlen.cu_seqlens_q;
    p.total_q = a.varlen.total_q;
  }
  if (f.layout == Layout::kVarlen) {
    p.cu_seqlens_k = a.varlen.cu_seqlens_k;
    p.total_k = a.varlen.total_k;
  }
  // Claimed tiles where the call gives the counter's workspace, its sequences may differ in
  // length and it has tiles enough to repay the memset; else the static deal, which balances
  // sequences of one length and keeps more of their K/V in L2 (call 3 of session 49: claims took
  // d128 B8 x 2048 causal 2.6% longer). Packed K/V: the sums say whether they differ (every one
  // is at most the longest). Keys on pages (or a dense cache with lengths): their counts are on
  // the device, so they may.
  const bool may_differ =
      c.paged || (f.layout == Layout::kVarlen &&
                  (a.varlen.total_q != f.batch * f.seqlen_q || a.varlen.total_k != f.batch * f.seqlen_k));
  const int64_t rows = PackedQueries(a) ? a.varlen.total_q : f.batch * f.seqlen_q;
  if (HopperTileClaims(c) && may_differ && a.workspace != nullptr && a.workspace_bytes >= kHopperClaimWorkspaceBytes &&
      HopperClaimsRepay(c, rows, f.batch, f.heads_q, out->grid[0])) {
    p.tile_counter = static_cast<unsigned*>(a.workspace);
    out->zero = a.workspace;
    out->zero_bytes = sizeof(unsigned);
  }
  if (paged) {
    p.seqlens_k = a.seqlens_k;
    p.block_table = a.paged.block_table;
    p.block_table_stride = a.paged.block_table_stride;
    p.block_shift = Log2Ceil(a.paged.block_size);
    p.box_shift = Log2Ceil(kv_box);
  } else if (c.paged) {  // a dense cache: page b for sequence b (no table), every key in it
    p.seqlens_k = a.seqlens_k;
    p.block_shift = kDenseCacheBlockShift;
    p.box_shift = Log2Ceil(kv_box);
  }
  out->SetArgs(p);
}

}  // namespace flashtune::detail
