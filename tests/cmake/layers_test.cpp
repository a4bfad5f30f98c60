// cmake/check_layers.cmake: the check CMake runs on every configure and build, run here on copies
// of the source tree with an include planted where it must not be.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/replay_fixture.h"

namespace flashtune {
namespace {

namespace fs = std::filesystem;

// A copy of the layered part of the source tree (the directories the check reads).
std::string CopyTree(const std::string& into) {
  const std::string root = into + "/tree";
  fs::create_directories(root);
  for (const char* dir : {"include", "base", "generator", "jit", "cache", "tuner", "runtime", "report", "cli"}) {
    const fs::path from = fs::path(FLASHTUNE_SOURCE_DIR) / dir;
    if (fs::exists(from)) fs::copy(from, fs::path(root) / dir, fs::copy_options::recursive);
  }
  return root;
}

void Append(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::app);
  out << text;
}

struct CheckResult {
  int rc = -1;
  std::string output;
};

CheckResult RunCheck(const std::string& root) {
  const std::string log = root + "/../check.log";
  CheckResult r;
  r.rc = testing::RunShell("'" FLASHTUNE_CMAKE_COMMAND "' -DROOT='" + root + "' -P '" FLASHTUNE_SOURCE_DIR
                           "/cmake/check_layers.cmake' > '" + log + "' 2>&1");
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  r.output = ss.str();
  return r;
}

TEST(LayerCheck, AcceptsTheSourceTree) {
  const std::string dir = testing::TempDir("layers_1");
  const CheckResult r = RunCheck(CopyTree(dir));
  EXPECT_EQ(r.rc, 0) << r.output;
}

TEST(LayerCheck, RefusesAnUpwardInclude) {
  const std::string dir = testing::TempDir("layers_2");
  const std::string root = CopyTree(dir);
  // base is the bottom layer: the runtime is above it.
  Append(root + "/base/status.cpp", "#include \"flashtune/runtime.h\"\n");
  const CheckResult r = RunCheck(root);
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.output.find("base/status.cpp (layer base) includes flashtune/runtime.h (layer runtime)"),
            std::string::npos)
      << r.output;
}

TEST(LayerCheck, RefusesAnUpwardIncludeOfAPrivateHeaderAndFromAPublicHeader) {
  const std::string dir = testing::TempDir("layers_3");
  const std::string root = CopyTree(dir);
  Append(root + "/jit/driver.cpp", "#include \"tuner/gpu_protocol.h\"\n");
  // A public header takes the layer of its implementation: variant.h is generator's.
  Append(root + "/include/flashtune/variant.h", "#include \"flashtune/database.h\"\n");
  const CheckResult r = RunCheck(root);
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.output.find("jit/driver.cpp (layer jit) includes tuner/gpu_protocol.h (layer tuner)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("include/flashtune/variant.h (layer generator) includes flashtune/database.h (layer cache)"),
            std::string::npos)
      << r.output;
}

TEST(LayerCheck, RefusesIncludesBetweenTunerAndRuntime) {
  const std::string dir = testing::TempDir("layers_4");
  const std::string root = CopyTree(dir);
  Append(root + "/runtime/runtime.cpp", "#include \"flashtune/tuner.h\"\n");
  const CheckResult r = RunCheck(root);
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.output.find("runtime/runtime.cpp (layer runtime) includes flashtune/tuner.h (layer tuner)"),
            std::string::npos)
      << r.output;
}

TEST(LayerCheck, RefusesAPublicHeaderWithNoLayer) {
  const std::string dir = testing::TempDir("layers_5");
  const std::string root = CopyTree(dir);
  Append(root + "/include/flashtune/orphan.h", "#pragma once\n");
  const CheckResult r = RunCheck(root);
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.output.find("include/flashtune/orphan.h: no layer"), std::string::npos) << r.output;
}

TEST(LayerCheck, AcceptsANewFileIncludingLowerLayers) {
  const std::string dir = testing::TempDir("layers_6");
  const std::string root = CopyTree(dir);
  // A new public header with its implementation in generator/ is generator's, and may use base.
  Append(root + "/include/flashtune/family.h", "#pragma once\n#include \"flashtune/status.h\"\n");
  Append(root + "/generator/family.cpp", "#include \"flashtune/family.h\"\n#include \"flashtune/hash.h\"\n");
  Append(root + "/jit/kernel.cpp", "#include \"flashtune/family.h\"\n");
  const CheckResult r = RunCheck(root);
  EXPECT_EQ(r.rc, 0) << r.output;
}

}  // namespace
}  // namespace flashtune
