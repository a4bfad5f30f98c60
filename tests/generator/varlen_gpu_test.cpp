// The varlen layout (packed q/k/v [total, H, D] with cu_seqlens) of fa2_fwd, hopper_fwd and,
// for decode batches, decode_fwd against the float64 CPU reference, sequence by sequence: ragged batches (lengths 0, 1, 17,
// 1000 and 4097 in one batch), Nq != Nk per sequence (rows that see no key, sequences with no
// key or no query), mixed prefill + decode batches (Nq = 1 beside long prefills), GQA 8:1 and
// MQA, causal and not, both dtypes, head dims 64/96/128/256. Outputs are poisoned (NaN) before
// each run, so an unwritten row fails; rows past total_q are a canary that must stay poisoned
// (no store past the packed tensor); lse [Hq, total_q] within 1e-3.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "flashtune/kernel.h"
#include "flashtune/reference.h"
#include "flashtune/space.h"
#include "generator/families/fa2_fwd.h"
#include "generator/family.h"
#include "generator/families/decode_fwd.h"
#include "tests/support/gpu_fixture.h"
#include "tests/support/variant_checks.h"
#include "tests/support/varlen_case.h"

namespace flashtune {
namespace {

using testing::Gpu;
using testing::MakeVarlenCase;
using testing::VarlenCase;

// "" when `kernel` reproduces the reference on `c` and leaves the canary rows alone, else why not.
std::string RunVarlen(Gpu& gpu, const ForwardKernel& kernel, VarlenCase& c) {
  const std::string launched = testing::LaunchPoisoned(gpu, kernel, c.device, c.o(), c.lse());
  if (!launched.empty()) return launched;
  return testing::CheckVarlen(c);
}

// The cases of one class: ragged (0, 1, 17, 1000, 4097; Nq = Nk per sequence; two query heads
// on one K/V head, so the 4097-row reference stays cheap), Nq != Nk per sequence with GQA 8:1
// (a sequence with no query, one with no key, rows before the causal diagonal that see no
// key), a mixed prefill + decode batch with MQA, and (the last) 48 short sequences (0 to 299
// rows) over 32 query heads, GQA 8:1: the one with tiles enough for a p3 kernel to claim them
// (HopperClaimsRepay; on the others it deals them statically).
std::vector<VarlenCase> MakeCases(Gpu& gpu, const ProblemClass& cls) {
  std::vector<VarlenCase> cases;
  uint64_t seed = 900 + uint64_t(cls.head_dim) + (cls.causal ? 7 : 0) + (cls.dtype == DType::kBF16 ? 3 : 0);
  const std::vector<int32_t> ragged = {0, 1, 17, 1000, 4097};
  cases.push_back(MakeVarlenCase(gpu, cls, 2, 1, ragged, ragged, seed += 10));
  cases.push_back(MakeVarlenCase(gpu, cls, 16, 2, {17, 1000, 0, 5, 300, 129}, {1000, 17, 33, 0, 1, 129}, seed += 10));
  cases.push_back(MakeVarlenCase(gpu, cls, 8, 1, {1, 1, 700, 1, 64, 1, 16}, {4097, 33, 700, 1, 1000, 0, 16}, seed += 10));
  const std::vector<int32_t> short_lengths = testing::ShortSequenceLengths();
  cases.push_back(MakeVarlenCase(gpu, cls, 32, 4, short_lengths, short_lengths, seed += 10));
  return cases;
}

// Compiles `variants` and runs each on every case of the class; without `workspace`, with none
// (a claimed-tile kernel then deals its tiles statically).
void CheckVarlenClass(const ProblemClass& cls, const std::vector<Variant>& variants, bool workspace = true) {
  auto gpu = testing::GetGpu();
  if (!gpu.ok()) GTEST_SKIP() << "no GPU to run on: " << gpu.status().ToString();
  std::vector<Variant> runnable;
  for (const Variant& v : variants)
    if (v.family != "hopper_fwd" || (*gpu)->info.Arch() == "sm_90a") runnable.push_back(v);  // sm_90a only
  auto kernels = testing::CompileAndLoad(**gpu, runnable);
  std::vector<VarlenCase> cases = MakeCases(**gpu, cls);
  for (VarlenCase& c : cases) {
    if (workspace) continue;
    c.device.workspace = nullptr;
    c.device.workspace_bytes = 0;
  }
  // A p3 kernel claims its tiles on the short sequences (the last case), given the workspace,
  // and deals them statically on the others (too few tiles to repay the counter's memset).
  for (const Variant& v : runnable) {
    if (v.family != "hopper_fwd" || v.Param("p") != 3) continue;
    for (size_t i = 0; i < cases.size(); ++i) {
      LaunchPacket packet;
      packet.sm_count = (*gpu)->info.sm_count;
      FindFamily("hopper_fwd")->Pack(v, cases[i].device, &packet);
      EXPECT_EQ(packet.zero_bytes > 0, workspace && i + 1 == cases.size()) << v.Uri() << ", case " << i;
    }
  }
  testing::CheckEveryVariant(cls.ToString() + (workspace ? " varlen" : " varlen without workspace"), runnable, kernels, cases,
                             [&](const ForwardKernel& k, VarlenCase& c) { return RunVarlen(**gpu, k, c); });
}

class VarlenClasses : public ::testing::TestWithParam<std::tuple<DType, int, bool>> {};

// Each family's default, a 64-row fa2_fwd tile, and the hopper_fwd persistent scheduler (a
// block walks tiles past shorter sequences' ends) with one consumer warpgroup at d64 and without
// overlap or ping-pong elsewhere, with two Q buffers at d64 and d128, and with three and four consumer
// warpgroups at d64 (the split tail); and each two-Q-buffer tile with its tiles claimed (p3).
TEST_P(VarlenClasses, VariantsMatchTheReference) {
  const auto [dtype, head_dim, causal] = GetParam();
  const ProblemClass cls{dtype, head_dim, causal};
  const std::string mask = causal ? "_causal" : "_full";
  const std::string d = std::string("d").append(std::to_string(head_dim));  // d96: d128's tiles on 96 columns
  const std::string hopper_alt = head_dim == 64   ? "d64_bm64_bn128_wg1_s2_p1_pp0_ov1"
                                 : head_dim <= 128 ? d + "_bm128_bn128_wg2_s2_p1_pp0_ov0"
                                                   : "d256_bm128_bn80_wg2_s2_p1_pp1_ov0";
  auto persistent = Variant::FromUri("hopper_fwd_" + std::string(DTypeName(dtype)) + "_" + hopper_alt + mask);
  ASSERT_TRUE(persistent.ok()) << persistent.status().ToString();
  std::vector<Variant> variants = {FindFamily("fa2_fwd")->Default(cls, Target{}),
                                   Fa2Variant(dtype, head_dim, causal, 64, head_dim > 128 ? 32 : 64, 4, 2),
                                   FindFamily("hopper_fwd")->Default(cls, Target{}), *persistent};
  // Two Q buffers (tiles alternate them; a varlen tile's plain stores hand its buffer back at
  // once, a TMA store's after the next tile's first S): one and two consumer warpgroups.
  if (head_dim <= 128) {
    auto two_q = Variant::FromUri("hopper_fwd_" + std::string(DTypeName(dtype)) + "_" +
                                  (head_dim == 64 ? "d64_bm64_bn128_wg1_s2_p2_pp1_ov1" : d + "_bm128_bn128_wg2_s2_p2_pp1_ov1") +
                                  mask);
    ASSERT_TRUE(two_q.ok()) << two_q.status().ToString();
    variants.push_back(*two_q);
  }
  // The split tail in the persistent rotated rounds: a sequence's own last tile of one live
  // warpgroup (1000 = 5 x 192 + 40 rows; 64 and 1 rows alone) deals its blocks to all three.
  // And over four warpgroups with three stages (searched at d64; 4097 = 16 x 256 + 1 and 17
  // rows split, 1000 = 3 x 256 + 232 does not).
  if (head_dim == 64) {
    for (const char* tile : {"_d64_bm192_bn128_wg3_s2_p2_pp1_ov1", "_d64_bm256_bn64_wg4_s3_p2_pp1_ov1"}) {
      auto split = Variant::FromUri("hopper_fwd_" + std::string(DTypeName(dtype)) + tile + mask);
      ASSERT_TRUE(split.ok()) << split.status().ToString();
      variants.push_back(*split);
    }
  }
  // Each two-Q-buffer tile's p3 twin, which packed calls run in its place: tiles claimed at run
  // time from the workspace's counter, past the sequences' ends claimed again.
  for (size_t i = 0, n = variants.size(); i < n; ++i) {
    if (variants[i].family != "hopper_fwd" || variants[i].Param("p") != 2) continue;
    Variant twin = variants[i];
    twin.SetParam("p", 3);
    variants.push_back(twin);
  }
  ASSERT_NO_FATAL_FAILURE(testing::AssertValid(variants));
  CheckVarlenClass(cls, variants);
}

// The claimed-tile (p3) tiles packed calls run most and their statically dealt (p2) twins,
// bf16, full and causal, with the workspace's counter and without it (the p3 kernel then hands
// over the static deal), in a test small enough for compute-sanitizer's racecheck and synccheck
// (--gtest_filter=VarlenGpu.ClaimedTiles*): what racecheck reports on one, it reports on the other.
TEST(VarlenGpu, ClaimedTilesAndTheirStaticTwinsMatchTheReference) {
  for (bool causal : {false, true})
    for (int head_dim : {64, 128}) {
      const std::string mask = causal ? "_causal" : "_full";
      std::vector<Variant> variants;
      for (const char* tile : {"hopper_fwd_bf16_d64_bm192_bn128_wg3_s2_p3_pp1_ov1", "hopper_fwd_bf16_d64_bm256_bn64_wg4_s3_p3_pp1_ov1",
                               "hopper_fwd_bf16_d128_bm128_bn128_wg2_s2_p3_pp1_ov1"}) {
        auto v = Variant::FromUri(tile + mask);
        ASSERT_TRUE(v.ok()) << v.status().ToString();
        if (v->head_dim != head_dim) continue;
        variants.push_back(*v);
        v->SetParam("p", 2);
        variants.push_back(*v);
      }
      ASSERT_NO_FATAL_FAILURE(testing::AssertValid(variants));
      CheckVarlenClass(ProblemClass{DType::kBF16, head_dim, causal}, variants);
      CheckVarlenClass(ProblemClass{DType::kBF16, head_dim, causal}, variants, false);
    }
}

// decode_fwd on varlen decode batches (at most 16 queries per sequence): ragged key counts
// (0, 1, 17, 1000, 4097) with one query each and GQA 4:1 (the engine's decode step), 1 to 16
// queries with GQA 8:1 (speculative decoding; causal rows before the diagonal see few keys),
// and MQA; a variant that splits the keys (combine kernel, workspace rows [B, Hq, Nq]) and one
// whose 64-row tiles span several sequences' worth of rows.
class VarlenDecodeClasses : public ::testing::TestWithParam<std::tuple<DType, int, bool>> {};

TEST_P(VarlenDecodeClasses, DecodeVariantsMatchTheReference) {
  const auto [dtype, head_dim, causal] = GetParam();
  const ProblemClass cls{dtype, head_dim, causal};
  std::vector<Variant> variants = {FindFamily("decode_fwd")->Default(cls, Target{}),
                                   DecodeVariant(dtype, head_dim, causal, 32, 1, 2, 2, 4)};
  if (head_dim <= 64) variants.push_back(DecodeVariant(dtype, head_dim, causal, 128, 4, 8, 2, 1));
  ASSERT_NO_FATAL_FAILURE(testing::AssertValid(variants));
  auto gpu = testing::GetGpu();
  if (!gpu.ok()) GTEST_SKIP() << "no GPU to run on: " << gpu.status().ToString();
  auto kernels = testing::CompileAndLoad(**gpu, variants);
  uint64_t seed = 1700 + uint64_t(head_dim) + (causal ? 7 : 0) + (dtype == DType::kBF16 ? 3 : 0);
  std::vector<VarlenCase> cases;
  cases.push_back(MakeVarlenCase(**gpu, cls, 16, 4, {1, 1, 1, 1, 1}, {0, 1, 17, 1000, 4097}, seed += 10));
  cases.push_back(MakeVarlenCase(**gpu, cls, 16, 2, {16, 0, 3, 1, 9}, {300, 5, 2, 1, 4097}, seed += 10));
  cases.push_back(MakeVarlenCase(**gpu, cls, 8, 1, {4, 1, 16}, {1000, 0, 16}, seed += 10));
  testing::CheckEveryVariant(cls.ToString() + " varlen decode", variants, kernels, cases,
                             [&](const ForwardKernel& k, VarlenCase& c) { return RunVarlen(**gpu, k, c); });
}

INSTANTIATE_TEST_SUITE_P(VarlenGpu, VarlenDecodeClasses,
                         ::testing::Combine(::testing::Values(DType::kBF16, DType::kF16), ::testing::Values(64, 128, 256),
                                            ::testing::Bool()));

INSTANTIATE_TEST_SUITE_P(VarlenGpu, VarlenClasses,
                         ::testing::Combine(::testing::Values(DType::kBF16, DType::kF16), ::testing::Values(64, 96, 128, 256),
                                            ::testing::Bool()));

}  // namespace
}  // namespace flashtune
