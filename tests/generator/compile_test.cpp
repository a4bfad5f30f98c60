// Generated sources compile with NVRTC (no GPU needed). A deterministic sample of the default
// space runs here; compile_full_test.cpp (label full) compiles all of it.
#if __has_include("flashtune/compiler.h")  // the compiler lands on main from another branch

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "generator/families/fa2_fwd.h"
#include "flashtune/compiler.h"
#include "flashtune/source.h"
#include "generator/embedded_templates.h"
#include "tests/generator/compile_sweep.h"

namespace flashtune {
namespace {

TEST(GeneratedSource, SampleOfDefaultSpaceCompilesForSm90aAndSm80) {
  // d64 and d128 x f16/bf16 x full/causal x 2 archs, every 8th variant per class (~52 compiles).
  auto jobs = testing_sweep::Jobs({64, 128}, {"sm_90a", "sm_80"}, 8);
  ASSERT_GE(jobs.size(), 40u);
  testing_sweep::CompileAll(jobs);
}

TEST(GeneratedSource, DefaultVariantsCompileForEveryHeadDim) {
  std::vector<testing_sweep::Job> jobs;
  for (int d : kSupportedHeadDims) jobs.push_back({DefaultVariant(ProblemClass{DType::kBF16, d, true}), "sm_90a"});
  testing_sweep::CompileAll(jobs);
}

// Generated sources compile with --minimal (less NVRTC work): the cubin must be byte for byte
// the one a plain compile gives, for each family's default variant, so the change costs no speed.
TEST(GeneratedSource, MinimalModeKeepsTheCubinBytes) {
  Compiler compiler(Compiler::Options{"-", 1});
  SpaceOptions options;
  options.arch = "sm_90a";
  auto space = EnumerateSpace({DType::kBF16, 64, true}, options);
  ASSERT_TRUE(space.ok()) << space.status().ToString();
  std::vector<std::string> families_seen;
  for (const Variant& v : *space) {
    if (std::find(families_seen.begin(), families_seen.end(), v.family) != families_seen.end()) continue;
    families_seen.push_back(v.family);
    auto source = GenerateSource(v);
    ASSERT_TRUE(source.ok()) << source.status().ToString();
    const CompileRequest minimal = GeneratedSourceRequest(source->uri, source->text, "sm_90a");
    EXPECT_NE(std::find(minimal.options.begin(), minimal.options.end(), "--minimal"), minimal.options.end());
    auto a = compiler.Compile(minimal);
    auto b = compiler.Compile(CompileRequest{source->uri, source->text, "sm_90a", {}});
    ASSERT_TRUE(a.ok() && b.ok()) << source->uri;
    EXPECT_TRUE(a->image == b->image) << source->uri << ": --minimal changed the cubin";
  }
  EXPECT_GE(families_seen.size(), 2u);  // fa2_fwd and hopper_fwd
}

// Pushes an invalid combination past the generator (a hand-made prologue) and expects the
// template's own static_assert to stop it with its message.
void ExpectStaticAssert(const std::string& prologue, const std::string& message) {
  const std::string text = prologue + *ExpandedTemplate("fa2_fwd.cuh");
  Compiler compiler(Compiler::Options{"-", 1});
  auto result = compiler.Compile({"bad_variant", text, "sm_90a", {}});
  ASSERT_FALSE(result.ok()) << "compiled although invalid: " << message;
  EXPECT_EQ(result.status().code(), Code::kCompileError);
  EXPECT_NE(result.status().log().find(message), std::string::npos) << result.status().ToString();
  // #line 1 makes the error point into the template, not into the prologue.
  EXPECT_NE(result.status().log().find("fa2_fwd.cuh("), std::string::npos) << result.status().log();
}

TEST(GeneratedSource, TemplateStaticAssertsRejectBadCombinations) {
  Variant v = Fa2Variant(DType::kBF16, 128, false, 64, 64, 8, 2);  // 64 rows cannot split over 8 warps
  ASSERT_FALSE(CheckVariant(v).ok());
  ExpectStaticAssert(GeneratePrologue(v), "block_m must be a multiple of 16 * warps");
  v = Fa2Variant(DType::kF16, 256, false, 128, 128, 4, 3);  // 473 KB of shared memory
  ExpectStaticAssert(GeneratePrologue(v), "shared memory exceeds the largest opt-in limit");
  v = Fa2Variant(DType::kF16, 64, false, 128, 48, 4, 2);
  ExpectStaticAssert(GeneratePrologue(v), "block_n (B_c) must be 32, 64 or 128");
  // A prologue whose kSmemBytes disagrees with the tiles.
  std::string p = GeneratePrologue(Fa2Variant(DType::kF16, 64, false, 128, 64, 4, 2));
  const std::string smem = "kSmemBytes = " + std::to_string(SharedMemoryBytes(Fa2Variant(DType::kF16, 64, false, 128, 64, 4, 2)));
  ASSERT_NE(p.find(smem), std::string::npos);
  p.replace(p.find(smem), smem.size(), "kSmemBytes = 1024");
  ExpectStaticAssert(p, "kSmemBytes disagrees with the template's shared-memory layout");
}

}  // namespace
}  // namespace flashtune

#endif  // __has_include("flashtune/compiler.h")
