// The fa2_bwd family: space, prologue and launch packing of templates/fa2_bwd.cuh, the
// FlashAttention-2 backward pass (preprocess, main and convert kernels of one module).
// Parameters, in URI order: bc (block_n: keys per thread block, the parallelism knob: 64,
// 128), br (block_m: queries per inner step: 32, 64, 128), w (warps: 4, 8; block_n must be a
// multiple of 16·warps), s (Q / d_o shared-memory stages: 1, 2), det (1: dq accumulated in key
// block order, bit-reproducible; the runtime sets it from BackwardArgs::deterministic, the
// tuner searches 0), dqc (dQ columns per warp item: 16, 32, 64; 32 searched only where 64
// does not divide D), dqv (floats per dQ reduction: 1, or 2 with red.add.v2 on sm_90; 2 is
// searched), dqs (1: the dQ tile staged in shared memory and added a row at a time by bulk
// reduction on sm_90, by coalesced red.add before; 0: each thread adds its own dQ values), lay
// (warp layout: 1 rows — each warp owns whole 16-key rows of every GEMM; 2 FA-2's 2-D warp
// grids with P and dS through shared memory: bc 128, w 8, D 64 or 128, br 64 or 128 at D 64,
// dqc 64, which the layout does not use).
#include <algorithm>
#include <cmath>

#include "flashtune/arch.h"
#include "flashtune/space.h"
#include "generator/backward_family.h"
#include "generator/backward_workspace.h"
#include "generator/family.h"
#include "generator/prologue.h"
#include "templates/ft_kernel_abi.cuh"

namespace flashtune {

namespace {

constexpr int kPreRows = 16;  // query rows per preprocess / convert block (the template's kPreRows)

struct BwdParams {
  int block_n, block_m, warps, stages, det, dq_cols, dq_vec, dq_staged, layout;
  explicit BwdParams(const Variant& v)
      : block_n(v.Param("bc")),
        block_m(v.Param("br")),
        warps(v.Param("w")),
        stages(v.Param("s")),
        det(v.Param("det")),
        dq_cols(v.Param("dqc", 16)),
        dq_vec(v.Param("dqv", 1)),
        dq_staged(v.Param("dqs", 0)),
        layout(v.Param("lay", 1)) {}
};

// K and V tiles, `stages` Q and d_o tiles (rows padded by 16 bytes), the 16-bit dSᵀ tile (rows
// layout) or P and dS tiles (2-D layout), and with dqs the fp32 dQ tile (rows padded by 32 bytes).
int64_t BwdSharedMemoryBytes(const BwdParams& p, int head_dim) {
  const int64_t scratch = p.layout == 2 ? int64_t(2) * p.block_m * (p.block_n + 8) * 2
                                        : int64_t(p.block_n) * (p.block_m + 8) * 2;
  return int64_t(2 * p.block_n + 2 * p.stages * p.block_m) * (head_dim + 8) * 2 + scratch +
         (p.dq_staged ? int64_t(p.block_m) * (head_dim + 8) * 4 : 0);
}

Variant BwdVariant(const ProblemClass& cls, int bn, int bm, int w, int s, int det, int dqc, int dqv, int dqs, int lay) {
  Variant v;
  v.family = "fa2_bwd";
  v.dtype = cls.dtype;
  v.head_dim = cls.head_dim;
  v.causal = cls.causal;
  v.params = {{"bc", bn},   {"br", bm},   {"w", w},     {"s", s},    {"det", det},
              {"dqc", dqc}, {"dqv", dqv}, {"dqs", dqs}, {"lay", lay}};
  return v;
}

// Registers per thread the main kernel needs, estimated: each warp's dK and dV accumulators,
// Sᵀ and dPᵀ for one query step, their 16-bit copies, and ~48 for addressing and the per-query
// lse / delta (2-D layout: 32 keys x D/2 of dK and dV, 32 queries x 256 / block_m keys of S and dP).
int EstimatedRegisters(const BwdParams& p, int head_dim) {
  if (p.layout == 2) return 2 * (head_dim / 16) * 4 * 2 + 2 * (256 / p.block_m) * 4 * 2 + 56;
  const int k_tiles = p.block_n / p.warps / 16;
  return k_tiles * (head_dim / 8) * 4 * 2 + k_tiles * (p.block_m / 8) * 4 * 3 + p.block_m / 2 + 48;
}
// Above this a tile is left out of the searched space (InDefaultSpace says why): nearly three
// times what a thread can hold.
constexpr int kHopelessRegisters = 720;

class Fa2Bwd final : public BackwardFamily {
 public:
  std::string_view name() const override { return "fa2_bwd"; }
  std::string_view template_name() const override { return "fa2_bwd.cuh"; }
  const std::vector<ParamAxis>& axes() const override {
    static const std::vector<ParamAxis> kAxes = {
        {"bc", "block_n (bc)", {64, 128}, {64, 128}},
        {"br", "block_m (br)", {32, 64, 128}, {32, 64, 128}},
        {"w", "warps (w)", {4, 8}, {4, 8}},
        {"s", "stages (s)", {1, 2}, {1, 2}},
        {"det", "deterministic (det)", {0, 1}, {0}},
        {"dqc", "dQ columns per warp item (dqc)", {16, 32, 64}, {16, 32, 64}},
        {"dqv", "floats per dQ reduction (dqv)", {1, 2}, {2}},
        {"dqs", "dQ staged in shared memory (dqs)", {0, 1}, {0, 1}},
        {"lay", "warp layout (lay)", {1, 2}, {1, 2}},
    };
    return kAxes;
  }

  // mma.sync, ldmatrix and cp.async: the arch table's cp_async targets (sm_80 on).
  std::string UnservedFor(const ProblemClass& cls, const Target& target) const override {
    (void)cls;
    return NeedsCpAsync(target);
  }

  int64_t SharedMemoryBytes(const Variant& v) const override {
    const BwdParams p(v);
    return BwdSharedMemoryBytes(p, v.head_dim);
  }
  int Threads(const Variant& v) const override { return v.Param("w") * 32; }

  Status CheckRules(const Variant& v, int64_t max_smem_bytes) const override {
    const BwdParams p(v);
    if (v.head_dim % p.dq_cols != 0) {
      return Status(Code::kInvalidArgument, "dq_cols (" + std::to_string(p.dq_cols) + ") must divide head_dim (" +
                                                std::to_string(v.head_dim) + ")");
    }
    if (p.block_n % (p.warps * 16) != 0) {
      return Status(Code::kInvalidArgument, "block_n (" + std::to_string(p.block_n) +
                                                ") must be a multiple of warps * 16 (" + std::to_string(p.warps * 16) +
                                                "): each warp owns whole 16-key tiles");
    }
    if (p.layout == 2 && !(p.block_n == 128 && p.warps == 8 && (v.head_dim == 64 || v.head_dim == 128) &&
                           (p.block_m == 64 || (p.block_m == 128 && v.head_dim == 64)) && p.dq_cols == 64)) {
      return Status(Code::kInvalidArgument,
                    "layout 2 (FA-2's warp grids) needs block_n 128, warps 8, head_dim 64 or 128, block_m 64 "
                    "(or 128 at head_dim 64) and dq_cols 64; got block_n " + std::to_string(p.block_n) + ", warps " +
                        std::to_string(p.warps) + ", head_dim " + std::to_string(v.head_dim) + ", block_m " +
                        std::to_string(p.block_m) + ", dq_cols " + std::to_string(p.dq_cols));
    }
    const int64_t smem = SharedMemoryBytes(v);
    if (smem > max_smem_bytes) {
      return Status(Code::kInvalidArgument,
                    "shared memory (" + std::to_string(smem) + " bytes for block_n " + std::to_string(p.block_n) +
                        ", block_m " + std::to_string(p.block_m) + ", stages " + std::to_string(p.stages) +
                        ", head_dim " + std::to_string(v.head_dim) + ") exceeds max_smem_bytes (" +
                        std::to_string(max_smem_bytes) + ")");
    }
    return Status::Ok();
  }

  // dqc 32 only where 64 does not divide the head dim: 64 was faster wherever it exists
  // (docs/perf-notes.md, "fa2_bwd round 2"). Nor a tile estimated at more than kHopelessRegisters
  // a thread: d128's 128 x 128 with 4 warps (752) spilled 40 KB, took 2.6-3.3 s to compile (the
  // only fa2_bwd variants over 2 s) and ran 60-100 ms where the family's best ran 1.8-3.9 ms (H200
  // tunes of sessions 18-23, H100 session 36); the budgeted search measured it first among its
  // 128-row tiles on every d128 problem. d64's 128 x 128 (624) ran 1.45x the best and stays.
  bool InDefaultSpace(const Variant& v) const override {
    return !(v.Param("dqc") == 32 && v.head_dim % 64 == 0) &&
           EstimatedRegisters(BwdParams(v), v.head_dim) <= kHopelessRegisters;
  }

  // FA-2's backward tiles: 128 keys × 64 queries with 8 warps up to d128 (6% faster than
  // 64 × 64 with 4 warps at d128), 64 × 32 beyond (each warp's dK and dV accumulators grow
  // with D), in FA-2's 2-D warp layout where it exists (d64, d128: 1.07-1.21x the rows
  // layout), with 128 queries per step at d64 (1.09-1.13x over 64); two stages, downgraded
  // until the shared memory fits. dQ: the widest items that divide D, added in pairs
  // (docs/perf-notes.md, "fa2_bwd round 2": 1.3-1.5x over dqc16 dqv1); staged through shared
  // memory from d64 to d128: at d128 as fast and a cheaper deterministic mode ("fa2_bwd round
  // 3"), and since its adds wait for no barrier of their own 1.03-1.07x faster than direct
  // reductions at d128 and 1.02-1.03x at d64, deterministic d64 1.01-1.07x ("fa2_bwd round 4").
  Variant Default(const ProblemClass& cls, const Target& target) const override {
    int bn = 64, bm = 32, w = 4, s = 2;
    const int dqc = cls.head_dim % 64 == 0 ? 64 : 32;
    const int dqs = cls.head_dim >= 64 && cls.head_dim <= 128 ? 1 : 0;
    const int lay = cls.head_dim == 64 || cls.head_dim == 128 ? 2 : 1;
    if (cls.head_dim <= 128) {
      bn = 128;
      bm = cls.head_dim == 64 ? 128 : 64;
      w = 8;
    }
    Variant v = BwdVariant(cls, bn, bm, w, s, 0, dqc, 2, dqs, lay);
    while (SharedMemoryBytes(v) > target.max_smem_bytes) {
      if (s > 1) {
        --s;
      } else if (bm > 32) {
        bm /= 2;
      } else if (bn > 64) {
        bn /= 2;
        w = 4;
      } else {
        break;  // nothing smaller exists; Check reports it
      }
      v = BwdVariant(cls, bn, bm, w, s, 0, dqc, 2, dqs, bn == 128 && w == 8 && bm >= 64 ? lay : 1);
    }
    return v;
  }

  std::string Prologue(const Variant& v) const override {
    const BwdParams p(v);
    return detail::PrologueBuilder(v.Uri())
        .Bool("kBf16", v.dtype == DType::kBF16, "false = fp16")
        .Int("kHeadDim", v.head_dim)
        .Int("kBlockN", p.block_n)
        .Int("kBlockM", p.block_m)
        .Int("kWarps", p.warps)
        .Int("kStages", p.stages)
        .Bool("kDeterministic", p.det != 0)
        .Bool("kCausal", v.causal)
        .Int("kDqCols", p.dq_cols)
        .Int("kDqVec", p.dq_vec)
        .Bool("kDqStaged", p.dq_staged != 0)
        .Bool("kGrid2d", p.layout == 2)
        .Int("kSmemBytes", SharedMemoryBytes(v))
        .Finish(template_name());
  }

  // Three launches: preprocess (the URI kernel), main, convert; one parameter struct.
  void PackBackward(const Variant& v, const BackwardArgs& a, LaunchPacket* out) const override {
    const BwdParams vp(v);
    const Problem& f = a.forward.problem;
    const ft_abi::Fa2BwdParams p = detail::Fa2BwdParamsFor(a);
    static_assert(kPreRows == detail::kMinBackwardQueryTile, "one counter per preprocess block's rows");

    const unsigned threads = unsigned(vp.warps * 32);
    out->tensor_maps = 0;
    detail::SetBackwardLaunches(f, kPreRows, threads, vp.block_n, threads, uint32_t(SharedMemoryBytes(v)), out);
    out->SetArgs(p);
  }

  std::string Describe(const Variant& v) const override {
    const BwdParams p(v);
    return std::to_string(p.block_n) + "x" + std::to_string(p.block_m) + " w" + std::to_string(p.warps) + " s" +
           std::to_string(p.stages) + " dq" + std::to_string(p.dq_cols) + "x" + std::to_string(p.dq_vec) +
           (p.dq_staged ? " staged" : "") + (p.layout == 2 ? " grid2d" : "") +
           (p.det ? " deterministic" : "");
  }

  // Past 255 registers a thread spills; the search scores the excess.
  double PriorScore(const Problem& problem, const Variant& v) const override {
    const BwdParams p(v);
    const int regs = EstimatedRegisters(p, v.head_dim);
    double score = regs > 255 ? 2.0 + (regs - 255) / 64.0 : 0.0;
    score -= 0.25 * std::log2(p.block_m / 32.0);  // longer query steps amortise barriers
    if (p.stages == 1) score += 0.3;
    if (p.dq_cols == 16) score += 0.1;  // narrow dQ items re-read dS: 3-7 % slower where measured
    // Few key blocks leave SMs idle.
    if ((problem.seqlen_k + p.block_n - 1) / p.block_n * problem.batch * problem.heads_kv < 132 * 2 && p.block_n == 128)
      score += 0.25;
    return score;
  }
};

}  // namespace

const Family& FamilyEntry_fa2_bwd() {
  static const Fa2Bwd family;
  return family;
}

}  // namespace flashtune
