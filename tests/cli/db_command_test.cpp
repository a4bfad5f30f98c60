// `flashtune db prune` and `flashtune db merge` as a user runs them (the real binary): what
// prune removes and keeps, and that a merge refused after it created its target leaves no file
// behind. The Database calls beneath them have their own tests (tests/cache/database_test.cpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>

#include "flashtune/database.h"
#include "flashtune/toolchain.h"
#include "generator/families/fa2_fwd.h"
#include "tests/support/old_database.h"
#include "tests/support/replay_fixture.h"

namespace flashtune {
namespace {

using testing::ReadTextFile;
using testing::RunShell;
using testing::TempDir;
using testing::WriteOldDatabase;

struct CliRun {
  int rc = -1;
  std::string out;  // stdout and stderr together
};

CliRun Cli(const std::string& dir, const std::string& args) {
  const std::string log = dir + "/cli.log";
  CliRun r;
  r.rc = RunShell("'" FLASHTUNE_CLI_PATH "' " + args + " > '" + log + "' 2>&1");
  r.out = ReadTextFile(log);
  return r;
}

const DeviceRecord kGpu{"NVIDIA H200", "GPU-prune", 9, 0, 132, "580.65"};

Problem P(int64_t n) { return Problem{DType::kBF16, 128, false, 16384 / n, n, n, 16, 16}; }
Variant V(int bn) { return Fa2Variant(DType::kBF16, 128, false, 128, bn, 4, 2); }

// This build's rows (a trial and a winner at N 4096) beside another toolchain's (two trials, a
// winner at N 1024): prune removes exactly the other toolchain's, and says how many; this
// build's winner still serves.
TEST(DbCommand, PruneRemovesOtherToolchainsRowsAndKeepsThisBuilds) {
  const std::string dir = TempDir("db_cli_prune");
  const std::string path = dir + "/t.db";
  const ToolchainInfo current = CurrentToolchain();
  ToolchainInfo old = current;
  old.template_hash = "an-older-template";
  {
    auto db = Database::Open(path);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    const int64_t dev = *(*db)->UpsertDevice(kGpu), tc = *(*db)->UpsertToolchain(current),
                  otc = *(*db)->UpsertToolchain(old);
    for (auto [toolchain, p, us] : {std::tuple{tc, P(4096), 300.0}, {otc, P(4096), 310.0}, {otc, P(1024), 80.0}}) {
      TrialRecord t;
      t.problem = p;
      t.variant = V(64);
      t.source_hash = "src";
      t.median_us = us;
      t.iqr_us = 1;
      t.reps = 10;
      ASSERT_TRUE((*db)->RecordTrial(dev, toolchain, t).ok());
    }
    ASSERT_TRUE((*db)->SetWinner(dev, tc, P(4096), V(64), "src", 300, 1).ok());
    ASSERT_TRUE((*db)->SetWinner(dev, otc, P(1024), V(64), "src", 80, 1).ok());
  }
  const CliRun r = Cli(dir, "db prune --db '" + path + "'");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("pruned: 2 trial(s), 1 winner(s), 0 cubin(s), 1 toolchain(s) removed"), std::string::npos)
      << r.out;
  auto db = Database::Open(path, Database::OpenOptions{true, 100});
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  auto kept = (*db)->FindWinner(kGpu, current, BucketOf(P(4096)));
  ASSERT_TRUE(kept.ok() && kept->has_value()) << kept.status().ToString();
  EXPECT_DOUBLE_EQ((*kept)->median_us, 300);
  auto gone = (*db)->FindWinner(kGpu, old, BucketOf(P(1024)));
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone->has_value());
  // Nothing left to prune: a second run removes nothing and says so.
  const CliRun again = Cli(dir, "db prune --db '" + path + "'");
  EXPECT_EQ(again.rc, 0) << again.out;
  EXPECT_NE(again.out.find("pruned: 0 trial(s), 0 winner(s), 0 cubin(s), 0 toolchain(s) removed"), std::string::npos)
      << again.out;
}

// Prune writes: a damaged file is refused, named, and left as it was.
TEST(DbCommand, PruneRefusesADamagedDatabaseAndLeavesItAlone) {
  const std::string dir = TempDir("db_cli_prune_bad");
  const std::string path = dir + "/t.db";
  const std::string junk(8192, '\x17');
  std::ofstream(path, std::ios::binary) << junk;
  const CliRun r = Cli(dir, "db prune --db '" + path + "'");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("flashtune db prune"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(path), std::string::npos) << r.out;
  EXPECT_EQ(ReadTextFile(path), junk);
}

// A source of an older schema opens for reading, so the merge creates its new target before
// Database::Merge refuses the source; the target it created is removed again (with its -wal and
// -shm), and the source is untouched.
TEST(DbCommand, AMergeRefusedAfterCreatingItsTargetLeavesNoFileBehind) {
  const std::string dir = TempDir("db_cli_merge_old");
  const std::string source = dir + "/old.db", target = dir + "/new.db";
  ASSERT_TRUE(WriteOldDatabase(source, 3));
  const std::string before = ReadTextFile(source);
  const CliRun r = Cli(dir, "db merge '" + source + "' --db '" + target + "' --no-verify-cubins");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("has schema version 3"), std::string::npos) << r.out;
  for (const char* suffix : {"", "-wal", "-shm"})
    EXPECT_FALSE(std::filesystem::exists(target + suffix)) << target + suffix << " was left behind";
  EXPECT_EQ(ReadTextFile(source), before);
  // Into a target that existed, the refusal leaves the target where it was.
  {
    auto db = Database::Open(target);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
  }
  const CliRun into = Cli(dir, "db merge '" + source + "' --db '" + target + "' --no-verify-cubins");
  EXPECT_NE(into.rc, 0);
  EXPECT_TRUE(std::filesystem::exists(target));
}

}  // namespace
}  // namespace flashtune
