// The backward pass on the family seam without a GPU: BackwardArgs checks, the workspace size,
// fa2_bwd's space (backward classes only), its three-kernel launch packet, the operation in
// buckets, and its sources compiling for sm_80 and sm_90a with NVRTC.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>

#include "flashtune/arch.h"
#include "flashtune/backward_args.h"
#include "flashtune/compiler.h"
#include "flashtune/problem_set.h"
#include "flashtune/source.h"
#include "flashtune/space.h"
#include "generator/embedded_templates.h"
#include "generator/family.h"
#include "templates/ft_kernel_abi.cuh"
#include "tests/support/backward_args_fixture.h"

namespace flashtune {
namespace {


Problem Shape() { return Problem{DType::kBF16, 64, true, 2, 100, 200, 8, 2, Operation::kBackward}; }

BackwardArgs Good() { return testing::PlaceholderBackwardArgs(Shape()); }

void ExpectInvalid(const BackwardArgs& a, const std::string& fragment) {
  Status s = ValidateBackwardArgs(a);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << fragment;
  EXPECT_NE(s.message().find(fragment), std::string::npos) << "got: " << s.message();
}

TEST(BackwardArgs, GoodArgumentsPass) {
  EXPECT_TRUE(ValidateBackwardArgs(Good()).ok()) << ValidateBackwardArgs(Good()).ToString();
  EXPECT_EQ(Good().problem().operation, Operation::kBackward);
}

TEST(BackwardArgs, EachMissingOrBadArgumentIsNamed) {
  BackwardArgs a = Good();
  a.forward.lse = nullptr;
  ExpectInvalid(a, "forward.lse");
  a = Good();
  a.d_o = nullptr;
  ExpectInvalid(a, "d_o must not be null");
  a = Good();
  a.dk = static_cast<char*>(a.dk) + 2;
  ExpectInvalid(a, "dk must be 16-byte aligned");
  a = Good();
  a.dv_strides.seq = 3;
  ExpectInvalid(a, "dv_strides.seq");
  a = Good();
  a.forward.workspace = nullptr;
  a.forward.workspace_bytes = 0;
  ExpectInvalid(a, "forward.workspace must not be null");
  a = Good();
  a.forward.workspace = static_cast<char*>(a.forward.workspace) + 8;
  ExpectInvalid(a, "workspace must be 16-byte aligned");
  a = Good();
  a.forward.workspace_bytes -= 1;
  ExpectInvalid(a, "forward.workspace_bytes");
  a = Good();
  a.forward.problem.heads_kv = 3;  // the forward part is checked like a forward call
  ExpectInvalid(a, "heads_kv");
  a = Good();
  a.forward.problem.layout = Layout::kVarlen;  // dense only
  ExpectInvalid(a, "forward.problem.layout (varlen)");
  // The gradients are written: their elements must not overlap (dk shared by two K/V heads would
  // be a race); d_o is read, and may (a broadcast gradient).
  a = Good();
  a.dk_strides.head = 0;
  ExpectInvalid(a, "dk_strides.head (0) makes dk's elements overlap");
  a = Good();
  a.dq_strides.seq = 8;
  ExpectInvalid(a, "dq_strides.seq (8) makes dq's elements overlap");
  a = Good();
  a.d_o_strides.batch = 0;
  EXPECT_TRUE(ValidateBackwardArgs(a).ok()) << ValidateBackwardArgs(a).ToString();
}

TEST(BackwardArgs, WorkspaceHoldsAccumulatorDeltaAndCounters) {
  const Problem p = Shape();
  const int64_t rows = p.batch * p.heads_q * p.seqlen_q;  // 1600
  const int64_t counters = p.batch * p.heads_q * ((p.seqlen_q + 15) / 16);
  const int64_t bytes = BackwardWorkspaceBytes(p);
  EXPECT_GE(bytes, rows * p.head_dim * 4 + rows * 4 + counters * 4);
  EXPECT_EQ(bytes % 256, 0);
  EXPECT_LT(bytes, rows * p.head_dim * 4 + rows * 4 + counters * 4 + 3 * 256);
  Problem bad = p;
  bad.heads_kv = 3;
  EXPECT_EQ(BackwardWorkspaceBytes(bad), 0);
}

TEST(BackwardBuckets, OperationIsPartOfTheKey) {
  Problem fwd = Shape();
  fwd.operation = Operation::kForward;
  const BucketKey b = BucketOf(Shape()), f = BucketOf(fwd);
  EXPECT_NE(b, f);
  EXPECT_EQ(BucketString(f).rfind("bf16/", 0), 0u);  // forward keys stored before are unchanged
  EXPECT_EQ(BucketString(b), "bwd/" + BucketString(f));
  auto parsed = ParseBucketKey(BucketString(b));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(*parsed, b);
  EXPECT_EQ(BucketDistance(b, f), -1);
  EXPECT_FALSE(ParseBucketKey("bwd/bf16/d64").ok());
  EXPECT_DOUBLE_EQ(Shape().Flops(), 2.5 * fwd.Flops());
}

TEST(BackwardBuckets, OperationNamesParse) {
  EXPECT_EQ(*ParseOperation("bwd"), Operation::kBackward);
  EXPECT_EQ(*ParseOperation("backward"), Operation::kBackward);
  EXPECT_EQ(*ParseOperation("fwd"), Operation::kForward);
  auto bad = ParseOperation("sideways", "--operation");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--operation 'sideways' is not an operation; allowed: fwd, bwd"),
            std::string::npos)
      << bad.status().message();
  EXPECT_EQ(OperationName(Operation::kBackward), "bwd");
  EXPECT_NE(Shape().ToString().find(" bwd"), std::string::npos);
}

TEST(Fa2BwdFamily, ServesBackwardClassesOnly) {
  const ProblemClass bwd{DType::kF16, 128, false, Operation::kBackward};
  const ProblemClass fwd{DType::kF16, 128, false, Operation::kForward};
  auto space = EnumerateSpace(bwd);
  ASSERT_TRUE(space.ok()) << space.status().ToString();
  ASSERT_FALSE(space->empty());
  // On sm_90a both backward families are searched (hopper_bwd: wgmma, d64 and d128).
  std::set<std::string> families;
  for (const Variant& v : *space) {
    families.insert(v.family);
    EXPECT_EQ(v.Param("det"), 0);  // the tuner searches the default mode
    EXPECT_EQ(ClassOf(v), bwd);
  }
  EXPECT_EQ(families, (std::set<std::string>{"fa2_bwd", "hopper_bwd"}));
  auto forward = EnumerateSpace(fwd);
  ASSERT_TRUE(forward.ok());
  for (const Variant& v : *forward) EXPECT_NE(v.family.substr(v.family.size() - 4), "_bwd");
  // The untuned choice: hopper_bwd where it serves, fa2_bwd elsewhere (sm_80, d256).
  EXPECT_EQ(DefaultVariant(bwd).family, "hopper_bwd");
  EXPECT_EQ(DefaultVariant(bwd, MaxSharedMemoryForArch("sm_80"), "sm_80").family, "fa2_bwd");
  EXPECT_EQ(DefaultVariant(ProblemClass{DType::kF16, 256, false, Operation::kBackward}).family, "fa2_bwd");
  EXPECT_NE(DefaultVariant(fwd).family, "fa2_bwd");
  // Every default fits the sm_80 limit too.
  for (int d : kSupportedHeadDims) {
    const ProblemClass cls{DType::kBF16, d, true, Operation::kBackward};
    const Variant v = DefaultVariant(cls, MaxSharedMemoryForArch("sm_80"), "sm_80");
    EXPECT_TRUE(CheckVariant(v, MaxSharedMemoryForArch("sm_80")).ok()) << v.Uri();
  }
}

// The searched space leaves out the tile that spilled 40 KB and ran 30-70x the family's best
// (d128 128 x 128 with 4 warps), and keeps the one next to it that ran 1.45x (d64's); the tile
// itself stays valid, for a user who names it.
TEST(Fa2BwdFamily, SpaceLeavesOutTheTileThatCannotHoldItsAccumulators) {
  auto tiles = [](int head_dim) {
    std::set<std::string> out;
    auto space = EnumerateSpace(ProblemClass{DType::kBF16, head_dim, false, Operation::kBackward});
    EXPECT_TRUE(space.ok()) << space.status().ToString();
    if (!space.ok()) return out;
    for (const Variant& v : *space)
      if (v.family == "fa2_bwd")
        out.insert(std::to_string(v.Param("bc")) + "x" + std::to_string(v.Param("br")) + "w" + std::to_string(v.Param("w")));
    return out;
  };
  const std::set<std::string> d128 = tiles(128), d64 = tiles(64);
  EXPECT_EQ(d128.count("128x128w4"), 0u);
  EXPECT_EQ(d128.count("128x128w8"), 1u);  // the same rows with 8 warps: half the accumulators a thread
  EXPECT_EQ(d128.count("128x64w4"), 1u);
  EXPECT_EQ(d64.count("128x128w4"), 1u);
  auto named = Variant::FromUri("fa2_bwd_bf16_d128_bc128_br128_w4_s1_det0_dqc16_dqv2_dqs0_lay1_full");
  ASSERT_TRUE(named.ok()) << named.status().ToString();
  EXPECT_TRUE(CheckVariant(*named, MaxSharedMemoryForArch("sm_90a")).ok()) << named->Uri();
}

TEST(Fa2BwdFamily, UriRoundTripsAndRulesAreChecked) {
  auto v = Variant::FromUri("fa2_bwd_bf16_d128_bc128_br64_w8_s2_det1_dqc64_dqv2_dqs0_lay1_causal");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->Uri(), "fa2_bwd_bf16_d128_bc128_br64_w8_s2_det1_dqc64_dqv2_dqs0_lay1_causal");
  auto bad = Variant::FromUri("fa2_bwd_bf16_d128_bc64_br64_w8_s2_det0_dqc16_dqv1_dqs0_lay1_causal");  // 64 keys over 8 warps
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("block_n (64) must be a multiple of warps * 16"), std::string::npos)
      << bad.status().message();
  auto wide = Variant::FromUri("fa2_bwd_bf16_d96_bc64_br64_w4_s2_det0_dqc64_dqv2_dqs0_lay1_full");  // 64 columns of 96
  ASSERT_FALSE(wide.ok());
  EXPECT_NE(wide.status().message().find("dq_cols (64) must divide head_dim (96)"), std::string::npos)
      << wide.status().message();
  // FA-2's 2-D warp grids exist for 128 keys over 8 warps at d64 / d128 only.
  EXPECT_TRUE(Variant::FromUri("fa2_bwd_bf16_d128_bc128_br64_w8_s2_det0_dqc64_dqv2_dqs1_lay2_full").ok());
  EXPECT_TRUE(Variant::FromUri("fa2_bwd_f16_d64_bc128_br128_w8_s1_det1_dqc64_dqv2_dqs0_lay2_causal").ok());
  for (const char* uri : {"fa2_bwd_bf16_d128_bc64_br64_w4_s2_det0_dqc64_dqv2_dqs0_lay2_full",
                          "fa2_bwd_bf16_d128_bc128_br128_w8_s1_det0_dqc64_dqv2_dqs0_lay2_full",
                          "fa2_bwd_bf16_d96_bc128_br64_w8_s2_det0_dqc32_dqv2_dqs0_lay2_full",
                          "fa2_bwd_bf16_d64_bc128_br64_w8_s2_det0_dqc16_dqv2_dqs0_lay2_full"}) {
    auto grid = Variant::FromUri(uri);
    ASSERT_FALSE(grid.ok()) << uri;
    EXPECT_NE(grid.status().message().find("layout 2 (FA-2's warp grids) needs block_n 128, warps 8"),
              std::string::npos)
        << grid.status().message();
  }
}

TEST(Fa2BwdFamily, PacksThreeKernelsIntoOnePacket) {
  const BackwardArgs a = Good();
  Variant v = DefaultVariant(ClassOf(a.problem()), MaxSharedMemoryForArch("sm_80"), "sm_80");  // fa2_bwd
  ASSERT_EQ(v.family, "fa2_bwd");
  LaunchPacket packet;
  ASSERT_TRUE(PackBackward(v, a, &packet).ok());
  const auto* p = reinterpret_cast<const ft_abi::Fa2BwdParams*>(packet.args);
  EXPECT_EQ(packet.arg_bytes, sizeof(ft_abi::Fa2BwdParams));
  EXPECT_EQ(packet.grid[0], 7u);  // preprocess: ceil(100 / 16) row groups
  EXPECT_EQ(packet.grid[1], 8u);
  EXPECT_EQ(packet.grid[2], 2u);
  ASSERT_EQ(packet.next_steps, 2);
  EXPECT_EQ(packet.next[0].kernel, 0);  // main: one block per key block, K/V head, batch
  EXPECT_EQ(packet.next[0].grid[0], unsigned((200 + v.Param("bc") - 1) / v.Param("bc")));
  EXPECT_EQ(packet.next[0].grid[1], 2u);
  EXPECT_EQ(packet.next[0].smem_bytes, uint32_t(SharedMemoryBytes(v)));
  EXPECT_EQ(packet.next[1].kernel, 1);  // convert
  EXPECT_EQ(packet.next[1].grid[0], 7u);
  EXPECT_EQ(p->d_o, a.d_o);
  EXPECT_EQ(p->dq_accum, reinterpret_cast<const float*>(a.forward.workspace));
  EXPECT_GT(reinterpret_cast<const char*>(p->delta), static_cast<const char*>(a.forward.workspace));
  EXPECT_EQ(p->counters_per_head, 7);
  EXPECT_FLOAT_EQ(p->scale, 0.125f);
  EXPECT_EQ(p->dk_stride[1], 2 * 64);
}

TEST(Fa2BwdFamily, ForwardAndBackwardVariantsAreNotInterchangeable) {
  const BackwardArgs b = Good();
  Problem fwd_problem = b.problem();
  fwd_problem.operation = Operation::kForward;
  LaunchPacket packet;
  Status s = PackForward(DefaultVariant(ClassOf(b.problem())), b.forward, &packet);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("computes the backward pass"), std::string::npos) << s.message();
  s = PackBackward(DefaultVariant(ClassOf(fwd_problem)), b, &packet);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("computes the forward pass"), std::string::npos) << s.message();
}

TEST(Fa2BwdSource, SampleCompilesForSm80AndSm90a) {
  Compiler compiler(Compiler::Options{"-", 2});
  std::vector<CompileRequest> requests;
  const ProblemClass classes[] = {{DType::kBF16, 128, true, Operation::kBackward},
                                  {DType::kF16, 64, false, Operation::kBackward}};
  // Each class's default and deterministic variants (128 keys over 8 warps), one on each arch
  // (4 compiles: the main kernel is the slow one for ptxas); each arch gets both warp layouts
  // and the staged dQ tile on and off: its bulk reductions (sm_90a, under the deterministic
  // counter) and its red.add fallback (sm_80).
  bool sm80 = true;
  const int kStaged[] = {0, 1, 1, 0}, kLayout[] = {1, 2, 2, 1};  // per request, in order
  for (const ProblemClass& cls : classes) {
    const Variant fa2 = DefaultVariant(cls, MaxSharedMemoryForArch("sm_80"), "sm_80");
    Variant det = fa2;
    det.SetParam("det", 1);
    for (Variant v : {fa2, det}) {
      v.SetParam("bc", 128);
      v.SetParam("br", 64);
      v.SetParam("w", 8);
      v.SetParam("dqs", kStaged[requests.size()]);
      v.SetParam("lay", kLayout[requests.size()]);
      auto source = GenerateSource(v);
      ASSERT_TRUE(source.ok()) << source.status().ToString();
      requests.push_back({source->uri, source->text, sm80 ? "sm_80" : "sm_90a", {}});
      sm80 = !sm80;
    }
  }
  auto cubins = compiler.CompileMany(requests);
  for (size_t i = 0; i < cubins.size(); ++i)
    EXPECT_TRUE(cubins[i].ok()) << requests[i].name << " " << requests[i].arch << ": " << cubins[i].status().ToString();
}

TEST(Fa2BwdSource, TemplateRejectsWarpsThatDoNotSplitTheKeyBlock) {
  Variant v = DefaultVariant(ProblemClass{DType::kBF16, 64, false, Operation::kBackward},
                             MaxSharedMemoryForArch("sm_80"), "sm_80");  // fa2_bwd
  v.SetParam("bc", 64);
  v.SetParam("w", 8);
  ASSERT_FALSE(CheckVariant(v).ok());
  const std::string text = GeneratePrologue(v) + *ExpandedTemplate("fa2_bwd.cuh");
  Compiler compiler(Compiler::Options{"-", 1});
  auto result = compiler.Compile({"bad_variant", text, "sm_90a", {}});
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().log().find("block_n must be a multiple of 16 * warps"), std::string::npos)
      << result.status().log();
}

}  // namespace
}  // namespace flashtune
