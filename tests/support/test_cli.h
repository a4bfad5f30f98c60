// tests/support/test_cli.h — the flashtune CLI a GPU test runs (a tune, the tuner's GPU worker):
// $FLASHTUNE_CLI, else this build tree's, else the one beside the test binary (a
// bench/pack_for_gpu.sh folder on a GPU machine, where the build tree is not). For the test
// binaries only: they define FLASHTUNE_CLI_PATH (tests/CMakeLists.txt).
// Thread safety: none needed (reads the environment and the file system).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace flashtune::testing {

inline std::string GpuTestCli() {
  if (const char* env = std::getenv("FLASHTUNE_CLI"); env != nullptr) return env;
  if (std::filesystem::exists(FLASHTUNE_CLI_PATH)) return FLASHTUNE_CLI_PATH;
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "flashtune").string();
}

}  // namespace flashtune::testing
