// `flashtune bench` on the recording fake driver's second GPU, an A100 (tests/fixtures/fake_gpu.h;
// its kernels run nothing, so every timed variant is a wrong result: what is checked here is
// which variants it is given). `all` is the space of the measuring GPU's arch; a named variant of
// a family that does not exist there is refused with the family's reason, before NVRTC.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/replay_fixture.h"

namespace flashtune {
namespace {

using testing::ReadTextFile;
using testing::RunShell;
using testing::TempDir;

int Bench(const std::string& dir, const std::string& args, std::string* out) {
  const std::string log = dir + "/bench.txt";
  const int rc = RunShell("FLASHTUNE_LIBCUDA='" FLASHTUNE_FAKE_GPU_LIBCUDA "' FLASHTUNE_CACHE_DIR='" + dir +
                          "/cubins' '" FLASHTUNE_CLI_PATH "' bench --device 1 --head-dim 64 --seqlen-q 256 --heads-q 4 " +
                          args + " > '" + log + "' 2>&1");
  *out = ReadTextFile(log);
  return rc;
}

TEST(BenchCommand, OnAnAmpereGpuAllIsItsOwnSpaceAndAWgmmaVariantIsRefused) {
  const std::string dir = TempDir("bench_a100");
  std::string out;
  EXPECT_EQ(Bench(dir, "--variant all", &out), 1) << out;  // every variant failed (nothing runs): exit 1
  EXPECT_NE(out.find("on NVIDIA A100-SXM4-80GB"), std::string::npos) << out;
  EXPECT_NE(out.find("fa2_fwd_bf16_d64_"), std::string::npos) << out;
  EXPECT_EQ(out.find("hopper_fwd_"), std::string::npos) << out;
  EXPECT_EQ(out.find("compile_error"), std::string::npos) << out;

  const std::string hopper = "hopper_fwd_bf16_d64_bm128_bn128_wg2_s2_p0_pp1_ov1_full";
  EXPECT_EQ(Bench(dir, "--variant " + hopper, &out), 2) << out;
  EXPECT_NE(out.find("--variant " + hopper + " cannot run on NVIDIA A100-SXM4-80GB: hopper_fwd needs wgmma"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("NVRTC"), std::string::npos) << out;
}

}  // namespace
}  // namespace flashtune
