// SameGpuModel: the one rule for whose tuned winners serve a GPU.
#include <gtest/gtest.h>

#include "flashtune/database.h"

namespace flashtune {
namespace {

TEST(SameGpuModel, IgnoresTheUuidAndNothingElse) {
  const DeviceRecord h200{"NVIDIA H200", "GPU-a", 9, 0, 132, "13.0"};
  DeviceRecord other = h200;
  other.uuid = "GPU-b";  // another physical GPU of the model
  EXPECT_TRUE(SameGpuModel(h200, other));
  DeviceRecord d = h200;
  d.name = "NVIDIA H100 80GB HBM3";
  EXPECT_FALSE(SameGpuModel(h200, d));
  d = h200;
  d.cc_minor = 1;
  EXPECT_FALSE(SameGpuModel(h200, d));
  d = h200;
  d.sm_count = 114;  // a cut-down part of the same name
  EXPECT_FALSE(SameGpuModel(h200, d));
  d = h200;
  d.driver_version = "12.8";
  EXPECT_FALSE(SameGpuModel(h200, d));
}

}  // namespace
}  // namespace flashtune
