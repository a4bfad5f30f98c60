// cmake/check_layers.cmake: the check CMake runs on every configure and build, run here on copies
// of the source tree with an include planted where it must not be.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

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

// The check fails on `root` and names every one of `expected` (the refused include's line).
void ExpectRefused(const std::string& root, const std::vector<std::string>& expected) {
  const CheckResult r = RunCheck(root);
  EXPECT_NE(r.rc, 0) << r.output;
  for (const std::string& line : expected) EXPECT_NE(r.output.find(line), std::string::npos) << line << "\n" << r.output;
}

TEST(LayerCheck, AcceptsTheSourceTree) {
  const CheckResult r = RunCheck(CopyTree(testing::TempDir("layers_tree")));
  EXPECT_EQ(r.rc, 0) << r.output;
}

TEST(LayerCheck, RefusesAnUpwardInclude) {
  const std::string root = CopyTree(testing::TempDir("layers_up"));
  // base is the bottom layer: the runtime is above it.
  Append(root + "/base/status.cpp", "#include \"flashtune/runtime.h\"\n");
  ExpectRefused(root, {"base/status.cpp (layer base) includes flashtune/runtime.h (layer runtime)"});
}

TEST(LayerCheck, RefusesAnUpwardIncludeOfAPrivateHeaderAndFromAPublicHeader) {
  const std::string root = CopyTree(testing::TempDir("layers_private"));
  Append(root + "/jit/driver.cpp", "#include \"tuner/gpu_protocol.h\"\n");
  // A public header takes the layer of its implementation: variant.h is generator's.
  Append(root + "/include/flashtune/variant.h", "#include \"flashtune/database.h\"\n");
  ExpectRefused(root, {"jit/driver.cpp (layer jit) includes tuner/gpu_protocol.h (layer tuner)",
                       "include/flashtune/variant.h (layer generator) includes flashtune/database.h (layer cache)"});
}

TEST(LayerCheck, RefusesIncludesBetweenTunerAndRuntime) {
  const std::string root = CopyTree(testing::TempDir("layers_sideways"));
  Append(root + "/runtime/runtime.cpp", "#include \"flashtune/tuner.h\"\n");
  ExpectRefused(root, {"runtime/runtime.cpp (layer runtime) includes flashtune/tuner.h (layer tuner)"});
}

TEST(LayerCheck, RefusesAPublicHeaderWithNoLayer) {
  const std::string root = CopyTree(testing::TempDir("layers_orphan"));
  Append(root + "/include/flashtune/orphan.h", "#pragma once\n");
  ExpectRefused(root, {"include/flashtune/orphan.h: no layer"});
}

TEST(LayerCheck, AcceptsANewFileIncludingLowerLayers) {
  const std::string root = CopyTree(testing::TempDir("layers_new"));
  // A new public header with its implementation in generator/ is generator's, and may use base.
  Append(root + "/include/flashtune/family.h", "#pragma once\n#include \"flashtune/status.h\"\n");
  Append(root + "/generator/family.cpp", "#include \"flashtune/family.h\"\n#include \"flashtune/hash.h\"\n");
  Append(root + "/jit/kernel.cpp", "#include \"flashtune/family.h\"\n");
  const CheckResult r = RunCheck(root);
  EXPECT_EQ(r.rc, 0) << r.output;
}

}  // namespace
}  // namespace flashtune
