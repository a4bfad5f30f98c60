// Every variant of the d64 and d128 spaces (both dtypes, causal and not), and a sample of the
// other head dims, against the float64 CPU reference on ragged, GQA/MQA, Nq != Nk and
// head-major shapes, and shapes whose scores grow along the keys (the online softmax's
// rescale). Outputs are poisoned (NaN) before each run, so an unwritten element fails.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "flashtune/driver.h"
#include "flashtune/kernel.h"
#include "flashtune/reference.h"
#include "flashtune/source.h"
#include "flashtune/space.h"
#include "tests/support/gpu_fixture.h"
#include "tests/support/variant_checks.h"

namespace flashtune {
namespace {

using testing::GetGpu;
using testing::Gpu;
using testing::Shape;

// The edge shapes (testing::kEdgeShapes), then a long one and a grid wider than the GPU.
const Shape kShapes[] = {
    testing::kEdgeShapes[0], testing::kEdgeShapes[1], testing::kEdgeShapes[2], testing::kEdgeShapes[3],
    testing::kEdgeShapes[4], testing::kEdgeShapes[5], testing::kEdgeShapes[6], {1, 4097, 4097, 1, 1, false},
    // More tiles than an H200 has SMs (384 of 128 rows): a persistent block walks several, with
    // an odd number of K/V blocks per tile and, when causal, tiles that see no key.
    {4, 700, 300, 16, 4, false},
};
// Shapes whose keys grow towards the sequence's start (ForwardCaseOptions::key_ramp): uniform
// inputs keep every score within about one unit, so a row's running max is set by its first
// block and the online softmax's rescale of O by a moving max (and a kernel's rules for when to
// skip it) would go untested. With the ramp a row's max rises block after block in either
// walking order: by 2^8 and more over the sequence (60), and in small steps (8).
const struct {
  Shape shape;
  double ramp;
} kRampShapes[] = {{{1, 4097, 4097, 1, 1, false}, 60}, {{2, 1000, 1000, 2, 2, true}, 8}, {{1, 127, 1000, 2, 1, false}, 60}};

using Case = testing::ForwardCase;

// Runs `kernel` on `c` with poisoned outputs; "" when it matches the reference, else why not.
std::string RunAndCompare(Gpu& gpu, const ForwardKernel& kernel, Case& c) {
  const std::string launched = testing::LaunchPoisoned(gpu, kernel, c.device, *c.dout, *c.dlse);
  if (!launched.empty()) return launched;
  std::vector<uint16_t> o(c.q.size());
  std::vector<float> lse(c.expected.lse.size());
  if (!c.dout->CopyToHost(o.data(), o.size() * 2).ok() || !c.dlse->CopyToHost(lse.data(), lse.size() * 4).ok())
    return "copy back failed";
  const std::string why =
      testing::CompareWithReference(c.host.problem.dtype, GatherOutput(c.host, o.data()), lse, c.expected.o, c.expected.lse);
  if (why.empty()) return "";
  char shape[160];
  std::snprintf(shape, sizeof shape, "B%lld Nq%lld Nk%lld Hq%lld Hkv%lld%s%s: ", (long long)c.shape.batch,
                (long long)c.shape.seqlen_q, (long long)c.shape.seqlen_k, (long long)c.shape.heads_q,
                (long long)c.shape.heads_kv, c.shape.head_major ? " head-major" : "",
                testing::KeyRampText(c.key_ramp).c_str());
  return shape + why;
}

void CheckVariants(const ProblemClass& cls, std::vector<Variant> variants) {
  ASSERT_NO_FATAL_FAILURE(testing::AssertValid(variants));
  auto gpu = GetGpu();
  if (!gpu.ok()) GTEST_SKIP() << "no GPU to run on: " << gpu.status().ToString();
  auto kernels = testing::CompileAndLoad(**gpu, variants);
  std::vector<std::unique_ptr<Case>> cases;
  uint64_t seed = 100;
  for (const Shape& s : kShapes) {
    auto c = testing::MakeForwardCase(**gpu, cls, s, seed += 10);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    cases.push_back(std::move(*c));
  }
  for (const auto& r : kRampShapes) {
    auto c = testing::MakeForwardCase(**gpu, cls, r.shape, seed += 10, {.key_ramp = r.ramp});
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    cases.push_back(std::move(*c));
  }
  testing::CheckEveryVariant(cls.ToString(), variants, kernels, cases,
                             [&](const ForwardKernel& k, std::unique_ptr<Case>& c) { return RunAndCompare(**gpu, k, *c); });
}

// Hand-picked hopper_fwd variants, checked (AssertValid) before this asks for the GPU, then each
// against the reference on an sm_90a GPU; skipped elsewhere.
void CheckOnHopper(const std::vector<Variant>& variants) {
  ASSERT_NO_FATAL_FAILURE(testing::AssertValid(variants));
  auto gpu = GetGpu();
  if (!gpu.ok()) GTEST_SKIP() << "no GPU to run on: " << gpu.status().ToString();
  if ((*gpu)->info.Arch() != "sm_90a") GTEST_SKIP() << "hopper_fwd needs an sm_90a GPU, not " << (*gpu)->info.Arch();
  for (const Variant& v : variants) CheckVariants(ClassOf(v), {v});
}

// The shapes here are prefill-sized (up to 4097 query rows): the families serving those.
Problem PrefillProblem(const ProblemClass& cls) { return Problem{cls.dtype, cls.head_dim, cls.causal, 1, 4097, 4097, 8, 1}; }

class FullSpace : public ::testing::TestWithParam<std::tuple<DType, int, bool>> {};

TEST_P(FullSpace, EveryVariantMatchesTheReference) {
  const auto [dtype, head_dim, causal] = GetParam();
  const ProblemClass cls{dtype, head_dim, causal};
  auto space = EnumerateSpaceFor(PrefillProblem(cls));  // decode_fwd: decode_gpu_test.cpp
  ASSERT_TRUE(space.ok()) << space.status().ToString();
  CheckVariants(cls, *space);
}

// hopper_fwd's switches that the default space leaves out (measured slower: no overlap, no
// ping-pong) stay allowed, so a hand-picked or overridden variant must be right too: both off,
// with the persistent scheduler, for each head dim the space serves; and persistent blocks with
// two Q buffers at d128 and d64, with and without the overlapped schedule.
TEST(ForwardGpu, HopperSwitchesOffMatchTheReference) {
  std::vector<Variant> variants;
  for (bool causal : {false, true}) {
    const std::string mask = causal ? "causal" : "full";
    for (const std::string params : {"d64_bm192_bn112_wg3_s2_p1_pp0_ov0", "d64_bm128_bn128_wg2_s2_p0_pp1_ov0",
                                     "d128_bm128_bn128_wg2_s2_p1_pp0_ov1", "d256_bm128_bn80_wg2_s2_p1_pp1_ov0",
                                     // two Q buffers (p2): tiles alternate buffers; one, two and three
                                     // consumer warpgroups, and without overlap or ping-pong
                                     "d128_bm128_bn128_wg2_s2_p2_pp1_ov1", "d64_bm192_bn128_wg3_s2_p2_pp1_ov1",
                                     "d64_bm64_bn128_wg1_s2_p2_pp1_ov1", "d128_bm128_bn128_wg2_s2_p2_pp0_ov0"}) {
      auto v = Variant::FromUri("hopper_fwd_bf16_" + params + "_" + mask);
      ASSERT_TRUE(v.ok()) << v.status().ToString();
      variants.push_back(*v);
    }
  }
  CheckOnHopper(variants);
}

// hopper_fwd_<dtype>_<tile>_<mask> for each of `tiles`, in bf16 and f16, full and causal.
void AppendBothDtypesAndMasks(const std::vector<std::string>& tiles, std::vector<Variant>* out) {
  for (const std::string dtype : {"bf16", "f16"})
    for (const std::string mask : {"full", "causal"})
      for (const std::string& tile : tiles) {
        auto v = Variant::FromUri("hopper_fwd_" + dtype + "_" + tile + "_" + mask);
        ASSERT_TRUE(v.ok()) << v.status().ToString();
        out->push_back(*v);
      }
}

// d96's three-warpgroup tile with 96-key blocks fits the consumers' registers only with O at the
// data's 96 columns: both schedules, both dtypes, full and causal, on the float64 reference.
TEST(ForwardGpu, D96ThreeWarpgroupTileMatchesTheReference) {
  std::vector<Variant> variants;
  ASSERT_NO_FATAL_FAILURE(
      AppendBothDtypesAndMasks({"d96_bm192_bn96_wg3_s2_p0_pp1_ov1", "d96_bm192_bn96_wg3_s2_p2_pp1_ov1"}, &variants));
  CheckOnHopper(variants);
}

// Four consumer warpgroups (256-row tiles, d64; s3 p2 searched): 64-key blocks with the overlap,
// 80 and 96 without, both schedules where they differ, both dtypes, full and causal.
TEST(ForwardGpu, FourWarpgroupTilesMatchTheReference) {
  std::vector<Variant> variants;
  ASSERT_NO_FATAL_FAILURE(AppendBothDtypesAndMasks(
      {"d64_bm256_bn64_wg4_s2_p0_pp1_ov1", "d64_bm256_bn64_wg4_s2_p2_pp1_ov1", "d64_bm256_bn80_wg4_s2_p2_pp1_ov0",
       "d64_bm256_bn96_wg4_s2_p2_pp1_ov0", "d64_bm256_bn64_wg4_s3_p2_pp1_ov1"},
      &variants));
  // s3 only: the split tail, which needs three K stages with four warpgroups.
  for (const Variant& v : variants)
    EXPECT_EQ(GeneratePrologue(v).find("kSplitTail = true") != std::string::npos, v.Param("s") == 3) << v.Uri();
  CheckOnHopper(variants);
}

INSTANTIATE_TEST_SUITE_P(ForwardGpu, FullSpace,
                         ::testing::Combine(::testing::Values(DType::kBF16, DType::kF16), ::testing::Values(64, 128),
                                            ::testing::Bool()));

class SampledSpace : public ::testing::TestWithParam<std::tuple<int, bool>> {};

// Other head dims: the default variant, plus the first and last of the space, in bf16 and f16.
TEST_P(SampledSpace, SampleMatchesTheReference) {
  const auto [head_dim, causal] = GetParam();
  for (DType dtype : {DType::kBF16, DType::kF16}) {
    const ProblemClass cls{dtype, head_dim, causal};
    auto space = EnumerateSpaceFor(PrefillProblem(cls));
    ASSERT_TRUE(space.ok()) << space.status().ToString();
    std::vector<Variant> sample = {DefaultVariant(cls), space->front(), space->back()};
    CheckVariants(cls, sample);
  }
}

INSTANTIATE_TEST_SUITE_P(ForwardGpu, SampledSpace,
                         ::testing::Combine(::testing::Values(32, 96, 160, 192, 224, 256), ::testing::Bool()));

}  // namespace
}  // namespace flashtune
