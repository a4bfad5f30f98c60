// Occupancy before measuring: the SM limits, the CTAs an SM holds, the registers a replay
// reports, and the budgeted search that uses them.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "flashtune/arch.h"
#include "flashtune/replay_measurer.h"
#include "flashtune/occupancy.h"
#include "flashtune/tuner.h"
#include "tests/support/replay_fixture.h"

namespace flashtune {
namespace {

using namespace flashtune::testing;

// The case that made occupancy a factor: on the H200, d64 br128_bc32_w4 with two stages uses
// 168 registers and runs three CTAs per SM; with three stages ptxas gives it 172 and only two fit.
TEST(ResidentCtasPerSm, FourRegistersCostHopperACtaPerSm) {
  const SmLimits hopper = SmLimitsFor(9, 0);
  EXPECT_EQ(ResidentCtasPerSm(hopper, 168, 128, 36864), 3);
  EXPECT_EQ(ResidentCtasPerSm(hopper, 172, 128, 46080), 2);
  EXPECT_EQ(ResidentCtasPerSm(hopper, 255, 128, 55296), 2);
  EXPECT_EQ(ResidentCtasPerSm(hopper, 126, 128, 46080), 4);
}

TEST(ResidentCtasPerSm, SharedMemoryThreadsAndCtaCountLimitToo) {
  const SmLimits hopper = SmLimitsFor(9, 0);
  // 83 KB + 1 KB reserved per CTA: two fit in 228 KB, registers would allow three.
  EXPECT_EQ(ResidentCtasPerSm(hopper, 166, 128, 82944), 2);
  EXPECT_EQ(ResidentCtasPerSm(hopper, 32, 1024, 0), 2);  // 2048 threads
  EXPECT_EQ(ResidentCtasPerSm(hopper, 16, 32, 0), 32);   // the CTA limit
  // Ada and consumer Blackwell: 100 KB and 1536 threads per SM.
  const SmLimits ada = SmLimitsFor(8, 9);
  EXPECT_EQ(ResidentCtasPerSm(ada, 166, 128, 82944), 1);
  EXPECT_EQ(ResidentCtasPerSm(ada, 32, 1024, 0), 1);
  EXPECT_EQ(SmLimitsFor(12, 0).smem_bytes, 102400);
  EXPECT_EQ(SmLimitsFor(8, 0).smem_bytes, 167936);
  EXPECT_EQ(SmLimitsFor(10, 0).smem_bytes, 233472);
}

TEST(SmLimitsFor, ReadsTheArchTableAndTakesTheSmallestForAnUnknownArch) {
  for (const GpuArch& a : KnownGpuArchs()) {
    const SmLimits l = SmLimitsFor(a.cc_major, a.cc_minor);
    EXPECT_EQ(l.smem_bytes, a.smem_per_sm) << a.Name();
    EXPECT_EQ(l.threads, a.threads_per_sm) << a.Name();
    EXPECT_EQ(l.ctas, a.ctas_per_sm) << a.Name();
    EXPECT_EQ(l.registers, a.registers_per_sm) << a.Name();
  }
  const SmLimits unknown = SmLimitsFor(11, 0);
  EXPECT_EQ(unknown.smem_bytes, 102400);
  EXPECT_EQ(unknown.threads, 1536);
  EXPECT_EQ(unknown.ctas, 16);
}

TEST(ResidentCtasPerSm, ZeroWhenOneDoesNotFitOrNothingIsKnown) {
  const SmLimits hopper = SmLimitsFor(9, 0);
  EXPECT_EQ(ResidentCtasPerSm(hopper, 64, 128, 240 * 1024), 0);
  EXPECT_EQ(ResidentCtasPerSm(hopper, 0, 128, 1024), 0);
  EXPECT_EQ(ResidentCtasPerSm(hopper, 255, 1024, 0), 0);  // 255 x 1024 > 64K registers
}

// One problem's recorded search, as a replay CSV with registers: (variant suffix, µs, registers).
std::string OneProblemCsv(const std::vector<std::tuple<std::string, double, int>>& rows) {
  std::string csv = "dtype,head_dim,causal,batch,seqlen_q,seqlen_k,heads_q,heads_kv,variant,status,median_us,iqr_us,"
                    "registers,phase\n";
  for (const auto& [suffix, us, regs] : rows)
    csv += "bf16,64,0,32,512,512,32,32,fa2_fwd_bf16_d64_" + suffix + "_full,ok," + std::to_string(us) + ",0.5," +
           std::to_string(regs) + ",search\n";
  return csv;
}

TEST(ReplayMeasurer, CompiledRegistersComeFromTheRecording) {
  auto replay = ReplayMeasurer::FromText(OneProblemCsv({{"br128_bc32_w4_s2", 260.3, 168}}), "rec", {});
  ASSERT_TRUE(replay.ok()) << replay.status().ToString();
  auto v = Variant::FromUri("fa2_fwd_bf16_d64_br128_bc32_w4_s2_full");
  ASSERT_TRUE(v.ok());
  auto regs = (*replay)->CompiledRegisters(*v);
  ASSERT_TRUE(regs.ok()) << regs.status().ToString();
  EXPECT_EQ(*regs, 168);
  auto other = Variant::FromUri("fa2_fwd_bf16_d64_br128_bc64_w4_s2_full");
  EXPECT_EQ((*replay)->CompiledRegisters(*other).status().code(), Code::kNotFound);
}

// The H200 run (bench/data/h200-2026-11-30-v2-tune-run3-and-budgeted-2.log) that missed bf16 d64 full by 5%:
// the 13 times its pilot measured, the exhaustive run's for the 14 others, the registers ptxas
// gave each. br128_bc32_w4_s2 (168 registers, 12 warps per SM) is 4% ahead of everything, but
// its neighbour in stages (172 registers, 8 warps per SM) is 12% behind, so a model of the
// parameters alone steers away from B_c = 32; the residency factor sends the search there.
TEST(BudgetedStrategy, FindsAWinnerThatOnlyOccupancySetsApart) {
  const std::string csv = OneProblemCsv({
      {"br128_bc64_w4_s2", 275.9, 230}, {"br128_bc64_w4_s3", 272.1, 229},  {"br64_bc128_w4_s2", 321.5, 166},
      {"br64_bc128_w4_s3", 465.2, 167}, {"br128_bc32_w4_s2", 260.3, 168},  {"br128_bc32_w4_s3", 304.4, 172},
      {"br128_bc128_w8_s2", 390.3, 169}, {"br128_bc128_w8_s3", 377.7, 166}, {"br128_bc64_w4_s1", 304.8, 224},
      {"br64_bc64_w4_s2", 270.4, 126},  {"br64_bc64_w4_s3", 297.3, 126},   {"br128_bc64_w8_s2", 293.1, 122},
      {"br128_bc64_w8_s3", 293.2, 122}, {"br64_bc128_w4_s1", 291.8, 165},  {"br128_bc32_w4_s1", 300.3, 168},
      {"br128_bc128_w8_s1", 425.5, 174}, {"br64_bc32_w4_s2", 288.6, 96},    {"br64_bc32_w4_s3", 292.7, 95},
      {"br128_bc32_w8_s2", 322.5, 122}, {"br128_bc32_w8_s3", 326.1, 120},  {"br64_bc64_w4_s1", 291.2, 126},
      {"br128_bc64_w8_s1", 319.0, 126}, {"br64_bc32_w4_s1", 322.0, 94},    {"br128_bc32_w8_s1", 410.1, 120},
      {"br128_bc128_w4_s2", 279.9, 255}, {"br128_bc128_w4_s3", 406.9, 255}, {"br128_bc128_w4_s1", 292.5, 255},
  });
  auto space = ReplayMeasurer::FromText(csv, "h200", {});
  auto measurer = ReplayMeasurer::FromText(csv, "h200", {});
  ASSERT_TRUE(space.ok() && measurer.ok());
  std::vector<std::unique_ptr<Measurer>> ms;
  ms.push_back(std::move(*measurer));
  TuneOptions o = ReplayTuneOptions(TempDir("occupancy") + "/t.db", (*space)->Problems(), space->get());
  o.strategy = "budgeted";
  auto summary = Tune(o, std::move(ms));
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  ASSERT_EQ(summary->problems.size(), 1u);
  EXPECT_EQ(summary->problems[0].winner_uri, "fa2_fwd_bf16_d64_br128_bc32_w4_s2_full");
  EXPECT_LE(summary->problems[0].measured, 16);  // 13 searched (45% of 27) + re-timings
}

}  // namespace
}  // namespace flashtune
