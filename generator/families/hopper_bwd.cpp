// The hopper_bwd family: space, prologue and launch packing of templates/hopper_bwd.cuh, a
// wgmma backward pass for sm_90a (TMA loads, a producer warpgroup and two consumer warpgroups;
// preprocess, main and convert kernels of one module, fa2_bwd's workspace layout).
// Parameters, in URI order: bn (keys per thread block: 128, 64 per consumer warpgroup), bm
// (queries per step: 64), det (0: dQ tiles are added by bulk reduction in whatever order blocks
// run; 1: in key block order through the workspace's counters, by a dQ writer warp group off the
// consumers' path, bit-identical runs; 2, causal only: the same with each query block's turns
// from the last key block down; the runtime sets det and dg from BackwardArgs::deterministic
// (SetDeterminism below), the tuner searches det 0 only), dg (deterministic mode: key blocks
// of a head dispatched that many at a time; 0: all together), dqw (1: det 0's dQ tiles added by
// the writer warps too, the default; 0: by the consumers).
// Head dims 64, 96 (on d128's tiles: TMA reads the columns past 96 as zeros; dQ, dK and dV at the
// data's width) and 128, bf16 / fp16, causal or not, GQA / MQA, dense strides TMA can describe.
//
// Searched by default and the untuned choice where it serves (preference 10, as hopper_fwd):
// 1.40-1.45x fa2_bwd's default at d128 and 1.05-1.09x at d64 in session 16's A/B (bf16 B4
// N4096, docs/perf-notes.md "hopper_bwd round 1"). Strides TMA cannot describe go to fa2_bwd
// (the launcher's backward fallback).
#include <string>

#include "flashtune/arch.h"
#include "flashtune/problem_set.h"
#include "flashtune/space.h"
#include "generator/backward_family.h"
#include "generator/backward_workspace.h"
#include "generator/family.h"
#include "generator/hopper_fwd_pack.h"
#include "generator/prologue.h"
#include "templates/ft_kernel_abi.cuh"

namespace flashtune {

namespace {

constexpr int kPreRows = 16;     // query rows per preprocess / convert block (the template's kPreRows)
constexpr int kPreThreads = 128;  // their threads (the template's kPreThreads)
constexpr int kThreads = 384;     // main kernel: producer + two consumer warpgroups

Status Unsupported(std::string message) { return Status(Code::kUnsupported, std::move(message)); }

// The head dim of a variant's tiles: d96 runs on d128's.
int TileHeadDim(int head_dim) { return head_dim == 96 ? 128 : head_dim; }

// The template's layout: 1 KB alignment slack, K and V, two Q and two d_o stages (at the tiles'
// head dim), the 16-bit dSᵀ tile, the fp32 dQ tile (64 rows of the data's D floats, padded by 8
// but in deterministic mode; two buffers with the dQ writer), lse / delta stages, five mbarriers.
int64_t BwdSmemBytes(int head_dim, int block_n, int block_m, bool writer, bool deterministic) {
  const int tile = TileHeadDim(head_dim);
  return 1024 + int64_t(2) * block_n * tile * 2 + int64_t(4) * block_m * tile * 2 + int64_t(block_n) * block_m * 2 +
         int64_t(writer ? 2 : 1) * 64 * (head_dim + (deterministic ? 0 : 8)) * 4 + 4 * block_m * 4 + 5 * 8;
}
bool ServesHeadDim(int head_dim) { return head_dim == 64 || head_dim == 96 || head_dim == 128; }
// The writer warps add dQ in deterministic mode, and with dqw 1 without turns.
bool DqWriter(const Variant& v) { return v.Param("det") != 0 || v.Param("dqw") != 0; }

class HopperBwd final : public BackwardFamily {
 public:
  std::string_view name() const override { return "hopper_bwd"; }
  std::string_view template_name() const override { return "hopper_bwd.cuh"; }
  const std::vector<ParamAxis>& axes() const override {
    static const std::vector<ParamAxis> kAxes = {
        {"bn", "block_n (bn)", {128}, {128}},
        {"bm", "block_m (bm)", {64}, {64}},
        {"det", "deterministic (det)", {0, 1, 2}, {0}},
        // Deterministic mode: key blocks of a head dispatched c at a time (templates/hopper_bwd.cuh
        // "Dispatch groups"; 0: all of a head's together), so that the turns of a query block
        // wait in chains of c blocks.
        {"dg", "dispatch group (dg)", {0, 2, 4, 8, 16}, {0}},
        // dQ tiles added by the producer warpgroup's idle warps instead of the consumers (always
        // in deterministic mode), the consumers going on to the next step: 0.83-0.84x dqw 0's
        // time at d128 (session 17, B4 N 4096); the default.
        {"dqw", "dQ writer warps (dqw)", {0, 1}, {0, 1}},
    };
    return kAxes;
  }

  // wgmma and setmaxnreg exist only in arch-specific ("a") targets of wgmma GPUs.
  std::string UnservedFor(const ProblemClass& cls, const Target& target) const override {
    if (std::string arch = NeedsWgmma(target); !arch.empty()) return arch;
    if (!ServesHeadDim(cls.head_dim)) return "head dims 64, 96 and 128 only";
    return "";
  }
  int preference() const override { return 10; }

  int64_t SharedMemoryBytes(const Variant& v) const override {
    return BwdSmemBytes(v.head_dim, v.Param("bn"), v.Param("bm"), DqWriter(v), v.Param("det") != 0);
  }
  int Threads(const Variant& v) const override {
    (void)v;
    return kThreads;
  }

  Status CheckRules(const Variant& v, int64_t max_smem_bytes) const override {
    if (!ServesHeadDim(v.head_dim))
      return Status(Code::kInvalidArgument,
                    "hopper_bwd: head_dim (" + std::to_string(v.head_dim) + ") must be 64, 96 or 128");
    if (v.Param("dg") != 0 && v.Param("det") == 0)
      return Status(Code::kInvalidArgument,
                    "hopper_bwd: dg (" + std::to_string(v.Param("dg")) +
                        ") orders deterministic turns; det 0 takes dg 0");
    if (v.Param("det") == 2 && !v.causal)
      return Status(Code::kInvalidArgument,
                    "hopper_bwd: det 2 (descending turns) orders causal blocks; a non-causal class uses det 1");
    const int64_t smem = SharedMemoryBytes(v);
    if (smem > max_smem_bytes)
      return Status(Code::kInvalidArgument, "hopper_bwd: shared memory (" + std::to_string(smem) + " bytes at head_dim " +
                                                std::to_string(v.head_dim) + ") exceeds max_smem_bytes (" +
                                                std::to_string(max_smem_bytes) + ")");
    return Status::Ok();
  }

  Variant Default(const ProblemClass& cls, const Target& target) const override {
    (void)target;
    const int values[] = {128, 64, 0, 0, 1};
    return MakeVariant(cls, values);
  }

  std::string Prologue(const Variant& v) const override {
    return detail::PrologueBuilder(v.Uri())
        .Bool("kBf16", v.dtype == DType::kBF16, "false = fp16")
        .Int("kHeadDim", TileHeadDim(v.head_dim))
        .Int("kHeadDimData", v.head_dim)
        .Int("kBlockN", v.Param("bn"))
        .Int("kBlockM", v.Param("bm"))
        .Bool("kCausal", v.causal)
        .Bool("kDeterministic", v.Param("det") != 0, "dQ added in key block order")
        .Bool("kTurnsDescending", v.Param("det") == 2, "causal turns from the last key block down")
        .Int("kDispatchGroup", v.Param("dg"))
        .Bool("kDqWriter", DqWriter(v), "dQ added by the producer warpgroup's writer warps")
        .Int("kSmemBytes", SharedMemoryBytes(v))
        .Finish(template_name());
  }

  // TMA reads q, k, v and d_o: each stride of a dimension longer than 1 a nonzero multiple of
  // 16 bytes. o, dq, dk, dv go through plain loads and stores. Deterministic calls run det 1
  // or 2 (SetDeterminism).
  Status CanRunBackward(const Variant& v, const BackwardArgs& a) const override {
    (void)v;
    const Problem& f = a.forward.problem;
    for (Status s : {detail::CheckHopperTmaStrides("hopper_bwd", "q", a.forward.q_strides, f.batch, f.seqlen_q, f.heads_q),
                     detail::CheckHopperTmaStrides("hopper_bwd", "k", a.forward.k_strides, f.batch, f.seqlen_k, f.heads_kv),
                     detail::CheckHopperTmaStrides("hopper_bwd", "v", a.forward.v_strides, f.batch, f.seqlen_k, f.heads_kv),
                     detail::CheckHopperTmaStrides("hopper_bwd", "d_o", a.d_o_strides, f.batch, f.seqlen_q, f.heads_q)}) {
      if (!s.ok()) return Unsupported(s.message());
    }
    return Status::Ok();
  }

  // Three launches: preprocess (the URI kernel), main, convert; one parameter struct whose
  // four tensor maps the JIT layer encodes before the first.
  void PackBackward(const Variant& v, const BackwardArgs& a, LaunchPacket* out) const override {
    const ForwardArgs& fa = a.forward;
    const Problem& f = fa.problem;
    const int block_n = v.Param("bn"), block_m = v.Param("bm");
    ft_abi::HopperBwdParams hp{};
    hp.base = detail::Fa2BwdParamsFor(a);

    out->tensor_maps = 4;
    out->maps[0] = detail::HopperTensorMapFor(offsetof(ft_abi::HopperBwdParams, tmap_q), f.dtype, fa.q, fa.q_strides,
                                              f.batch, f.seqlen_q, f.heads_q, f.head_dim, block_m);
    out->maps[1] = detail::HopperTensorMapFor(offsetof(ft_abi::HopperBwdParams, tmap_k), f.dtype, fa.k, fa.k_strides,
                                              f.batch, f.seqlen_k, f.heads_kv, f.head_dim, block_n);
    out->maps[2] = detail::HopperTensorMapFor(offsetof(ft_abi::HopperBwdParams, tmap_v), f.dtype, fa.v, fa.v_strides,
                                              f.batch, f.seqlen_k, f.heads_kv, f.head_dim, block_n);
    out->maps[3] = detail::HopperTensorMapFor(offsetof(ft_abi::HopperBwdParams, tmap_do), f.dtype, a.d_o, a.d_o_strides,
                                              f.batch, f.seqlen_q, f.heads_q, f.head_dim, block_m);

    detail::SetBackwardLaunches(f, kPreRows, kPreThreads, block_n, kThreads, uint32_t(SharedMemoryBytes(v)), out);
    out->SetArgs(hp);
  }

  // Deterministic calls (session 18's A/B, docs/perf-notes.md "hopper_bwd det: dispatch groups";
  // bf16 FA-2 grid, time over the default's): causal runs det 2 (descending turns: 1.02-1.08x);
  // the others det 1 with key blocks dispatched a quarter of the head's at a time (1.06-1.09x at
  // 8 and 32 key blocks, where all at once cost 1.12-1.22x), all at once from 128 key blocks
  // (1.02-1.05x). The head's key blocks (of the variant's bn keys) are counted at the top of the
  // problem's key bucket, so that every call of a bucket (one launch-cache entry) runs the same
  // kernel.
  bool SetDeterminism(Variant& v, const Problem& problem, bool deterministic) const override {
    v.SetParam("det", !deterministic ? 0 : problem.causal ? 2 : 1);
    v.SetParam("dg", deterministic && !problem.causal ? DispatchGroupFor(problem, v.Param("bn")) : 0);
    return true;
  }
  static int DispatchGroupFor(const Problem& problem, int block_n) {
    const int64_t key_blocks = ((int64_t(1) << BucketOf(problem).seqlen_k_bucket) + block_n - 1) / block_n;
    if (key_blocks > 64 || key_blocks < 4) return 0;
    int dg = 2;
    while (dg * 2 <= key_blocks / 4 && dg < 16) dg *= 2;
    return dg;
  }

  std::string Describe(const Variant& v) const override {
    return std::to_string(v.Param("bn")) + "x" + std::to_string(v.Param("bm")) + " wgmma" +
           (TileHeadDim(v.head_dim) != v.head_dim ? " on d" + std::to_string(TileHeadDim(v.head_dim)) + "'s tiles" : "") +
           (v.Param("det") == 1 ? " deterministic" : v.Param("det") == 2 ? " deterministic, descending turns" : "") +
           (v.Param("dg") ? ", dispatched " + std::to_string(v.Param("dg")) + " key blocks a head at a time" : "") +
           (v.Param("dqw") && !v.Param("det") ? " writer" : "");
  }
};

}  // namespace

const Family& FamilyEntry_hopper_bwd() {
  static const HopperBwd family;
  return family;
}

}  // namespace flashtune
