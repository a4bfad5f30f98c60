// The fa2_fwd family: space, prologue, launch packing and cost prior of templates/fa2_fwd.cuh.
#include "generator/families/fa2_fwd.h"

#include <algorithm>
#include <cmath>

#include "flashtune/arch.h"
#include "flashtune/space.h"
#include "generator/family.h"
#include "generator/prologue.h"

namespace flashtune {

Variant Fa2Variant(DType dtype, int head_dim, bool causal, int block_m, int block_n, int warps, int stages,
                   bool paged) {
  Variant v;
  v.family = paged ? "fa2_paged" : "fa2_fwd";
  v.dtype = dtype;
  v.head_dim = head_dim;
  v.causal = causal;
  v.params = {{"br", block_m}, {"bc", block_n}, {"w", warps}, {"s", stages}};
  return v;
}

namespace {

struct Fa2Params {
  int block_m, block_n, warps, stages;
  explicit Fa2Params(const Variant& v)
      : block_m(v.Param("br")), block_n(v.Param("bc")), warps(v.Param("w")), stages(v.Param("s")) {}
};

// fa2_fwd reads K/V rows (dense, varlen); fa2_paged, the same template with kPagedKv, reads
// them through a page table. The layout is compiled in, so neither kernel carries the other's
// loads, and each family's variants are named (URI) and tuned apart.
class Fa2Fwd final : public Family {
 public:
  explicit Fa2Fwd(bool paged) : paged_(paged) {}
  std::string_view name() const override { return paged_ ? "fa2_paged" : "fa2_fwd"; }
  std::string_view template_name() const override { return "fa2_fwd.cuh"; }
  // A class's untuned default is never fa2_paged: it serves only the paged layout.
  int preference() const override { return paged_ ? -5 : 0; }
  const std::vector<ParamAxis>& axes() const override {
    static const std::vector<ParamAxis> kAxes = {
        {"br", "block_m (br)", {64, 128}, {64, 128}},
        {"bc", "block_n (bc)", {32, 64, 128}, {32, 64, 128}},
        {"w", "warps (w)", {4, 8}, {4, 8}},
        {"s", "stages (s)", {1, 2, 3}, {1, 2, 3}},
    };
    return kAxes;
  }

  // fa2_fwd: dense and packed (varlen) rows. fa2_paged: a paged cache, its queries dense or
  // packed, at any number of query rows; decode_fwd is preferred where it serves a decode
  // bucket (20), fa2_paged over it past 16 query rows (decode_fwd's 0 there).
  int PreferenceFor(const Problem& p) const override {
    if (!ServesOperation(p)) return -1;
    if (paged_) return p.layout == Layout::kPaged ? 10 : -1;
    return p.layout == Layout::kDense || p.layout == Layout::kVarlen ? preference() : -1;
  }
  bool reads_varlen() const override { return !paged_; }
  // Per-sequence key counts on the dense layout (flash_attn_with_kvcache's cache_seqlens with
  // more than decode_fwd's 16 query rows), and the paged layout's lengths.
  bool reads_seqlens_k() const override { return true; }

  // mma.sync, ldmatrix and cp.async: the arch table's cp_async targets (sm_80 on).
  std::string UnservedFor(const ProblemClass& cls, const Target& target) const override {
    (void)cls;
    return NeedsCpAsync(target);
  }

  int64_t SharedMemoryBytes(const Variant& v) const override {
    const Fa2Params p(v);
    return detail::SharedMemoryBytes(p.block_m, p.block_n, v.head_dim, p.stages);
  }
  int Threads(const Variant& v) const override { return v.Param("w") * 32; }

  Status CheckRules(const Variant& v, int64_t max_smem_bytes) const override {
    const Fa2Params p(v);
    // Split-Q: each warp owns whole 16-row mma tiles of the query block.
    if (p.block_m % (p.warps * 16) != 0) {
      return Status(Code::kInvalidArgument, "block_m (" + std::to_string(p.block_m) +
                                                ") must be a multiple of warps * 16 (" +
                                                std::to_string(p.warps * 16) + ")");
    }
    const int64_t smem = SharedMemoryBytes(v);
    if (smem > max_smem_bytes) {
      return Status(Code::kInvalidArgument,
                    "shared memory (" + std::to_string(smem) + " bytes for block_m " + std::to_string(p.block_m) +
                        ", block_n " + std::to_string(p.block_n) + ", stages " + std::to_string(p.stages) +
                        ", head_dim " + std::to_string(v.head_dim) + ") exceeds max_smem_bytes (" +
                        std::to_string(max_smem_bytes) + ")");
    }
    return Status::Ok();
  }

  // FA-2's own starting tiles (d <= 64: 128x128 w4; d <= 128: 128x64 w4; else 64x64 w4;
  // stages 2), downgraded until the shared memory fits: cheapest losses first (prefetch
  // depth, then key tile, then query tile).
  Variant Default(const ProblemClass& cls, const Target& target) const override {
    int bm = 64, bn = 64, w = 4, s = 2;
    if (cls.head_dim <= 64) {
      bm = 128;
      bn = 128;
    } else if (cls.head_dim <= 128) {
      bm = 128;
      bn = 64;
    }
    Variant v = Fa2Variant(cls.dtype, cls.head_dim, cls.causal, bm, bn, w, s, paged_);
    while (SharedMemoryBytes(v) > target.max_smem_bytes) {
      if (s > 1) {
        --s;
      } else if (bn > 32) {
        bn /= 2;
      } else if (bm > 64) {
        bm /= 2;
      } else {
        break;  // nothing smaller exists; Check reports it
      }
      v = Fa2Variant(cls.dtype, cls.head_dim, cls.causal, bm, bn, w, s, paged_);
    }
    return v;
  }

  std::string Prologue(const Variant& v) const override {
    const Fa2Params p(v);
    return detail::PrologueBuilder(v.Uri())
        .Bool("kBf16", v.dtype == DType::kBF16, "false = fp16")
        .Int("kHeadDim", v.head_dim)
        .Int("kBlockM", p.block_m)
        .Int("kBlockN", p.block_n)
        .Int("kWarps", p.warps)
        .Int("kStages", p.stages)
        .Bool("kCausal", v.causal)
        .Bool("kPagedKv", paged_, "K/V through the block table")
        .Int("kSmemBytes", SharedMemoryBytes(v))
        .Finish(template_name());
  }

  void Pack(const Variant& v, const ForwardArgs& a, LaunchPacket* out) const override {
    const Fa2Params vp(v);
    // Grid: (ceil(Nq / block_m), Hq, B); the template's indexing agrees. Varlen: Nq is the
    // longest sequence; blocks past a shorter one's end exit at once.
    out->grid[0] = unsigned((a.problem.seqlen_q + vp.block_m - 1) / vp.block_m);
    out->grid[1] = unsigned(a.problem.heads_q);
    out->grid[2] = unsigned(a.problem.batch);
    out->block[0] = unsigned(vp.warps * 32);
    out->block[1] = 1;
    out->block[2] = 1;
    out->smem_bytes = uint32_t(SharedMemoryBytes(v));
    out->tensor_maps = 0;
    out->SetArgs(detail::MakeKernelParams(a));
  }

  std::string Describe(const Variant& v) const override {
    const Fa2Params p(v);
    return std::to_string(p.block_m) + "x" + std::to_string(p.block_n) + " w" + std::to_string(p.warps) + " s" +
           std::to_string(p.stages) + (paged_ ? " paged" : "");
  }

  // log2 ratio of tile sizes and warps, plus the stage difference.
  double Distance(const Variant& a, const Variant& b) const override {
    const Fa2Params x(a), y(b);
    return std::abs(std::log2(double(x.block_m) / y.block_m)) + std::abs(std::log2(double(x.block_n) / y.block_n)) +
           std::abs(std::log2(double(x.warps) / y.warps)) + std::abs(x.stages - y.stages);
  }

  double PriorScore(const Problem& problem, const Variant& v) const override {
    const Fa2Params p(v);
    // Registers per thread the template needs, estimated: the O and S accumulators of the
    // warp's 16-row MMA tiles, Q's fragments when it keeps them in registers, and ~64 for
    // addressing and softmax state. Past 255 the kernel spills, which costs more than any tile
    // choice gains.
    const int rows_per_warp = p.block_m / p.warps;
    const int m_tiles = std::max(1, rows_per_warp / 16);
    const int q_regs = m_tiles * v.head_dim <= 128 ? m_tiles * v.head_dim / 4 : 0;
    const int regs = m_tiles * (v.head_dim / 8) * 4 + m_tiles * (p.block_n / 8) * 4 + q_regs + 64;
    double score = regs > 255 ? 2.0 + (regs - 255) / 64.0 : 0.0;
    // More rows per warp reuse each K/V fragment read from shared memory for more MMAs; longer
    // K/V steps amortise the per-step softmax bookkeeping and barriers.
    score -= 0.5 * std::log2(rows_per_warp / 16.0);
    score -= 0.25 * std::log2(p.block_n / 32.0);
    if (p.stages == 1) score += 0.3;  // no prefetch: loads are exposed
    // Short query sequences leave SMs idle with 128-row tiles.
    if (problem.seqlen_q * problem.batch * problem.heads_q < 128LL * 132 * 2 && p.block_m == 128) score += 0.25;
    return score;
  }

 private:
  bool paged_;
};

}  // namespace

const Family& FamilyEntry_fa2_fwd() {
  static const Fa2Fwd family(false);
  return family;
}

const Family& Fa2PagedFamily() {
  static const Fa2Fwd family(true);
  return family;
}

}  // namespace flashtune
