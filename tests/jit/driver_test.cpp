// CPU tests of the driver loader: they run where there is no NVIDIA driver.
#include "flashtune/driver.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

namespace flashtune {
namespace {

TEST(Driver, MissingLibraryIsNoDriverNamingIt) {
  Result<Driver*> driver = Driver::Load("/nonexistent/flashtune/libcuda.so.1");
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), Code::kNoDriver);
  const std::string m = driver.status().message();
  EXPECT_EQ(m.rfind("no CUDA driver found (", 0), 0u) << m;
  EXPECT_NE(m.find("/nonexistent/flashtune/libcuda.so.1"), std::string::npos) << m;
}

TEST(Driver, EnvironmentPointsTheLoaderElsewhere) {
  const char* old = std::getenv("FLASHTUNE_LIBCUDA");
  const std::string saved = old ? old : "";
  ::setenv("FLASHTUNE_LIBCUDA", "/nonexistent/flashtune/other-libcuda.so", 1);
  Result<Driver*> driver = Driver::Load();
  if (old) ::setenv("FLASHTUNE_LIBCUDA", saved.c_str(), 1); else ::unsetenv("FLASHTUNE_LIBCUDA");
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), Code::kNoDriver);
  EXPECT_NE(driver.status().message().find("other-libcuda.so"), std::string::npos);
}

TEST(Driver, LibraryWithoutDriverFunctionsIsNoDriver) {
  Result<Driver*> driver = Driver::Load("libm.so.6");
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), Code::kNoDriver);
  EXPECT_NE(driver.status().message().find("lacks cuInit"), std::string::npos) << driver.status().message();
}

TEST(Driver, ToolkitStubLibraryIsReportedAsUnusable) {
  // The toolkit ships a link-time stub libcuda whose cuInit always fails.
  const char* stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!std::filesystem::exists(stub)) GTEST_SKIP() << "no CUDA stub library at " << stub;
  Result<Driver*> driver = Driver::Load(stub);
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), Code::kNoDriver);
  EXPECT_NE(driver.status().message().find("cuInit failed: "), std::string::npos)
      << driver.status().message();
}

TEST(DeviceInfo, ArchIsTheExactTarget) {
  DeviceInfo info;
  info.cc_major = 9;
  info.cc_minor = 0;
  EXPECT_EQ(info.Arch(), "sm_90a");
  EXPECT_EQ(info.ComputeCapability(), "9.0");
  info.cc_major = 8;
  EXPECT_EQ(info.Arch(), "sm_80");
  info.cc_minor = 6;
  EXPECT_EQ(info.Arch(), "sm_86");
  info.cc_major = 10;
  info.cc_minor = 0;
  EXPECT_EQ(info.Arch(), "sm_100a");
}

}  // namespace
}  // namespace flashtune
