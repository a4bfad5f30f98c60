// `flashtune tune` and `flashtune db` as processes: kill -9 and resume, concurrent writers,
// exit codes.
#include <gtest/gtest.h>
#include "flashtune/compiler.h"
#include "flashtune/source.h"
#include "flashtune/space.h"
#include "flashtune/driver.h"
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "flashtune/database.h"
#include "tests/support/replay_fixture.h"

namespace flashtune {
namespace {

using namespace flashtune::testing;

pid_t Spawn(const std::vector<std::string>& args) {
  pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    execv(FLASHTUNE_CLI_PATH, argv.data());
    _exit(127);
  }
  return pid;
}

int Wait(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int64_t Query(const std::string& db, const std::string& sql) {
  sqlite3* raw;
  sqlite3_open(db.c_str(), &raw);
  sqlite3_stmt* st;
  int64_t v = -1;
  if (sqlite3_prepare_v2(raw, sql.c_str(), -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(raw);
  return v;
}

std::string QueryText(const std::string& db, const std::string& sql) {
  sqlite3* raw;
  sqlite3_open(db.c_str(), &raw);
  sqlite3_stmt* st;
  std::string v = "<error>";
  if (sqlite3_prepare_v2(raw, sql.c_str(), -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
      sqlite3_column_text(st, 0))
    v = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  sqlite3_close(raw);
  return v;
}

std::string AllRowsCsv(size_t* rows_out) {
  std::vector<RecordedRow> rows;
  auto problems = SmallProblemSet();
  for (size_t i = 0; i < problems.size(); ++i) {
    auto r = SyntheticRows(problems[i], uint32_t(i + 1));
    rows.insert(rows.end(), r.begin(), r.end());
  }
  *rows_out = rows.size();
  return ReplayCsv(rows);
}

TEST(TuneCli, KillNineThenResumeCompletesWithoutDuplicates) {
  std::string dir = TempDir("cli_kill");
  size_t n_rows = 0;
  std::string replay = dir + "/rec.csv";
  std::ofstream(replay) << AllRowsCsv(&n_rows);
  std::string db = dir + "/t.db";
  const std::string cli = FLASHTUNE_CLI_PATH;
  pid_t pid = Spawn({cli, "tune", "--replay", replay, "--db", db, "--replay-delay-ms", "3"});
  // Wait until it has recorded some trials, then kill it hard mid-run.
  for (int i = 0; i < 400 && Query(db, "SELECT count(*) FROM trials") < 40; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  Wait(pid);
  int64_t before = Query(db, "SELECT count(*) FROM trials WHERE phase = 'search'");
  ASSERT_GT(before, 0);
  ASSERT_LT(before, int64_t(n_rows)) << "the run finished before it was killed; nothing tested";

  EXPECT_EQ(Wait(Spawn({cli, "tune", "--replay", replay, "--db", db})), 0);
  EXPECT_EQ(Query(db, "SELECT count(*) FROM trials WHERE phase = 'search'"), int64_t(n_rows));
  EXPECT_EQ(Query(db, "SELECT count(*) FROM (SELECT problem_id, variant_id FROM trials WHERE phase = 'search'"
                      " GROUP BY 1, 2 HAVING count(*) > 1)"), 0);
  EXPECT_EQ(Query(db, "SELECT count(*) FROM winners"), int64_t(SmallProblemSet().size()));
  EXPECT_EQ(Query(db, "SELECT count(*) FROM tuning_runs WHERE ended_at IS NOT NULL"), 1);  // the killed one never ended
  // --retune measures everything again.
  EXPECT_EQ(Wait(Spawn({cli, "tune", "--replay", replay, "--db", db, "--retune", "--dtypes", "bf16", "--head-dims",
                        "64", "--causal", "0", "--seqlens", "512"})), 0);
  EXPECT_GT(Query(db, "SELECT count(*) FROM trials WHERE phase = 'search'"), int64_t(n_rows));
}

TEST(TuneCli, TwoProcessesOnOneDatabaseLoseNothing) {
  std::string dir = TempDir("cli_concurrent");
  size_t n_rows = 0;
  std::string replay = dir + "/rec.csv";
  std::ofstream(replay) << AllRowsCsv(&n_rows);
  std::string db = dir + "/t.db";
  const std::string cli = FLASHTUNE_CLI_PATH;
  pid_t a = Spawn({cli, "tune", "--replay", replay, "--db", db, "--dtypes", "bf16", "--seqlens", "512,2048",
                   "--devices", "0"});
  pid_t b = Spawn({cli, "tune", "--replay", replay, "--db", db, "--dtypes", "f16", "--seqlens", "512,2048",
                   "--devices", "1"});
  EXPECT_EQ(Wait(a), 0);
  EXPECT_EQ(Wait(b), 0);
  EXPECT_EQ(Query(db, "SELECT count(*) FROM trials WHERE phase = 'search'"), int64_t(n_rows));
  EXPECT_EQ(Query(db, "SELECT count(*) FROM winners"), int64_t(SmallProblemSet().size()));
  EXPECT_EQ(Query(db, "SELECT count(*) FROM devices"), 2);
}

TEST(TuneCli, DryRunListsWorkAndMeasuresNothing) {
  std::string dir = TempDir("cli_dry");
  std::string out = dir + "/out.txt";
  int rc = RunShell(std::string(FLASHTUNE_CLI_PATH) + " tune --dry-run --db " + dir +
                    "/t.db --dtypes bf16 --head-dims 128 --causal 1 --seqlens 4096 > " + out);
  EXPECT_EQ(rc, 0);
  std::ifstream f(out);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_NE(ss.str().find("fa2_fwd_bf16_d128_br128_bc64_w4_s2_causal"), std::string::npos) << ss.str();
  EXPECT_NE(ss.str().find("1 problem(s)"), std::string::npos);
  EXPECT_FALSE(std::ifstream(dir + "/t.db").good());  // dry run creates no database
  // Bad options are usage errors.
  EXPECT_EQ(RunShell(std::string(FLASHTUNE_CLI_PATH) + " tune --dry-run --head-dims 100 2>/dev/null"), 2);
  EXPECT_EQ(RunShell(std::string(FLASHTUNE_CLI_PATH) + " tune --strategy random 2>/dev/null"), 2);
  EXPECT_EQ(RunShell(std::string(FLASHTUNE_CLI_PATH) + " tune --budget-total 5% 2>/dev/null"), 2);
  EXPECT_EQ(RunShell(std::string(FLASHTUNE_CLI_PATH) + " tune --compile-only --arch sm_7x 2>/dev/null"), 2);
  EXPECT_EQ(RunShell(std::string(FLASHTUNE_CLI_PATH) + " tune --dry-run --seqlens 0 2>/dev/null"), 2);
}

// --arch takes what the arch table knows, the rule `generate` applies, and prunes a run without a
// GPU with that target's shared memory (a d256 space is much smaller on sm_86 than on sm_90a).
TEST(TuneCli, ArchFollowsTheArchTable) {
  const std::string dir = TempDir("cli_arch");
  const std::string out = dir + "/out.txt";
  const std::string cli = std::string(FLASHTUNE_CLI_PATH) + " tune --dry-run --db " + dir +
                          "/t.db --dtypes f16 --head-dims 256 --causal 0 --seqlens 512";
  for (const char* arch : {"sm_86", "sm_90a"}) {
    ASSERT_EQ(RunShell(cli + " --arch " + arch + " > " + out), 0) << arch;
    std::ifstream f(out);
    std::stringstream ss;
    ss << f.rdbuf();
    SpaceOptions space;
    space.max_smem_bytes = MaxSharedMemoryForArch(arch);
    auto expected = EnumerateSpace({DType::kF16, 256, false}, space);
    ASSERT_TRUE(expected.ok());
    EXPECT_NE(ss.str().find(", " + std::to_string(expected->size()) + " candidate(s) to compile"), std::string::npos)
        << arch << ": " << ss.str();
  }
  EXPECT_EQ(RunShell(cli + " --arch sm_121a > /dev/null 2>&1"), 0);
  for (const char* bad : {"sm_99", "sm_75", "sm_80a"})
    EXPECT_EQ(RunShell(cli + " --arch " + bad + " > /dev/null 2>&1"), 2) << bad;
}

TEST(TuneCli, WithoutAGpuCompilesStoresCubinsAndSaysTimingNeedsAGpu) {
  if (flashtune::Driver::Load().ok()) GTEST_SKIP() << "a CUDA driver is present: tune would time on the GPU";
  const std::string dir = TempDir("cli_nogpu");
  const std::string out = dir + "/out.txt";
  EXPECT_EQ(RunShell(std::string(FLASHTUNE_CLI_PATH) + " tune --db " + dir + "/t.db --dtypes bf16 --head-dims 64 "
                     "--causal 0 --seqlens 512 > " + out + " 2>&1"), 0);
  std::ifstream f(out);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_NE(ss.str().find("timing needs a CUDA GPU"), std::string::npos) << ss.str();
  // The cubins are in the database: the runtime of a later GPU run starts warm.
  auto db = flashtune::Database::Open(dir + "/t.db");
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  auto space = flashtune::EnumerateSpace({flashtune::DType::kBF16, 64, false});
  ASSERT_TRUE(space.ok());
  auto source = flashtune::GenerateSource(space->front());
  ASSERT_TRUE(source.ok());
  auto cubin = (*db)->GetCubin(source->sha256, "sm_90a", "", flashtune::Compiler::NvrtcVersion());
  ASSERT_TRUE(cubin.ok()) << cubin.status().ToString();
  EXPECT_EQ(std::string(cubin->image.data(), 4), "\x7f" "ELF");
}

TEST(DbCli, ExitCodesAndRoundTrip) {
  std::string dir = TempDir("cli_db");
  const std::string cli = FLASHTUNE_CLI_PATH;
  size_t n_rows = 0;
  std::string replay = dir + "/rec.csv";
  std::ofstream(replay) << AllRowsCsv(&n_rows);
  std::string db = dir + "/t.db";
  ASSERT_EQ(RunShell(cli + " tune --replay " + replay + " --db " + db + " 2>/dev/null"), 0);
  auto sh = [&](const std::string& args) { return RunShell(cli + " db " + args + " >/dev/null 2>&1"); };
  EXPECT_EQ(sh("list --db " + db), 0);
  EXPECT_EQ(sh("show 1 --db " + db), 0);
  EXPECT_EQ(sh("show --db " + db + " --dtype bf16 --head-dim 64 --nq 512 --batch 32 --hq 32"), 0);
  EXPECT_EQ(sh("show 9999 --db " + db), 1);
  EXPECT_EQ(sh("show x1 --db " + db), 2);
  EXPECT_EQ(sh("check --db " + db), 0);
  EXPECT_EQ(sh(""), 2);
  EXPECT_EQ(sh("frobnicate"), 2);
  EXPECT_EQ(sh("export --db " + db), 2);  // --format missing
  EXPECT_EQ(sh("export --format xml --db " + db), 2);
  EXPECT_EQ(sh("merge --db " + db), 2);
  EXPECT_EQ(sh("list --db " + dir + "/absent.db"), 1);
  EXPECT_EQ(sh("list --bogus"), 2);
  std::string bad = dir + "/bad.db";
  std::ofstream(bad) << "not sqlite";
  EXPECT_EQ(sh("list --db " + bad), 1);
  EXPECT_EQ(sh("merge " + bad + " --db " + db), 1);
  std::ifstream f(bad);
  std::string content((std::istreambuf_iterator<char>(f)), {});
  EXPECT_EQ(content, "not sqlite");

  // export → replay → a fresh database gets the same winners; merge is idempotent.
  for (const char* fmt : {"csv", "json"}) {
    std::string exported = dir + "/export." + fmt;
    ASSERT_EQ(sh(std::string("export --format ") + fmt + " --db " + db + " -o " + exported), 0);
    std::string db2 = dir + "/t2_" + fmt + ".db";
    ASSERT_EQ(RunShell(cli + " tune --replay " + exported + " --db " + db2 + " >/dev/null 2>&1"), 0);
    EXPECT_EQ(Query(db2, "SELECT count(*) FROM winners"), Query(db, "SELECT count(*) FROM winners"));
    const char* kWinners = "SELECT group_concat(uri) FROM (SELECT v.uri AS uri FROM winners w JOIN variants v"
                           " ON v.id = w.variant_id ORDER BY w.bucket)";
    EXPECT_EQ(QueryText(db2, kWinners), QueryText(db, kWinners)) << fmt;
  }
  std::string db3 = dir + "/t3.db";
  ASSERT_EQ(sh("merge " + db + " --db " + db3), 0);
  int64_t trials = Query(db3, "SELECT count(*) FROM trials");
  EXPECT_EQ(trials, Query(db, "SELECT count(*) FROM trials"));
  ASSERT_EQ(sh("merge " + db + " --db " + db3), 0);
  EXPECT_EQ(Query(db3, "SELECT count(*) FROM trials"), trials);
}

}  // namespace
}  // namespace flashtune
