// The planner's backward routing: a deterministic call whose planned family has no deterministic
// mode, and a call the planned family cannot run, go to another family's default.
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

TEST(PlannerBackward, OnlyFamiliesWithADeterministicModeAcceptDetOne) {
  const Variant hopper = DefaultVariant(ClassOf(Bwd(128)));
  ASSERT_EQ(hopper.family, "hopper_bwd");
  EXPECT_TRUE(FamilyAllows(hopper, "det", 0));
  EXPECT_FALSE(FamilyAllows(hopper, "det", 1));
  EXPECT_FALSE(FamilyAllows(hopper, "no_such_param", 0));
  const Variant fa2 = DefaultVariant(ClassOf(Bwd(128)), MaxSharedMemoryForArch("sm_80"), "sm_80");
  ASSERT_EQ(fa2.family, "fa2_bwd");
  EXPECT_TRUE(FamilyAllows(fa2, "det", 1));
}

TEST(PlannerBackward, DeterministicCallOfAHopperPlanGetsFa2sDeterministicDefault) {
  const DeviceState device = H200();
  for (int d : {64, 128}) {
    const Problem p = Bwd(d);
    const Variant planned = DefaultVariant(ClassOf(p));
    ASSERT_EQ(planned.family, "hopper_bwd") << d;
    auto det = Planner::DeterministicVariant(device, p, planned);
    ASSERT_TRUE(det.ok()) << det.status().ToString();
    EXPECT_EQ(det->family, "fa2_bwd");
    EXPECT_EQ(det->Param("det"), 1);
    EXPECT_TRUE(CheckVariant(*det, device.max_smem_bytes).ok()) << det->Uri();
  }
}

TEST(PlannerBackward, CallTheHopperFamilyCannotRunFallsBackToFa2) {
  const DeviceState device = H200();
  const Problem p = Bwd(128);
  const Variant planned = DefaultVariant(ClassOf(p));
  ASSERT_EQ(planned.family, "hopper_bwd");
  // A deterministic call: hopper_bwd refuses it when packing; the fallback keeps det 1.
  BackwardArgs det = Args(p);
  det.deterministic = true;
  LaunchPacket packet;
  packet.sm_count = 132;
  Status refused = PackBackward(planned, det, &packet);
  ASSERT_EQ(refused.code(), Code::kUnsupported) << refused.ToString();
  EXPECT_NE(refused.message().find("no deterministic mode"), std::string::npos) << refused.message();
  auto fallback = Planner::FallbackBackwardVariant(device, det, refused);
  ASSERT_TRUE(fallback.ok()) << fallback.status().ToString();
  EXPECT_EQ(fallback->family, "fa2_bwd");
  EXPECT_EQ(fallback->Param("det"), 1);
  // A batch stride of 0 (every batch reads the same d_o): legal for the call, not for TMA;
  // fa2_bwd, det 0.
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
