// The installed package, consumed the way a user would: cmake --install into a fresh prefix,
// then find_package(flashtune) + flashtune::flashtune in examples/consumer.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/replay_fixture.h"

namespace flashtune {
namespace {

using namespace flashtune::testing;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Package, InstalledPackageBuildsTheExampleConsumer) {
  const std::string dir = TempDir("package");
  const std::string prefix = dir + "/prefix";
  const std::string log = dir + "/log.txt";
  ASSERT_EQ(RunShell("cmake --install '" FLASHTUNE_BINARY_DIR "' --prefix '" + prefix + "' > '" + log + "' 2>&1"), 0)
      << ReadFile(log);
  for (const char* file : {"/include/flashtune/runtime.h", "/include/flashtune/flashtune.h", "/lib/libflashtune.a",
                           "/lib/libflashtune.so", "/bin/flashtune", "/lib/cmake/flashtune/flashtuneConfig.cmake",
                           "/lib/cmake/flashtune/flashtuneConfigVersion.cmake",
                           "/lib/cmake/flashtune/flashtuneTargets.cmake"})
    EXPECT_TRUE(std::filesystem::exists(prefix + file)) << file;
  // Only the API is installed (the internals are neither installed nor exported), and each
  // installed header compiles on its own.
  for (const char* internal : {"driver.h", "compiler.h", "kernel.h", "cubin_store.h", "source.h", "space.h", "arch.h",
                               "hash.h", "reference.h", "report.h"})
    EXPECT_FALSE(std::filesystem::exists(prefix + "/include/flashtune/" + internal)) << internal;
  for (const auto& header : std::filesystem::directory_iterator(prefix + "/include/flashtune"))
    EXPECT_EQ(RunShell("'" FLASHTUNE_CXX_COMPILER "' -std=c++20 -fsyntax-only -I'" + prefix + "/include' -x c++ '" +
                       header.path().string() + "' > '" + log + "' 2>&1"),
              0)
        << header.path() << "\n" << ReadFile(log);
  const std::string build = dir + "/consumer";
  // A sanitizer build's library needs the sanitizer's runtime linked into its consumer too.
  const std::string sanitize = FLASHTUNE_SANITIZE_LINK_FLAGS;
  const std::string link = sanitize.empty() ? "" : " -DCMAKE_EXE_LINKER_FLAGS='" + sanitize + "'";
  ASSERT_EQ(RunShell("cmake -S '" FLASHTUNE_SOURCE_DIR "/examples/consumer' -B '" + build +
                     "' -DCMAKE_PREFIX_PATH='" + prefix + "'" + link + " > '" + log + "' 2>&1 && cmake --build '" +
                     build + "' >> '" + log + "' 2>&1"),
            0)
      << ReadFile(log);
  const std::string out = dir + "/out.txt";
  ASSERT_EQ(RunShell("'" + build + "/consumer' '" + dir + "/absent.db' > '" + out + "' 2>/dev/null"), 0)
      << ReadFile(out);
  const std::string text = ReadFile(out);
  EXPECT_NE(text.find("_fwd_bf16_d128_"), std::string::npos) << text;  // hopper_fwd on sm_90a, the target without a GPU
  EXPECT_NE(text.find("(heuristic)"), std::string::npos) << text;
  // The installed CLI runs too.
  // (No database here: without --db an absent ./flashtune.db means the heuristic.)
  EXPECT_EQ(RunShell("cd '" + dir + "' && FLASHTUNE_DB= '" + prefix +
                     "/bin/flashtune' plan --dtype f16 --head-dim 64 --seqlen-q 512 --heads-q 8 --json > '" + out +
                     "' 2>/dev/null"),
            0);
  EXPECT_NE(ReadFile(out).find("\"source\":\"heuristic\""), std::string::npos) << ReadFile(out);
}

}  // namespace
}  // namespace flashtune
