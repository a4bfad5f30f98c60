#include "flashtune/compiler.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace flashtune {
namespace {

// Small self-contained kernels: no toolkit header, as flashtune's own templates.
const char* kGoodSource = R"(
extern "C" __global__ void scale(float* x, float factor) {
  __shared__ float tile[256];
  tile[threadIdx.x] = x[blockIdx.x * blockDim.x + threadIdx.x] * factor;
  __syncthreads();
  x[blockIdx.x * blockDim.x + threadIdx.x] = tile[255 - threadIdx.x];
}
)";

Compiler Uncached() { return Compiler({.cache_dir = "-", .threads = 0}); }

TEST(Compiler, GoodSourceGivesElfCubinAndResourceReport) {
  Result<Cubin> cubin = Uncached().Compile({"scale_test", kGoodSource, "sm_90a", {}});
  ASSERT_TRUE(cubin.ok()) << cubin.status().ToString();
  ASSERT_GE(cubin->image.size(), 4u);
  EXPECT_EQ(std::string(cubin->image.data(), 4), "\x7f" "ELF");
  EXPECT_GT(cubin->resources.registers, 0);
  EXPECT_EQ(cubin->resources.static_smem_bytes, 256 * 4);
  EXPECT_EQ(cubin->resources.spill_store_bytes, 0);
  EXPECT_EQ(cubin->name, "scale_test");
  EXPECT_EQ(cubin->arch, "sm_90a");
  EXPECT_NE(cubin->options.find("--gpu-architecture=sm_90a"), std::string::npos);
  EXPECT_NE(cubin->log.find("Used"), std::string::npos) << cubin->log;
  EXPECT_FALSE(cubin->from_cache);
  EXPECT_EQ(cubin->key.size(), 64u);
}

TEST(Compiler, BrokenSourceGivesCompileErrorWithNvrtcLog) {
  const std::string broken = "extern \"C\" __global__ void k(float* x) { x[0] = no_such_symbol; }\n";
  Result<Cubin> cubin = Uncached().Compile({"broken_variant", broken, "sm_80", {"-DFT_TEST=1"}});
  ASSERT_FALSE(cubin.ok());
  const Status& s = cubin.status();
  EXPECT_EQ(s.code(), Code::kCompileError);
  EXPECT_NE(s.log().find("no_such_symbol"), std::string::npos) << s.log();
  EXPECT_EQ(s.variant_uri(), "broken_variant");
  EXPECT_NE(s.options().find("-DFT_TEST=1"), std::string::npos);
  EXPECT_NE(s.options().find("sm_80"), std::string::npos);
  EXPECT_NE(s.ToString().find("no_such_symbol"), std::string::npos);
}

TEST(Compiler, BadArchIsInvalidArgumentNamingAllowedValues) {
  for (const std::string arch : {"sm_91", "compute_90", "", "sm_80a", "90"}) {
    Result<Cubin> cubin = Uncached().Compile({"k", kGoodSource, arch, {}});
    ASSERT_FALSE(cubin.ok()) << arch;
    EXPECT_EQ(cubin.status().code(), Code::kInvalidArgument) << arch;
    EXPECT_NE(cubin.status().message().find("arch"), std::string::npos);
    EXPECT_NE(cubin.status().message().find("sm_90a"), std::string::npos) << cubin.status().message();
  }
}

TEST(Compiler, SupportedArchsIncludeHopperAndAmpere) {
  const std::vector<std::string> archs = Compiler::SupportedArchs();
  for (const char* arch : {"sm_80", "sm_90", "sm_90a"})
    EXPECT_NE(std::find(archs.begin(), archs.end(), arch), archs.end()) << arch;
  EXPECT_TRUE(Compiler::ValidateArch("sm_90a").ok());
  EXPECT_FALSE(Compiler::ValidateArch("sm_86a").ok());
}

TEST(Compiler, CallerStandardOptionReplacesDefault) {
  Result<Cubin> cubin = Uncached().Compile({"k", kGoodSource, "sm_80", {"--std=c++20"}});
  ASSERT_TRUE(cubin.ok()) << cubin.status().ToString();
  EXPECT_EQ(cubin->options.find("c++17"), std::string::npos) << cubin->options;
  EXPECT_NE(cubin->options.find("--std=c++20"), std::string::npos);
}

TEST(Compiler, NvrtcVersionLooksLikeMajorDotMinor) {
  const std::string v = Compiler::NvrtcVersion();
  ASSERT_NE(v.find('.'), std::string::npos) << v;
  EXPECT_GE(std::stoi(v), 13);
}

std::vector<CompileRequest> ManyRequests() {
  std::vector<CompileRequest> requests;
  for (int i = 0; i < 6; ++i) {
    std::string source = "extern \"C\" __global__ void k" + std::to_string(i) +
                         "(float* x) { x[threadIdx.x] = x[threadIdx.x] * " + std::to_string(i + 2) +
                         ".0f + " + std::to_string(i) + ".0f; }\n";
    if (i == 3) source = "this is not CUDA\n";
    requests.push_back({"k" + std::to_string(i), source, i % 2 ? "sm_80" : "sm_90a", {}});
  }
  return requests;
}

TEST(Compiler, CompileManyEqualsSerialInRequestOrder) {
  const std::vector<CompileRequest> requests = ManyRequests();
  Compiler parallel({.cache_dir = "-", .threads = 4});
  const std::vector<Result<Cubin>> many = parallel.CompileMany(requests);
  ASSERT_EQ(many.size(), requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    Result<Cubin> serial = Uncached().Compile(requests[i]);
    ASSERT_EQ(many[i].ok(), serial.ok()) << i;
    if (!serial.ok()) {
      EXPECT_EQ(many[i].status().code(), Code::kCompileError);
      EXPECT_EQ(many[i].status().variant_uri(), requests[i].name);
      continue;
    }
    EXPECT_EQ(many[i]->name, requests[i].name);
    EXPECT_EQ(many[i]->image, serial->image) << "request " << i << " differs from a serial compile";
    EXPECT_EQ(many[i]->resources.registers, serial->resources.registers);
    EXPECT_EQ(many[i]->key, serial->key);
  }
  EXPECT_FALSE(many[3].ok());
}

TEST(Compiler, CompileManyOfNothingIsEmpty) {
  EXPECT_TRUE(Uncached().CompileMany({}).empty());
}

TEST(ParsePtxasReport, TakesTheMaximumOverEntryFunctions) {
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'a' for 'sm_90a'\n"
      "ptxas info    : Function properties for a\n"
      "ptxas         .     256 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 32 registers, used 1 barriers, 1024 bytes smem, 360 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function 'b' for 'sm_90a'\n"
      "ptxas info    : Function properties for b\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 168 registers, used 0 barriers, 0 bytes smem, 400 bytes cmem[0]\n";
  const ResourceUsage u = ParsePtxasReport(log);
  EXPECT_EQ(u.registers, 168);
  EXPECT_EQ(u.static_smem_bytes, 1024);
  EXPECT_EQ(u.spill_store_bytes, 8);
  EXPECT_EQ(u.spill_load_bytes, 12);
  EXPECT_EQ(u.stack_frame_bytes, 256);
  EXPECT_EQ(u.const_bytes, 400);
}

TEST(ParsePtxasReport, ReportsSpillsOfARealCompile) {
  // A large indexed local array forces local memory (stack), which ptxas reports.
  const char* source = R"(
extern "C" __global__ void k(float* x, int i) {
  float local[512];
  for (int j = 0; j < 512; ++j) local[j] = x[j * 7 % 129];
  x[0] = local[i & 511];
})";
  Result<Cubin> cubin = Uncached().Compile({"stack", source, "sm_80", {}});
  ASSERT_TRUE(cubin.ok()) << cubin.status().ToString();
  EXPECT_GE(cubin->resources.stack_frame_bytes, 2048) << cubin->log;
}

}  // namespace
}  // namespace flashtune
