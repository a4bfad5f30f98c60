// The GPU-architecture table: one row per compute capability, one rule for the names accepted.
#include "flashtune/arch.h"

#include <gtest/gtest.h>

#include <string>

namespace flashtune {
namespace {

TEST(GpuArch, HopperHasWgmmaAndTheArchSpecificTarget) {
  const GpuArch* h = FindGpuArch(9, 0);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->Name(), "sm_90a");
  EXPECT_TRUE(h->cp_async);
  EXPECT_TRUE(h->wgmma);
  EXPECT_EQ(h->max_smem_per_block_optin, 232448);
  EXPECT_EQ(h->smem_per_sm, 233472);
  const GpuArch* a = FindGpuArch(8, 0);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->Name(), "sm_80");
  EXPECT_TRUE(a->cp_async);
  EXPECT_FALSE(a->wgmma);
  // wgmma is Hopper's alone: Blackwell has other tensor-core instructions.
  for (const GpuArch& g : KnownGpuArchs()) EXPECT_EQ(g.wgmma, g.cc_major == 9) << g.Name();
  EXPECT_EQ(FindGpuArch(7, 5), nullptr);
}

TEST(GpuArch, EveryKnownRowFitsTheLimitsOfItsSm) {
  for (const GpuArch& g : KnownGpuArchs()) {
    EXPECT_TRUE(g.cp_async) << g.Name();  // the FA-2 template needs it: no row without
    EXPECT_LE(g.max_smem_per_block_optin, g.smem_per_sm) << g.Name();
    EXPECT_GT(g.registers_per_sm, 0) << g.Name();
    EXPECT_GT(g.threads_per_sm, 0) << g.Name();
    EXPECT_GT(g.ctas_per_sm, 0) << g.Name();
  }
}

TEST(ParseGpuArch, PlainAndArchSpecificNamesMeanOneRow) {
  auto plain = ParseGpuArch("sm_90");
  auto specific = ParseGpuArch("sm_90a");
  ASSERT_TRUE(plain.ok() && specific.ok());
  EXPECT_EQ(plain->cc_major, 9);
  EXPECT_EQ(specific->cc_minor, 0);
  ASSERT_TRUE(ParseGpuArch("sm_86").ok());
  EXPECT_EQ(ParseGpuArch("sm_86")->max_smem_per_block_optin, 101376);
  ASSERT_TRUE(ParseGpuArch("sm_121a").ok());
  EXPECT_EQ(ParseGpuArch("sm_121a")->cc_major, 12);
  EXPECT_EQ(ParseGpuArch("sm_100a")->cc_major, 10);
}

TEST(ParseGpuArch, RefusesUnknownAndMalformedTargetsNamingTheKnownOnes) {
  for (const char* bad : {"sm_75", "sm_99", "sm_80a", "sm_", "sm_9", "sm_90b", "compute_90", "garbage", ""}) {
    auto a = ParseGpuArch(bad);
    ASSERT_FALSE(a.ok()) << bad;
    EXPECT_EQ(a.status().code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(a.status().message().find("allowed: " + KnownArchs()), std::string::npos) << a.status().message();
  }
}

TEST(KnownArchs, ListsEveryNameParseGpuArchAccepts) {
  std::string archs = KnownArchs() + ", ";
  int names = 0;
  for (size_t pos; (pos = archs.find(", ")) != std::string::npos; archs.erase(0, pos + 2), ++names) {
    const std::string name = archs.substr(0, pos);
    EXPECT_TRUE(ParseGpuArch(name).ok()) << name;
    EXPECT_GT(MaxSharedMemoryForArch(name), 0) << name;
  }
  EXPECT_GT(names, static_cast<int>(KnownGpuArchs().size()));  // plain and "a" names from 9.0 on
}

TEST(ArchFor, IsArchSpecificFromHopperOn) {
  EXPECT_EQ(ArchFor(8, 6), "sm_86");
  EXPECT_EQ(ArchFor(9, 0), "sm_90a");
  EXPECT_EQ(ArchFor(12, 1), "sm_121a");
  EXPECT_EQ(ArchFor(7, 5), "sm_75");  // defined for unknown capabilities too
}

}  // namespace
}  // namespace flashtune
