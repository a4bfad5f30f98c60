// libflashtune.so exports the API (include/flashtune/export.h) and hides the layers' internals.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/replay_fixture.h"

namespace flashtune {
namespace {

// The demangled dynamic symbols libflashtune.so defines, one per line.
std::string ExportedSymbols() {
  const std::string out = testing::TempDir("shared_library") + "/symbols.txt";
  if (testing::RunShell("nm -D -C --defined-only '" FLASHTUNE_SHARED_LIBRARY "' > '" + out + "' 2>&1") != 0) return "";
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(SharedLibrary, ExportsTheApiAndHidesTheInternals) {
  const std::string symbols = ExportedSymbols();
  ASSERT_FALSE(symbols.empty()) << "nm -D failed on " FLASHTUNE_SHARED_LIBRARY;
  // The C ABI and the C++ API applications call.
  for (const char* api : {" ft_runtime_open", " ft_runtime_open_ex", " ft_forward", " ft_plan", " ft_last_error",
                          " flashtune::Runtime::Open(", " flashtune::Runtime::forward(", " flashtune::CodeName(",
                          " flashtune::Database::Open(", " flashtune::Tune(", " flashtune::BucketOf(",
                          " flashtune::CurrentToolchain("})
    EXPECT_NE(symbols.find(api), std::string::npos) << api << " is not exported";
  // Internals: NVRTC, the driver wrapper, source generation, the cubin store.
  for (const char* internal : {" flashtune::Compiler::Compile(", " flashtune::Driver::Load(",
                               " flashtune::GenerateSource(", " flashtune::LoadOrCompileCubin("})
    EXPECT_EQ(symbols.find(internal), std::string::npos) << internal << " is exported";
}

}  // namespace
}  // namespace flashtune
