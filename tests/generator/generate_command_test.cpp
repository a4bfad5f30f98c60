// Runs the real `flashtune generate` binary.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "generator/families/fa2_fwd.h"
#include "flashtune/arch.h"
#include "flashtune/source.h"
#include "flashtune/space.h"

namespace flashtune {
namespace {

struct CliRun {
  int exit_code;
  std::string out;  // stdout
  std::string err;  // stderr
};

std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

CliRun Generate(const std::string& args) {
  const auto dir = std::filesystem::path(FLASHTUNE_BINARY_DIR) / "test_tmp";
  std::filesystem::create_directories(dir);
  const auto tag = std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
                   ::testing::UnitTest::GetInstance()->current_test_info()->name();
  const auto out = dir / (tag + ".out"), err = dir / (tag + ".err");
  const std::string cmd = std::string(FLASHTUNE_CLI_PATH) + " generate " + args + " >" +
                          out.string() + " 2>" + err.string();
  const int status = std::system(cmd.c_str());
  CliRun r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadFile(out), ReadFile(err)};
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

TEST(GenerateCommand, ListsTheSpaceOneUriPerLine) {
  CliRun r = Generate("--dtype bf16 --head-dim 128 --causal");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto space = EnumerateSpace(ProblemClass{DType::kBF16, 128, true});
  ASSERT_TRUE(space.ok());
  std::string expected;
  for (const Variant& v : *space) expected += v.Uri() + "\n";
  EXPECT_EQ(r.out, expected);
  EXPECT_NE(r.err.find(std::to_string(space->size()) + " variants"), std::string::npos) << r.err;
}

TEST(GenerateCommand, OperationListsTheBackwardSpace) {
  CliRun r = Generate("--dtype f16 --head-dim 64 --operation bwd --arch sm_80");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  SpaceOptions options;
  options.arch = "sm_80";
  options.max_smem_bytes = MaxSharedMemoryForArch("sm_80");
  auto space = EnumerateSpace(ProblemClass{DType::kF16, 64, false, Operation::kBackward}, options);
  ASSERT_TRUE(space.ok());
  ASSERT_FALSE(space->empty());
  std::string expected;
  for (const Variant& v : *space) expected += v.Uri() + "\n";
  EXPECT_EQ(r.out, expected);
  EXPECT_EQ(r.out.rfind("fa2_bwd_f16_d64_", 0), 0u) << r.out;
  EXPECT_EQ(Generate("--dtype f16 --head-dim 64 --operation up").exit_code, 2);
}

TEST(GenerateCommand, ArchSetsTheSharedMemoryLimit) {
  CliRun r90 = Generate("--dtype f16 --head-dim 256 --arch sm_90a");
  CliRun r80 = Generate("--dtype f16 --head-dim 256 --arch sm_80");
  ASSERT_EQ(r90.exit_code, 0) << r90.err;
  ASSERT_EQ(r80.exit_code, 0) << r80.err;
  EXPECT_NE(r90.out.find("fa2_fwd_f16_d256_br128_bc32_w4_s3_full"), std::string::npos);
  EXPECT_EQ(r80.out.find("fa2_fwd_f16_d256_br128_bc32_w4_s3_full"), std::string::npos);
  SpaceOptions o;
  o.max_smem_bytes = 166912;
  auto space = EnumerateSpace({DType::kF16, 256, false}, o);
  ASSERT_TRUE(space.ok());
  EXPECT_EQ(size_t(std::count(r80.out.begin(), r80.out.end(), '\n')), space->size());
}

TEST(GenerateCommand, JsonListing) {
  CliRun r = Generate("--dtype f16 --head-dim 64 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto space = EnumerateSpace(ProblemClass{DType::kF16, 64, false});
  ASSERT_TRUE(space.ok());
  EXPECT_NE(r.out.find("\"count\": " + std::to_string(space->size())), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"family\": \"hopper_fwd\""), std::string::npos);
  EXPECT_NE(r.out.find("\"uri\": \"fa2_fwd_f16_d64_br64_bc32_w4_s1_full\""), std::string::npos);
  EXPECT_NE(r.out.find("\"max_smem_bytes\": 232448"), std::string::npos);
}

TEST(GenerateCommand, PrintsAndWritesOneVariantsSource) {
  const std::string uri = "fa2_fwd_bf16_d64_br128_bc64_w8_s2_causal";
  auto variant = Variant::FromUri(uri);
  ASSERT_TRUE(variant.ok());
  auto source = GenerateSource(*variant);
  ASSERT_TRUE(source.ok());
  CliRun r = Generate("--variant " + uri);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, source->text);
  const auto file = std::filesystem::path(FLASHTUNE_BINARY_DIR) / "test_tmp" / (uri + ".cu");
  r = Generate("--variant " + uri + " -o " + file.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(ReadFile(file), source->text);
  std::filesystem::remove(file);
  r = Generate("--variant " + uri + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"sha256\": \"" + source->sha256 + "\""), std::string::npos);
}

void ExpectUsageError(const std::string& args, const std::string& fragment) {
  CliRun r = Generate(args);
  EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << args << "\n" << r.err;
  EXPECT_EQ(r.out, "") << args;
}

TEST(GenerateCommand, UsageErrorsNameTheOptionAndExit2) {
  ExpectUsageError("--dtype fp32 --head-dim 64", "--dtype: 'fp32' is not a supported dtype; allowed: f16, bf16");
  ExpectUsageError("--dtype bf16 --head-dim 80", "--head-dim: head_dim (80) must be one of 32, 64");
  ExpectUsageError("--dtype bf16", "--head-dim is required");
  ExpectUsageError("--head-dim 64", "--dtype is required");
  ExpectUsageError("--dtype bf16 --head-dim 64 --arch sm_70", "--arch 'sm_70' is not known; allowed: sm_80");
  ExpectUsageError("--dtype bf16 --head-dim sixty", "head-dim");
  ExpectUsageError("--frobnicate", "frobnicate");
  ExpectUsageError("--variant fa2_fwd_bf16_d128_br128_bc64_w4_s2", "--variant: variant URI");
  ExpectUsageError("--variant fa2_fwd_bf16_d128_br64_bc64_w8_s2_full",
                   "block_m (64) must be a multiple of warps * 16 (128)");
  ExpectUsageError("--variant fa2_fwd_f16_d256_br128_bc32_w4_s3_full --arch sm_80",
                   "not valid for sm_80");
  ExpectUsageError("--variant fa2_fwd_f16_d64_br128_bc32_w4_s3_full --head-dim 64", "drop --dtype");
}

TEST(GenerateCommand, UnwritableOutputFails) {
  CliRun r = Generate("--variant fa2_fwd_f16_d64_br128_bc32_w4_s3_full -o /nonexistent/dir/x.cu");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot write -o '/nonexistent/dir/x.cu'"), std::string::npos) << r.err;
}

TEST(GenerateCommand, Help) {
  CliRun r = Generate("--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--variant"), std::string::npos);
}

}  // namespace
}  // namespace flashtune
