// The hopper_fwd family: templates/hopper_fwd.cuh (wgmma + TMA + mbarriers + a producer
// warpgroup and 1-3 consumer warpgroups with setmaxnreg, ping-pong between consumers), sm_90a
// only. Parameters, in URI order: bm (query rows per block = 64 per consumer warpgroup), bn (keys
// per K/V block), wg (consumer warpgroups), s (K/V ring stages), p (persistent tile loop, 0/1;
// causal tiles in pairs of equal cost; 2: persistent with two Q buffers), pp (ping-pong between
// consumer warpgroups, 0/1; with one consumer warpgroup there is nobody to take turns with and
// pp1 is the pp0 kernel), ov (intra-warpgroup overlap of the softmax with the next block's S, 0/1).
// The rules are generator/hopper_fwd_pack.cpp's CheckHopperConfig (the template asserts them).
// hopper_paged: the same template (kPagedKv) and parameters reading K/V from a paged cache
// (prefill over pages: chunked prefill, prefix caching), its queries dense or packed, or from a
// dense cache with per-sequence lengths (flash_attn_with_kvcache's cache_seqlens) as one page a
// sequence.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "flashtune/arch.h"
#include "flashtune/problem_set.h"
#include "flashtune/space.h"
#include "generator/families/hopper_fwd.h"
#include "generator/family.h"
#include "generator/hopper_fwd_pack.h"

namespace flashtune {
namespace {

// The head dim of a variant's tiles (detail::HopperTileHeadDim).
int TileHeadDim(int head_dim) {
  detail::HopperConfig c;
  c.head_dim = head_dim;
  return detail::HopperTileHeadDim(c);
}

detail::HopperConfig ConfigOf(const Variant& v) {
  detail::HopperConfig c;
  c.dtype = v.dtype;
  c.head_dim = v.head_dim;
  c.causal = v.causal;
  c.block_m = v.Param("bm");
  c.block_n = v.Param("bn");
  c.consumer_wgs = v.Param("wg");
  c.stages = v.Param("s");
  c.persistent = v.Param("p") != 0;
  c.q_buffers = v.Param("p") >= 2 ? 2 : 1;
  c.claims = v.Param("p") == 3;
  c.pingpong = v.Param("pp") != 0;
  c.overlap = v.Param("ov") != 0;
  c.paged = v.family == "hopper_paged";
  return c;
}

// hopper_fwd reads dense or packed K/V; hopper_paged, the same template with kPagedKv, reads
// them through a page table. As fa2_fwd / fa2_paged: the layout is compiled in, and each
// family's variants are named and tuned apart.
class HopperFwd final : public Family {
 public:
  explicit HopperFwd(bool paged) : paged_(paged) {}
  std::string_view name() const override { return paged_ ? "hopper_paged" : "hopper_fwd"; }
  std::string_view template_name() const override { return "hopper_fwd.cuh"; }
  // The instruction set is where FA-2's gap to cuDNN lies: untuned, prefer this on sm_90a.
  // A class's untuned default is never hopper_paged: it serves only the paged layout.
  int preference() const override { return paged_ ? -5 : 10; }
  // hopper_paged: a paged cache past decode_fwd's 16 query rows, ahead of fa2_paged (10) on
  // sm_90a (elsewhere it has no kernels: Serves): on 16-key pages its tuned tile took 0.48 of
  // fa2_paged's best tuned time at d64 and 0.35 at d256 (docs/perf-notes.md, session 34).
  // Within 16 rows decode_fwd's tiles (64 query rows a warpgroup would be mostly empty) and
  // fa2_paged serve.
  // On a dense cache it serves only calls with seqlens_k, which hopper_fwd (10, ahead of it) does
  // not read: they fall back to it (the planner's FallbackVariant, the planned tile if
  // hopper_fwd's) ahead of fa2_fwd (0), whose mma.sync tile ran such a call at 0.4-0.5 of
  // hopper_paged's (docs/perf-notes.md, session 35).
  int PreferenceFor(const Problem& p) const override {
    if (!paged_) return Family::PreferenceFor(p);
    if (!ServesOperation(p) || p.seqlen_q <= kDecodeMaxQueries) return -1;
    return p.layout == Layout::kPaged ? 15 : p.layout == Layout::kDense ? 5 : -1;
  }
  // A dense problem says nothing of lengths, and without them hopper_fwd runs it: timing
  // hopper_paged there would measure a kernel no call of the bucket launches.
  bool SearchedFor(const Problem& p) const override { return !paged_ || p.layout != Layout::kDense; }
  // hopper_paged reads per-sequence key counts (the paged layout's, or a dense cache's);
  // hopper_fwd does not (hopper_paged serves those calls).
  bool reads_seqlens_k() const override { return paged_; }
  const std::vector<ParamAxis>& axes() const override {
    // Searched: FA-3's tuned tiles as seeds (d64 192x128/192, d128 128x128/176, d256 128x80)
    // and their neighbours, and d192's class default (128x96: InDefaultSpace keeps 96-key blocks
    // to d192's tiles); 16-key steps exist in `allowed` for hand-picked variants.
    // Three K/V stages (InDefaultSpace): hopper_paged's at d128 and up with two or more consumer
    // warpgroups (on 16-key pages a block is 8 TMA boxes a chunk, and d128 128x128 took
    // 0.93-0.98 of the two-stage time with three, session 35, where dense tiles tie); and d64's
    // 256x64 over four warpgroups, whose split tail needs them.
    static const std::vector<ParamAxis> kAxes = {
        {"bm", "block_m (bm)", {64, 128, 192, 256}, {64, 128, 192, 256}},
        {"bn", "block_n (bn)", {16, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256},
         {64, 80, 96, 112, 128, 176, 192}},
        {"wg", "consumer warpgroups (wg)", {1, 2, 3, 4}, {1, 2, 3, 4}},
        {"s", "stages (s)", {2, 3, 4}, {2, 3}},
        // 2: persistent with the next tile's Q in a second buffer; searched in place of 1
        // wherever it fits (InDefaultSpace). 3: 2 with tiles claimed at run time, which packed
        // sequences run in place of 2 (TwinFor); the tuner times dense tensors.
        {"p", "persistent (p)", {0, 1, 2, 3}, {0, 1, 2}},
        {"pp", "ping-pong (pp)", {0, 1}, {1}},
        {"ov", "intra-warpgroup overlap (ov)", {0, 1}, {0, 1}},
    };
    return kAxes;
  }

  // Packed sequences: the kernel reads cu_seqlens and bounds its O stores per sequence.
  bool reads_varlen() const override { return !paged_; }

  std::string UnservedFor(const ProblemClass& cls, const Target& target) const override {
    // wgmma and setmaxnreg exist only in arch-specific ("a") targets of wgmma GPUs. Head dims
    // 96, 160 and 224 run on the next multiple of 64 (detail::HopperTileHeadDim); 32 would
    // waste half its GEMMs and is left to fa2_fwd.
    if (std::string arch = NeedsWgmma(target); !arch.empty()) return arch;
    if (cls.head_dim % 32 != 0 || cls.head_dim < 64 || cls.head_dim > 256)
      return "head dims 64 to 256 in steps of 32 only (at 32 half of each wgmma would multiply padding)";
    return "";
  }
  // One consumer warpgroup (two blocks per SM; three with 64-80-key tiles, HopperBlocksPerSm)
  // won at d64 for N <= 1k and causal (bench/data/h200-2026-12-01-hopper2, -hopper3); at d128
  // (two blocks per SM with 64-80-key tiles) it lost or tied everywhere it was measured (causal
  // N 512-2k, full N 512: session 20), its 64-row tile re-reading K/V twice as often.
  // No overlap lost 20-30% wherever it kept the blocks per SM (sessions 11-12); it is searched
  // only where it buys a block per SM (one warpgroup, non-persistent): d64 64x64 at four blocks
  // instead of three won causal N 512-2k and full N 512 by 4-7% (session 15); with S in two
  // wgmma halves, 64x128 at three instead of two won causal N 2k-4k and full N 1k by 2-6%
  // (session 16), and 64x80 runs at four. 64x112 at three lost to both 64x96 and 64x128
  // everywhere (session 16), so it is left out.
  // Two Q buffers (p2) beat one (p1) at every shape of session 19's A/B (d128 full N 512-1k
  // 0.85-0.91x the time, causal N 1k-2k 0.94-0.95x, d64 full N 512-1k 0.85-0.94x): p1 is searched
  // only where the second Q tile does not fit in shared memory (d128 with 176-key blocks, d256).
  // Since causal persistent blocks take their tiles in pairs of equal cost (session 20: 0.83-0.85x
  // the time of p0 at d128 causal N 512-2k), the no-overlap tiles that buy a block per SM are
  // searched persistent (p2) as well.
  // Padded head dims (96, 160, 224) take their tile's rules (TileHeadDim).
  // 96-key blocks only on d192's tiles (d160 and d192), whose class default they are (the
  // untuned plan must be among the tuner's candidates: TheUntunedPlanIsAmongTheTunersCandidates),
  // and on hopper_fwd's d96 three-warpgroup tile: its O is 48 accumulators a thread (P V at the
  // data's width), which leaves room for 96-key S and P (ptxas: 128 registers, no spill;
  // hopper_paged's, with its page state, spills 56-68 bytes). The same accounting fits d160's
  // three-warpgroup 192x64 with nothing to spare, and ptxas spills 56 bytes there: left out.
  bool InDefaultSpace(const Variant& v) const override {
    const int d = TileHeadDim(v.head_dim);
    if (v.Param("bn") == 96 && d != 192 && !(v.head_dim == 96 && v.Param("wg") == 3 && !paged_)) return false;
    if (v.head_dim == 160 && v.Param("wg") == 3) return false;
    if (v.Param("wg") == 1 && d > 64) return false;
    // Four consumer warpgroups: d64's 256x64 with three stages (its split tail), persistent with
    // two Q buffers and the overlap. On an H100 (session 48) it took 0.94x 192x128 p2's time at
    // full N 512, 0.92-0.96x at causal N 1k-2k, and tied or lost (to 1.06x at full N 2k)
    // elsewhere; its two-stage twins (no split tail) and 80-96-key blocks without the overlap
    // were slower everywhere.
    if (v.Param("wg") == 4) {
      return d == 64 && v.Param("bn") == 64 && v.Param("s") == 3 && v.Param("p") == 2 && v.Param("ov") == 1;
    }
    // hopper_paged's three stages: measured at d128 with two warpgroups (d64 192x128 tied).
    if (v.Param("s") == 3 && (!paged_ || v.Param("wg") == 1 || d < 128)) return false;
    if (v.Param("p") == 1) {
      detail::HopperConfig two = ConfigOf(v);
      two.q_buffers = 2;
      if (detail::CheckHopperConfig(two).ok()) return false;
    }
    if (v.Param("ov")) return true;
    if (v.Param("bn") == 112) return false;
    const detail::HopperConfig c = ConfigOf(v);
    detail::HopperConfig twin = c;
    twin.overlap = true;
    return c.consumer_wgs == 1 && (!c.persistent || c.q_buffers == 2) &&
           detail::HopperBlocksPerSm(c) > detail::HopperBlocksPerSm(twin);
  }
  int64_t SharedMemoryBytes(const Variant& v) const override { return detail::HopperSmemBytes(ConfigOf(v)); }
  int Threads(const Variant& v) const override { return detail::HopperThreads(ConfigOf(v)); }
  Status CheckRules(const Variant& v, int64_t max_smem_bytes) const override {
    return detail::CheckHopperConfig(ConfigOf(v), max_smem_bytes);
  }

  // Measured best tiles on the H200 (bench/hopper_probe, interleaved timing): d64 three
  // consumer warpgroups 192x128; d128 128x128 (causal 128x128, full 128x176 close); d256 128x80.
  // Padded head dims (96, 160, 224) start from their tile's (TileHeadDim); tuned on an H100
  // (session 42), d224's took 10 of 12 buckets, d160's lost 0-9% to the winners, and d96's long
  // streams run another tile (DefaultFor).
  Variant Default(const ProblemClass& cls, const Target& target) const override {
    const int d = TileHeadDim(cls.head_dim);
    int wg = 2, bn = 128;
    if (d <= 64) {
      wg = 3;
      bn = 128;
    } else if (d > 128) {
      bn = d > 192 ? 80 : 96;
    }
    const int values[] = {64 * wg, bn, wg, 2, 0, 1, 1};
    Variant v = MakeVariant(cls, values);
    while (!CheckRules(v, target.max_smem_bytes).ok() && bn > 16) {
      bn -= 16;
      v.SetParam("bn", bn);
    }
    // hopper_paged at d128: three stages where they fit (128x128 on 16-key pages took 0.93-0.98
    // of the two-stage time, session 35; d64 192x128 tied, d256's do not fit).
    if (paged_ && d == 128) {
      Variant three = v;
      three.SetParam("s", 3);
      if (CheckRules(three, target.max_smem_bytes).ok()) return three;
    }
    return v;
  }

  // An untuned dense or packed call over a short K/V stream (at most kShortStreamKeys keys, d96
  // kD96WideTileKeys; a packed call's longest sequence) runs its class
  // default's persistent twin with two Q buffers (p2) where that fits: a tile of so few K/V
  // blocks is mostly its prologue and epilogue, which the twin overlaps with the block's previous
  // tile (its Q loads while that tile's O is stored). Measured on the class defaults (session 42,
  // H100, `flashtune bench --rounds 5`; docs/perf-notes.md "hopper_fwd's untuned tile for short
  // K/V streams"): 0.78-0.85x the time at N 512 (d64, d96, d128, full and causal); the tuners'
  // logs read 0.84-0.91x at 1k and 0.94-0.96x at 2k. At 16k the twin ties full and costs 2-5%
  // causal, so longer streams keep the class default. The padded-tile head dims whose twin does
  // not fit (d160-d256's) keep theirs; so do pages (unmeasured). Packed sequences read as dense
  // do (session 44, H100, B sequences of N rows: 0.77-0.87x at N 512, 0.89-0.94x at 2k, 1.00-1.05x
  // at 16k; d96's 192x80 0.90-0.92x at 16k), and f16 as bf16 (0.77-0.85x at N 512).
  // d96 past 1024 keys (kD96WideTileKeys) runs 192x96 over three consumer warpgroups, persistent.
  // 192x80 was the tuner's pick at every d96 bucket from 2k keys, that is from 1025 (1.05-1.13x
  // the class default, session 42's call 5), 128x128 p2 at 512 and 1k; 192x96 (O at the data's
  // width leaves its 96-key S room) took 0.983x / 0.990x 192x80's time at N 16k full / causal,
  // 0.990x / 0.972x at 2k, and 0.919x / 0.909x 128x128 p2's at 2k (session 47, H100, `flashtune
  // bench --rounds 5`); at N 1900 192x64 over three took 0.95x 128x128 p2's, at N 1000 1.05x.
  // A dense d64 call of at most 1024 keys (causal: 4096) runs 256x64 over four consumer
  // warpgroups with three stages, persistent: the tuner's pick at those buckets (session 48,
  // H100, both dtypes: 0.93x the short-stream tile's time at full N 512, 0.99x at 1k, 1.03x at
  // 2k; causal 0.92-0.94x at N 512, 0.95-0.97x at 1k-2k, and 0.97x the class default's at 4k).
  // Packed sequences take it on their longest sequence, run claimed (TwinFor): with claims it
  // took 0.94-0.97x the short-stream tile's time on causal packed batches and tied full ones
  // (session 50, H100; with the static deal, 1.33x on a ragged causal batch).
  Variant DefaultFor(const Problem& problem, const Target& target) const override {
    return ProblemTile(problem, target, nullptr).value_or(Default(ClassOf(problem), target));
  }
  std::string DefaultReason(const Problem& problem, const Target& target) const override {
    std::string why;
    ProblemTile(problem, target, &why);
    return why;
  }

  std::string Prologue(const Variant& v) const override { return detail::HopperPrologue(ConfigOf(v), v.Uri()); }

  // TMA describes a tensor only when each stride of a dimension longer than 1 is a nonzero
  // multiple of 16 bytes; otherwise the runtime falls back to fa2_fwd and says why. The call
  // was validated and matched to the variant's class before (PackValidatedForward).
  // A paged call also needs pages of 16 keys or more (fa2_paged serves smaller ones); a dense
  // call reaches hopper_paged only with seqlens_k (else hopper_fwd serves it).
  Status CanRun(const Variant& v, const ForwardArgs& args) const override {
    (void)v;
    if (paged_ && args.problem.layout == Layout::kDense && args.seqlens_k == nullptr)
      return Status(Code::kUnsupported,
                    "hopper_paged reads a dense K/V cache only with per-sequence key counts (seqlens_k); "
                    "hopper_fwd serves this call");
    Status s = detail::CheckTmaDescribable(args);
    if (!s.ok()) return Status(Code::kUnsupported, s.message());
    return s;
  }

  // Packed sequences (hopper_fwd) and paged caches (hopper_paged) run a p2 tile as its p3 twin,
  // which claims its tiles from a counter in the workspace (detail::HopperTileClaims) where the
  // call gives one and has tiles enough (else it deals them as p2 does).
  std::string_view workspace_use() const override {
    return "the tile counter that claims tiles at run time (a call without it deals them statically)";
  }
  int64_t WorkspaceWanted(const Problem& problem) const override {
    return problem.layout == (paged_ ? Layout::kPaged : Layout::kVarlen) ? detail::kHopperClaimWorkspaceBytes : 0;
  }
  Variant TwinFor(const Variant& v, const Problem& problem, std::string* why) const override {
    if (problem.layout != (paged_ ? Layout::kPaged : Layout::kVarlen) || v.Param("p") != 2) return v;
    Variant twin = v;
    twin.SetParam("p", 3);
    if (why != nullptr)
      *why = std::string(paged_ ? "a paged cache runs" : "packed sequences run") + " it as " + twin.Uri() +
             ", which claims its tiles at run time in a call of 8 tiles a block or more: the static deal "
             "assumes every sequence is the longest";
    return twin;
  }

  void Pack(const Variant& v, const ForwardArgs& args, LaunchPacket* out) const override {
    detail::FillHopperPacket(ConfigOf(v), args, out->sm_count, out);
  }

  std::string Describe(const Variant& v) const override {
    return std::to_string(v.Param("bm")) + "x" + std::to_string(v.Param("bn")) + " wg" + std::to_string(v.Param("wg")) +
           " s" + std::to_string(v.Param("s")) +
           (v.Param("p") == 3   ? " persistent, two Q buffers, tiles claimed at run time"
            : v.Param("p") == 2 ? " persistent, two Q buffers"
            : v.Param("p")      ? " persistent"
                                : "") +
           (v.Param("pp") || v.Param("wg") < 2 ? "" : " no-pingpong") + (v.Param("ov") ? "" : " no-overlap") +
           (detail::HopperSplitTail(ConfigOf(v)) ? ", short last tiles split" : "") + (paged_ ? ", paged" : "");
  }

  // Ahead of every fa2_fwd variant (whose prior is > -2 for any tile): the instruction set
  // decides first; within the family, FA-3's seeds first, then bigger key tiles.
  double PriorScore(const Problem& p, const Variant& v) const override {
    (void)p;
    const Variant seed = Default(ClassOf(v), Target{});
    double score = -10.0 + Distance(v, seed);
    return score;
  }

 private:
  static constexpr int64_t kShortStreamKeys = 2048;
  static constexpr int64_t kD96WideTileKeys = 1024;
  static constexpr int64_t kD64FourWarpgroupKeys = 1024, kD64FourWarpgroupCausalKeys = 4096;

  // d64 over a short K/V stream (at most kD64FourWarpgroupKeys keys, causal
  // kD64FourWarpgroupCausalKeys): 256x64 over four consumer warpgroups with three stages,
  // persistent with two Q buffers, on dense, packed and paged K/V alike; else nothing.
  std::optional<Variant> D64FourWarpgroupTile(const Problem& problem, const Target& target, std::string* why) const {
    const int64_t four_keys = problem.causal ? kD64FourWarpgroupCausalKeys : kD64FourWarpgroupKeys;
    if (problem.head_dim != 64 || problem.seqlen_k > four_keys) return std::nullopt;
    Variant four = Default(ClassOf(problem), target);
    for (const auto& [name, value] : {std::pair{"bm", 256}, {"bn", 64}, {"wg", 4}, {"s", 3}, {"p", 2}, {"ov", 1}})
      four.SetParam(name, value);
    if (!CheckRules(four, target.max_smem_bytes).ok()) return std::nullopt;
    if (why != nullptr)
      *why = "a short d64 K/V stream (" +
             std::string(problem.layout != Layout::kDense ? "the longest sequence's " : "") +
             std::to_string(problem.seqlen_k) + " keys, at most " + std::to_string(four_keys) +
             (problem.causal ? ", causal" : "") +
             "): 256x64 over four consumer warpgroups with three stages, persistent (" +
             (problem.layout == Layout::kPaged ? "as dense and packed calls run it" : "the tuner's pick there") + ")";
    return four;
  }

  // hopper_paged over a short K/V stream (a paged call, at most kShortStreamKeys keys): d64's
  // four-warpgroup tile where it applies, else the class default's persistent twin with two Q
  // buffers (two stages where the default has three), as hopper_fwd's short-stream rule; both
  // run claimed (TwinFor). The twin: 64 short sequences on 16-key pages ran 0.84-0.88x the class
  // default's time (H100, bf16, d64 and d128; varlen_bench.py's paged16 short batch).
  std::optional<Variant> PagedShortStreamTile(const Problem& problem, const Target& target, std::string* why) const {
    if (problem.layout != Layout::kPaged) return std::nullopt;
    if (auto four = D64FourWarpgroupTile(problem, target, why)) return four;
    if (problem.seqlen_k > kShortStreamKeys) return std::nullopt;
    Variant v = Default(ClassOf(problem), target);
    v.SetParam("p", 2);
    if (!CheckRules(v, target.max_smem_bytes).ok()) v.SetParam("s", 2);
    if (!CheckRules(v, target.max_smem_bytes).ok()) return std::nullopt;
    if (why != nullptr)
      *why = "a short paged K/V stream (the longest sequence's " + std::to_string(problem.seqlen_k) +
             " keys, at most " + std::to_string(kShortStreamKeys) +
             "): the class default's persistent twin with two Q buffers";
    return v;
  }

  // The tile DefaultFor gives `problem` in place of its class default, else nothing; with `why`,
  // the reason in a phrase (one home for DefaultFor and DefaultReason).
  std::optional<Variant> ProblemTile(const Problem& problem, const Target& target, std::string* why) const {
    if (paged_) return PagedShortStreamTile(problem, target, why);
    if (problem.layout == Layout::kPaged) return std::nullopt;
    if (auto four = D64FourWarpgroupTile(problem, target, why)) return four;
    Variant v = Default(ClassOf(problem), target);
    const bool d96 = problem.head_dim == 96;
    const int64_t short_keys = d96 ? kD96WideTileKeys : kShortStreamKeys;
    const bool short_stream = problem.seqlen_k <= short_keys;
    if (!short_stream) {
      if (!d96) return std::nullopt;
      v.SetParam("bm", 192);
      v.SetParam("bn", 96);
      v.SetParam("wg", 3);
    }
    if (v.Param("p") == 2) return std::nullopt;
    v.SetParam("p", 2);
    if (!CheckRules(v, target.max_smem_bytes).ok()) return std::nullopt;
    if (why != nullptr)
      *why = short_stream ? "a short K/V stream (" +
                                std::string(problem.layout == Layout::kVarlen ? "the longest sequence's " : "") +
                                std::to_string(problem.seqlen_k) + " keys, at most " + std::to_string(short_keys) +
                                "): the class default's persistent twin with two Q buffers, which overlaps a "
                                "tile's prologue and epilogue with the block's previous tile"
                          : "d96 over more than " + std::to_string(short_keys) +
                                " keys: 192x96 over three consumer warpgroups, persistent (measured ahead of the "
                                "class default and of 192x80 at every d96 shape from 2k keys)";
    return v;
  }

  bool paged_;
};

}  // namespace

const Family& FamilyEntry_hopper_fwd() {
  static const HopperFwd family(false);
  return family;
}

const Family& HopperPagedFamily() {
  static const HopperFwd family(true);
  return family;
}

}  // namespace flashtune
