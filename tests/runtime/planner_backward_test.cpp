// The planner's backward routing: a deterministic call keeps its planned family where that family
// has a deterministic mode (hopper_bwd: det 1 or 2 and dispatch groups; fa2_bwd: det 1), and a call the planned
// family cannot run goes to another family's default, det as the call asks.
#include <gtest/gtest.h>

#include "flashtune/backward_args.h"
#include "flashtune/space.h"
#include "generator/backward_workspace.h"
#include "generator/family.h"
#include "runtime/planner.h"
#include "tests/support/backward_args_fixture.h"

namespace flashtune {
namespace {

DeviceState H200() {
  return DeviceState::FromOverride(DeviceRecord{"NVIDIA H200", "GPU-planner-bwd", 9, 0, 132, "13.0"}, 0);
}

Problem Bwd(int head_dim) { return Problem{DType::kBF16, head_dim, true, 2, 300, 300, 8, 2, Operation::kBackward}; }

BackwardArgs Args(const Problem& p) { return testing::PlaceholderBackwardArgs(p); }

TEST(PlannerBackward, BothBackwardFamiliesAcceptDetOne) {
  const Variant hopper = DefaultVariant(ClassOf(Bwd(128)));
  ASSERT_EQ(hopper.family, "hopper_bwd");
  EXPECT_TRUE(FamilyAllows(hopper, "det", 0));
  EXPECT_TRUE(FamilyAllows(hopper, "det", 1));
  EXPECT_TRUE(FamilyAllows(hopper, "det", 2));  // descending turns (causal)
  EXPECT_FALSE(FamilyAllows(hopper, "det", 3));
  EXPECT_FALSE(FamilyAllows(hopper, "no_such_param", 0));
  const Variant fa2 = DefaultVariant(ClassOf(Bwd(128)), MaxSharedMemoryForArch("sm_80"), "sm_80");
  ASSERT_EQ(fa2.family, "fa2_bwd");
  EXPECT_TRUE(FamilyAllows(fa2, "det", 1));
}

// As Launcher::Prepare routes a deterministic call: the planned variant made deterministic by its
// family (SetDeterminism) where it has the mode, else Planner::DeterministicVariant. hopper_bwd's
// policy: causal calls run det 2 (descending turns), the others det 1 with dispatch groups.
TEST(PlannerBackward, DeterministicCallOfAHopperPlanStaysHopperBwd) {
  const DeviceState device = H200();
  for (int d : {64, 96, 128})
    for (bool causal : {true, false}) {
      Problem p = Bwd(d);
      p.causal = causal;
      Variant planned = DefaultVariant(ClassOf(p));
      ASSERT_EQ(planned.family, "hopper_bwd") << d;
      ASSERT_TRUE(SetDeterminism(planned, p, true)) << d;
      EXPECT_EQ(planned.Param("det"), causal ? 2 : 1) << planned.Uri();
      EXPECT_EQ(planned.Param("dg"), causal ? 0 : 2) << planned.Uri();  // 300 keys: the bucket's 512, 4 key blocks
      EXPECT_TRUE(CheckVariant(planned, device.max_smem_bytes).ok()) << planned.Uri();
      BackwardArgs det = Args(p);
      det.deterministic = true;
      LaunchPacket packet;
      packet.sm_count = 132;
      Status packed = PackBackward(planned, det, &packet);
      EXPECT_TRUE(packed.ok()) << packed.ToString();
      // The planner's own pick for a deterministic call of this class is the same variant.
      auto chosen = Planner::DeterministicVariant(device, p, DefaultVariant(ClassOf(p)));
      ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
      EXPECT_EQ(chosen->Uri(), planned.Uri());
      // And a call that is not deterministic runs det 0, dg 0 again.
      ASSERT_TRUE(SetDeterminism(planned, p, false));
      EXPECT_EQ(planned.Uri(), DefaultVariant(ClassOf(p)).Uri());
    }
  // Where hopper_bwd does not serve (d256), fa2_bwd's deterministic default.
  const Problem p256 = Bwd(256);
  auto det256 = Planner::DeterministicVariant(device, p256, DefaultVariant(ClassOf(p256)));
  ASSERT_TRUE(det256.ok()) << det256.status().ToString();
  EXPECT_EQ(det256->family, "fa2_bwd");
  EXPECT_EQ(det256->Param("det"), 1);
}

// The dispatch group of a non-causal deterministic call: a quarter of the head's key blocks (128
// keys each) counted at the top of the key bucket, 2 .. 16; none (0) past 64 key blocks or under 4.
TEST(PlannerBackward, DispatchGroupFollowsTheKeyBucket) {
  const Variant planned = DefaultVariant(ClassOf(Bwd(128)));
  struct Case {
    int64_t seqlen_k;
    int dg;
  };
  for (Case c : {Case{300, 2}, Case{1024, 2}, Case{1025, 4}, Case{2048, 4}, Case{4096, 8}, Case{3000, 8},
                 Case{8192, 16}, Case{8193, 0}, Case{16384, 0}, Case{256, 0}, Case{1, 0}}) {
    Problem p = Bwd(128);
    p.causal = false;
    p.seqlen_k = c.seqlen_k;
    Variant v = planned;
    v.causal = false;
    ASSERT_TRUE(SetDeterminism(v, p, true));
    EXPECT_EQ(v.Param("dg"), c.dg) << "Nk " << c.seqlen_k;
    EXPECT_EQ(v.Param("det"), 1);
  }
  // fa2_bwd keeps the default policy: det only.
  Variant fa2 = DefaultVariant(ClassOf(Bwd(128)), MaxSharedMemoryForArch("sm_80"), "sm_80");
  ASSERT_TRUE(SetDeterminism(fa2, Bwd(128), true));
  EXPECT_EQ(fa2.Param("det"), 1);
}

TEST(PlannerBackward, CallTheHopperFamilyCannotRunFallsBackToFa2) {
  const DeviceState device = H200();
  const Problem p = Bwd(128);
  const Variant planned = DefaultVariant(ClassOf(p));
  ASSERT_EQ(planned.family, "hopper_bwd");
  // A batch stride of 0 (every batch reads the same d_o): legal for the call, not for TMA.
  // Deterministic: hopper_bwd det 1 refuses it when packing; the fallback is fa2_bwd det 1.
  BackwardArgs det = Args(p);
  det.deterministic = true;
  det.d_o_strides.batch = 0;
  Variant planned_det = planned;
  ASSERT_TRUE(SetDeterminism(planned_det, p, true));
  LaunchPacket packet;
  packet.sm_count = 132;
  Status refused = PackBackward(planned_det, det, &packet);
  ASSERT_EQ(refused.code(), Code::kUnsupported) << refused.ToString();
  EXPECT_NE(refused.message().find("TMA cannot describe d_o_strides.batch"), std::string::npos) << refused.message();
  auto fallback = Planner::FallbackBackwardVariant(device, det, refused);
  ASSERT_TRUE(fallback.ok()) << fallback.status().ToString();
  EXPECT_EQ(fallback->family, "fa2_bwd");
  EXPECT_EQ(fallback->Param("det"), 1);
  // Not deterministic: fa2_bwd, det 0.
  BackwardArgs odd = Args(p);
  odd.d_o_strides.batch = 0;
  refused = PackBackward(planned, odd, &packet);
  ASSERT_EQ(refused.code(), Code::kUnsupported) << refused.ToString();
  fallback = Planner::FallbackBackwardVariant(device, odd, refused);
  ASSERT_TRUE(fallback.ok()) << fallback.status().ToString();
  EXPECT_EQ(fallback->family, "fa2_bwd");
  EXPECT_EQ(fallback->Param("det"), 0);
  // The runnable call is not refused: nothing to fall back from.
  EXPECT_TRUE(PackBackward(planned, Args(p), &packet).ok());
}

}  // namespace
}  // namespace flashtune
