#include "tuner/device_space.h"

#include <gtest/gtest.h>

#include "flashtune/arch.h"

namespace flashtune {
namespace {

TEST(DeviceSpace, AGpusTargetIsItsArchAndThatArchsSharedMemory) {
  const SpaceOptions h200 = SpaceOptionsOn(DeviceRecord{"NVIDIA H200", "GPU-h", 9, 0, 132, "580"});
  EXPECT_EQ(h200.arch, "sm_90a");
  EXPECT_EQ(h200.max_smem_bytes, MaxSharedMemoryForArch("sm_90a"));
  const SpaceOptions a100 = SpaceOptionsOn(DeviceRecord{"NVIDIA A100", "GPU-a", 8, 0, 108, "580"});
  EXPECT_EQ(a100.arch, "sm_80");
  EXPECT_EQ(a100.max_smem_bytes, MaxSharedMemoryForArch("sm_80"));
  EXPECT_LT(a100.max_smem_bytes, h200.max_smem_bytes);
  // The rest of `base` is kept; no GPU (an empty record) keeps all of it.
  SpaceOptions base;
  base.arch = "sm_89";
  base.max_smem_bytes = 1000;
  base.families = {"fa2_fwd"};
  EXPECT_EQ(SpaceOptionsOn(DeviceRecord{"NVIDIA A100", "GPU-a", 8, 0, 108, "580"}, base).families, base.families);
  const SpaceOptions none = SpaceOptionsOn(DeviceRecord{}, base);
  EXPECT_EQ(none.arch, "sm_89");
  EXPECT_EQ(none.max_smem_bytes, 1000);
}

}  // namespace
}  // namespace flashtune
