// `flashtune tune` and `flashtune db` as processes: kill -9 and resume, concurrent writers,
// exit codes. Tunes name the exhaustive strategy: these tests count every recorded trial, and the
// default, auto, searches d64 budgeted.
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

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "flashtune/database.h"
#include "flashtune/toolchain.h"
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

// A scratch directory holding a replay file of every SmallProblemSet() measurement, with the
// paths the tests pass to the CLI.
struct Scratch {
  explicit Scratch(const std::string& name) : dir(TempDir(name)), replay(dir + "/rec.csv"), db(dir + "/t.db") {
    std::ofstream(replay) << AllRowsCsv(&n_rows);
  }
  // `flashtune tune` over the whole replay file into db, exhaustive; its exit code.
  int TuneAll() const {
    return RunShell(cli + " tune --strategy exhaustive --replay " + replay + " --db " + db + " >/dev/null 2>&1");
  }
  std::string dir;
  const std::string cli = FLASHTUNE_CLI_PATH;
  std::string replay, db;
  size_t n_rows = 0;
};

TEST(TuneCli, KillNineThenResumeCompletesWithoutDuplicates) {
  const Scratch s("cli_kill");
  const std::string &cli = s.cli, &replay = s.replay, &db = s.db;
  const size_t n_rows = s.n_rows;
  pid_t pid = Spawn({cli, "tune", "--strategy", "exhaustive", "--replay", replay, "--db", db, "--replay-delay-ms", "3"});
  // Wait until it has recorded some trials, then kill it hard mid-run.
  for (int i = 0; i < 400 && Query(db, "SELECT count(*) FROM trials") < 40; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  Wait(pid);
  int64_t before = Query(db, "SELECT count(*) FROM trials WHERE phase = 'search'");
  ASSERT_GT(before, 0);
  ASSERT_LT(before, int64_t(n_rows)) << "the run finished before it was killed; nothing tested";

  EXPECT_EQ(Wait(Spawn({cli, "tune", "--strategy", "exhaustive", "--replay", replay, "--db", db})), 0);
  EXPECT_EQ(Query(db, "SELECT count(*) FROM trials WHERE phase = 'search'"), int64_t(n_rows));
  EXPECT_EQ(Query(db, "SELECT count(*) FROM (SELECT problem_id, variant_id FROM trials WHERE phase = 'search'"
                      " GROUP BY 1, 2 HAVING count(*) > 1)"), 0);
  EXPECT_EQ(Query(db, "SELECT count(*) FROM winners"), int64_t(SmallProblemSet().size()));
  EXPECT_EQ(Query(db, "SELECT count(*) FROM tuning_runs WHERE ended_at IS NOT NULL"), 1);  // the killed one never ended
  // --retune measures everything again.
  EXPECT_EQ(Wait(Spawn({cli, "tune", "--strategy", "exhaustive", "--replay", replay, "--db", db, "--retune", "--dtypes", "bf16", "--head-dims",
                        "64", "--causal", "0", "--seqlens-q", "512"})), 0);
  EXPECT_GT(Query(db, "SELECT count(*) FROM trials WHERE phase = 'search'"), int64_t(n_rows));
}

TEST(TuneCli, TwoProcessesOnOneDatabaseLoseNothing) {
  const Scratch s("cli_concurrent");
  const std::string &cli = s.cli, &replay = s.replay, &db = s.db;
  const size_t n_rows = s.n_rows;
  pid_t a = Spawn({cli, "tune", "--strategy", "exhaustive", "--replay", replay, "--db", db, "--dtypes", "bf16", "--seqlens-q", "512,2048",
                   "--devices", "0"});
  pid_t b = Spawn({cli, "tune", "--strategy", "exhaustive", "--replay", replay, "--db", db, "--dtypes", "f16", "--seqlens-q", "512,2048",
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
                    "/t.db --dtypes bf16 --head-dims 128 --causal 1 --seqlens-q 4096 > " + out);
  EXPECT_EQ(rc, 0);
  const std::string listed = ReadTextFile(out);
  EXPECT_NE(listed.find("fa2_fwd_bf16_d128_br128_bc64_w4_s2_causal"), std::string::npos) << listed;
  EXPECT_NE(listed.find("1 problem(s)"), std::string::npos);
  EXPECT_FALSE(std::ifstream(dir + "/t.db").good());  // dry run creates no database
  // Bad options are usage errors.
  EXPECT_EQ(RunShell(std::string(FLASHTUNE_CLI_PATH) + " tune --dry-run --head-dims 100 2>/dev/null"), 2);
  EXPECT_EQ(RunShell(std::string(FLASHTUNE_CLI_PATH) + " tune --strategy random 2>/dev/null"), 2);
  EXPECT_EQ(RunShell(std::string(FLASHTUNE_CLI_PATH) + " tune --budget-total 5% 2>/dev/null"), 2);
  EXPECT_EQ(RunShell(std::string(FLASHTUNE_CLI_PATH) + " tune --compile-only --arch sm_7x 2>/dev/null"), 2);
  EXPECT_EQ(RunShell(std::string(FLASHTUNE_CLI_PATH) + " tune --dry-run --seqlens-q 0 2>/dev/null"), 2);
  // Shapes the runtime would refuse are not scheduled: B = tokens / Nq = 4194304 > 65535.
  const std::string err = dir + "/err.txt";
  EXPECT_EQ(RunShell(std::string(FLASHTUNE_CLI_PATH) + " tune --dry-run --db " + dir +
                     "/t.db --seqlens-q 512 --tokens 2147483648 2> " + err),
            2);
  EXPECT_NE(ReadTextFile(err).find("batch (4194304) must be in [1, 65535]"), std::string::npos) << ReadTextFile(err);
}

// --operation picks the pass each shape is tuned for: bwd lists fa2_bwd's candidates under the
// backward problem, both lists the two problems of each shape.
TEST(TuneCli, OperationPicksThePassOfEachShape) {
  const std::string dir = TempDir("cli_operation");
  const std::string out = dir + "/out.txt";
  const std::string cli = std::string(FLASHTUNE_CLI_PATH) + " tune --dry-run --db " + dir +
                          "/t.db --dtypes bf16 --head-dims 64 --causal 0 --seqlens-q 1024 --strategy exhaustive";
  ASSERT_EQ(RunShell(cli + " --operation bwd > " + out), 0) << ReadTextFile(out);
  std::string listed = ReadTextFile(out);
  EXPECT_NE(listed.find("fa2_bwd_bf16_d64_"), std::string::npos) << listed;
  EXPECT_EQ(listed.find("fa2_fwd_"), std::string::npos) << listed;
  EXPECT_NE(listed.find("1 problem(s)"), std::string::npos) << listed;
  ASSERT_EQ(RunShell(cli + " --operation both > " + out), 0) << ReadTextFile(out);
  listed = ReadTextFile(out);
  EXPECT_NE(listed.find("fa2_bwd_bf16_d64_"), std::string::npos) << listed;
  EXPECT_NE(listed.find("fa2_fwd_bf16_d64_"), std::string::npos) << listed;
  EXPECT_NE(listed.find("2 problem(s)"), std::string::npos) << listed;
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
    const std::string listed = ReadTextFile(out);
    SpaceOptions space;
    space.max_smem_bytes = MaxSharedMemoryForArch(arch);
    auto expected = EnumerateSpaceFor(Problem{DType::kF16, 256, false, 32, 512, 512, 8, 8}, space);
    ASSERT_TRUE(expected.ok());
    EXPECT_NE(listed.find(", " + std::to_string(expected->size()) + " candidate(s) to compile"), std::string::npos)
        << arch << ": " << listed;
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
                     "--causal 0 --seqlens-q 512 > " + out + " 2>&1"), 0);
  EXPECT_NE(ReadTextFile(out).find("timing needs a CUDA GPU"), std::string::npos) << ReadTextFile(out);
  // The cubins are in the database: the runtime of a later GPU run starts warm.
  auto db = flashtune::Database::Open(dir + "/t.db");
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  auto space = flashtune::EnumerateSpaceFor(flashtune::Problem{flashtune::DType::kBF16, 64, false, 32, 512, 512, 32, 32});
  ASSERT_TRUE(space.ok());
  auto source = flashtune::GenerateSource(space->front());
  ASSERT_TRUE(source.ok());
  auto cubin = (*db)->GetCubin(source->sha256, "sm_90a", "", flashtune::Compiler::NvrtcVersion());
  ASSERT_TRUE(cubin.ok()) << cubin.status().ToString();
  EXPECT_EQ(std::string(cubin->image.data(), 4), "\x7f" "ELF");
}

// A machine with an H200 and an A100 (the recording fake driver, whose GPUs run nothing, so
// every candidate is a wrong result: what matters here is which candidates each GPU is given).
// Each GPU searches its own arch's space: the A100 no wgmma family (it could compile none of
// it), the H200 its families and its shared memory (not the A100's).
TEST(TuneCli, EachGpuOfAMixedMachineSearchesItsOwnSpace) {
  const std::string dir = TempDir("cli_mixed");
  const std::string db = dir + "/t.db", out = dir + "/out.txt";
  EXPECT_EQ(RunShell("FLASHTUNE_LIBCUDA='" FLASHTUNE_FAKE_GPU_LIBCUDA "' FLASHTUNE_CACHE_DIR='" + dir + "/cubins' '" +
                     std::string(FLASHTUNE_CLI_PATH) + "' tune --db " + db + " --strategy exhaustive --dtypes bf16 "
                     "--head-dims 64 --causal 0 --seqlens-q 512 --hidden 256 --tokens 1024 --decode none "
                     "--operation fwd > " + out + " 2>&1"),
            0)
      << ReadTextFile(out);
  const std::string trials_on = "SELECT count(*) FROM trials t JOIN devices d ON d.id = t.device_id "
                                "JOIN variants v ON v.id = t.variant_id WHERE d.name ";
  const std::string a100 = "= 'NVIDIA A100-SXM4-80GB'", h200 = "= 'NVIDIA H200'";
  EXPECT_GT(Query(db, trials_on + a100), 0) << ReadTextFile(out);
  EXPECT_EQ(Query(db, trials_on + a100 + " AND v.uri NOT LIKE 'fa2_fwd_%'"), 0) << ReadTextFile(out);
  EXPECT_EQ(Query(db, "SELECT count(*) FROM trials WHERE status = 'compile_error'"), 0) << ReadTextFile(out);
  EXPECT_GT(Query(db, trials_on + h200 + " AND v.uri LIKE 'hopper_fwd_%'"), 0) << ReadTextFile(out);
  // The H200's space, fitted to its 227 KB, not the A100's 163 KB.
  auto space = EnumerateSpaceFor(Problem{DType::kBF16, 64, false, 2, 512, 512, 4, 4});
  ASSERT_TRUE(space.ok());
  EXPECT_EQ(Query(db, trials_on + h200), static_cast<int64_t>(space->size())) << ReadTextFile(out);
}

// A dry run on a GPU machine plans for the GPU a run would measure on (the fake driver's: GPU 0
// an H200, GPU 1 an A100): its arch's candidates, and the winners that GPU model already has
// skipped, as the run itself would.
TEST(TuneCli, ADryRunPlansForTheLocalGpu) {
  const std::string dir = TempDir("cli_dry_gpu");
  const std::string db = dir + "/t.db", out = dir + "/out.txt";
  const Problem tuned{DType::kBF16, 64, false, 32, 512, 512, 32, 32};
  {  // a winner for the H200 of the fake driver (its worker's device record), this build
    auto d = Database::Open(db);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    const DeviceRecord h200{"NVIDIA H200", "GPU-f0f1f2f3-f4f5-f6f7-f8f9-fafbfcfdfeff", 9, 0, 132, "13.0"};
    const int64_t dev = *(*d)->UpsertDevice(h200), tc = *(*d)->UpsertToolchain(CurrentToolchain());
    auto space = EnumerateSpaceFor(tuned);
    ASSERT_TRUE(space.ok());
    TrialRecord t;
    t.problem = tuned;
    t.variant = space->front();
    t.source_hash = "src";
    t.median_us = 100;
    t.reps = 10;
    ASSERT_TRUE((*d)->RecordTrial(dev, tc, t).ok());
    ASSERT_TRUE((*d)->SetWinner(dev, tc, tuned, t.variant, "src", 100, 1).ok());
  }
  auto dry = [&](const std::string& extra) {
    EXPECT_EQ(RunShell("FLASHTUNE_LIBCUDA='" FLASHTUNE_FAKE_GPU_LIBCUDA "' '" + std::string(FLASHTUNE_CLI_PATH) +
                       "' tune --dry-run --db " + db + " --strategy budgeted --dtypes bf16 --head-dims 64 --causal 0 "
                       "--seqlens-q 512,1024 --decode none " + extra + " > " + out + " 2>&1"),
              0);
    return ReadTextFile(out);
  };
  std::string text = dry("");
  EXPECT_NE(text.find("dry run for GPU 0, NVIDIA H200 (sm_90a)"), std::string::npos) << text;
  EXPECT_NE(text.find("Nq512 Nk512 Hq32 Hkv32  [bf16/d64/full/q9/k9/bh10]  skip (winner present)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("hopper_fwd_"), std::string::npos) << text;
  text = dry("--devices 1");
  EXPECT_NE(text.find("dry run for GPU 1, NVIDIA A100-SXM4-80GB (sm_80)"), std::string::npos) << text;
  EXPECT_EQ(text.find("skip (winner present)"), std::string::npos) << text;  // the A100 has no winner
  EXPECT_EQ(text.find("hopper_fwd_"), std::string::npos) << text;
  EXPECT_NE(text.find("fa2_fwd_"), std::string::npos) << text;
  // --arch names the target: the dry run lists its space whatever the GPU here.
  text = dry("--arch sm_80");
  EXPECT_EQ(text.find("dry run for GPU"), std::string::npos) << text;
  EXPECT_EQ(text.find("hopper_fwd_"), std::string::npos) << text;
}

TEST(DbCli, ExitCodesAndRoundTrip) {
  const Scratch s("cli_db");
  const std::string &dir = s.dir, &cli = s.cli, &db = s.db;
  ASSERT_EQ(s.TuneAll(), 0);
  auto sh = [&](const std::string& args) { return RunShell(cli + " db " + args + " >/dev/null 2>&1"); };
  EXPECT_EQ(sh("list --db " + db), 0);
  EXPECT_EQ(sh("show 1 --db " + db), 0);
  EXPECT_EQ(sh("show --db " + db + " --dtype bf16 --head-dim 64 --seqlen-q 512 --batch 32 --heads-q 32"), 0);
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
  EXPECT_EQ(ReadTextFile(bad), "not sqlite");

  // export → replay → a fresh database gets the same winners; merge is idempotent.
  for (const char* fmt : {"csv", "json"}) {
    std::string exported = dir + "/export." + fmt;
    ASSERT_EQ(sh(std::string("export --format ") + fmt + " --db " + db + " -o " + exported), 0);
    std::string db2 = dir + "/t2_" + fmt + ".db";
    ASSERT_EQ(RunShell(cli + " tune --strategy exhaustive --replay " + exported + " --db " + db2 + " >/dev/null 2>&1"), 0);
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

// db list and db show print one JSON object with --json (checked by Python's json module).
TEST(DbCli, ListAndShowPrintJson) {
  const Scratch s("cli_db_json");
  const std::string &dir = s.dir, &cli = s.cli, &db = s.db;
  ASSERT_EQ(s.TuneAll(), 0);
  auto json = [&](const std::string& args, std::string* text) {
    const std::string out = dir + "/out.json";
    const int rc = RunShell(cli + " db " + args + " --db " + db + " --json > " + out);
    *text = ReadTextFile(out);
    if (rc != 0) return rc;
    if (RunShell("command -v python3 >/dev/null") != 0) return 0;
    return RunShell("python3 -c 'import json, sys; json.load(sys.stdin)' < " + out) == 0 ? 0 : 100;
  };
  std::string list, show;
  ASSERT_EQ(json("list", &list), 0) << list;
  EXPECT_EQ(list.rfind("{\"database\":", 0), 0u) << list;
  EXPECT_NE(list.find("\"problem\":{\"dtype\":\"bf16\",\"head_dim\":64,\"causal\":false"), std::string::npos) << list;
  EXPECT_NE(list.find("\"winners\":" + std::to_string(SmallProblemSet().size()) + "}"), std::string::npos) << list;
  ASSERT_EQ(json("show 1", &show), 0) << show;
  EXPECT_EQ(show.rfind("{\"problem_id\":1,\"problem\":{", 0), 0u) << show;
  EXPECT_NE(show.find("\"rank\":1,\"variant\":\"fa2_fwd_"), std::string::npos) << show;
  // The winner the tuning stored, as `db list` names it, in both forms.
  const std::string winner = QueryText(db, "SELECT v.uri FROM winners w JOIN variants v ON v.id = w.variant_id "
                                       "WHERE w.problem_id = 1");
  ASSERT_NE(winner, "<error>");
  EXPECT_NE(show.find("\"winners\":[{\"variant\":\"" + winner + "\""), std::string::npos) << show;
  const std::string text = dir + "/show.txt";
  ASSERT_EQ(RunShell(cli + " db show 1 --db " + db + " > " + text), 0);
  EXPECT_NE(ReadTextFile(text).find("\nwinner: " + winner + " "), std::string::npos) << ReadTextFile(text);
}

// db show names what each measuring GPU would run untuned (DefaultVariantForGpu: the replay
// device is an sm_90a one) and marks that plan's trials, in text and in JSON.
TEST(DbCli, ShowMarksTheUntunedPlan) {
  const Scratch s("cli_db_untuned");
  const Problem p = SmallProblemSet()[0];
  auto untuned = DefaultVariantForGpu(p, 9, 0);
  ASSERT_TRUE(untuned.ok()) << untuned.status().ToString();
  std::vector<RecordedRow> rows = SyntheticRows(p, 1);
  ASSERT_TRUE(std::none_of(rows.begin(), rows.end(), [&](const RecordedRow& r) { return r.variant == *untuned; }));
  rows.push_back({p, *untuned, "ok", 2 * rows[0].median_us, 0.2, "search", ""});
  const std::string replay = s.dir + "/one.csv", text = s.dir + "/show.txt", json = s.dir + "/show.json";
  std::ofstream(replay) << ReplayCsv(rows);
  ASSERT_EQ(RunShell(s.cli + " tune --strategy exhaustive --replay " + replay + " --db " + s.db + " >/dev/null 2>&1"), 0);
  ASSERT_EQ(RunShell(s.cli + " db show 1 --db " + s.db + " > " + text), 0);
  const std::string shown = ReadTextFile(text);
  EXPECT_NE(shown.find("\nuntuned plan on replay (device 1): " + untuned->Uri() + "\n"), std::string::npos) << shown;
  size_t marked = 0;
  for (size_t at = shown.find(" (untuned plan)"); at != std::string::npos; at = shown.find(" (untuned plan)", at + 1)) {
    const size_t line = shown.rfind('\n', at) + 1;
    EXPECT_NE(shown.substr(line, at - line).find(untuned->Uri()), std::string::npos) << shown;
    ++marked;
  }
  EXPECT_EQ(marked, 1u) << "its search trial (the exhaustive run's winner is another tile)\n" << shown;
  ASSERT_EQ(RunShell(s.cli + " db show 1 --db " + s.db + " --json > " + json), 0);
  const std::string js = ReadTextFile(json);
  EXPECT_NE(js.find("\"variant\":\"" + untuned->Uri() + "\""), std::string::npos) << js;
  size_t trues = 0;
  for (size_t at = js.find("\"untuned_plan\":true"); at != std::string::npos; at = js.find("\"untuned_plan\":true", at + 1))
    ++trues;
  EXPECT_EQ(trues, 1u) << js;
  EXPECT_NE(js.find("\"untuned_plan\":false"), std::string::npos) << js;
}

// A database its user cannot write (read-only file, or read-only directory: SQLite needs its
// -wal and -shm there) is refused before any work, naming the file, by every writer. Root can
// write anything, so as root the commands run as `nobody` (setpriv).
TEST(TuneCli, ReadOnlyDatabaseIsRefusedUpFront) {
  std::string as_user;
  if (::geteuid() == 0) {
    if (RunShell("command -v setpriv >/dev/null") != 0) GTEST_SKIP() << "running as root without setpriv";
    as_user = "setpriv --reuid=65534 --regid=65534 --clear-groups -- ";
  }
  const Scratch s("cli_read_only");
  const std::string &dir = s.dir, &replay = s.replay;
  const std::string file_ro = dir + "/file_ro", dir_ro = dir + "/dir_ro";
  ASSERT_EQ(RunShell("mkdir '" + file_ro + "' '" + dir_ro + "'"), 0);
  const std::string& cli = s.cli;
  for (const std::string& d : {file_ro, dir_ro})
    ASSERT_EQ(RunShell(cli + " tune --strategy exhaustive --replay " + replay + " --db " + d + "/t.db --dtypes bf16 --head-dims 64 "
                       "--seqlens-q 512 >/dev/null 2>&1"),
              0);
  ASSERT_EQ(RunShell("chmod 777 '" + file_ro + "' && chmod 444 '" + file_ro + "/t.db' && chmod 666 '" + dir_ro +
                     "/t.db' && chmod 555 '" + dir_ro + "'"),
            0);
  const std::string out = dir + "/out.txt";
  auto read = [&] { return ReadTextFile(out); };
  struct Case {
    std::string db, says, other;  // other: a readable database to merge in
  } cases[] = {{file_ro + "/t.db", "database '" + file_ro + "/t.db' is read-only", dir_ro + "/t.db"},
               {dir_ro + "/t.db", "its directory '" + dir_ro + "' is not writable", file_ro + "/t.db"}};
  for (const Case& c : cases) {
    const int64_t trials = Query(c.db, "SELECT count(*) FROM trials");
    for (const std::string& command :
         {"tune --strategy exhaustive --replay " + replay + " --db " + c.db + " --retune", "tune --compile-only --db " + c.db,
          "db prune --db " + c.db, "db merge " + c.other + " --db " + c.db}) {
      EXPECT_EQ(RunShell(as_user + cli + " " + command + " > " + out + " 2>&1"), 1) << command << "\n" << read();
      EXPECT_NE(read().find(c.says), std::string::npos) << command << "\n" << read();
      EXPECT_EQ(read().find("tuning "), std::string::npos) << command << "\n" << read();  // no header, no work
    }
    EXPECT_EQ(Query(c.db, "SELECT count(*) FROM trials"), trials);
    // Its readers still work.
    EXPECT_EQ(RunShell(as_user + cli + " db list --db " + c.db + " > " + out + " 2>&1"), 0) << read();
  }
  RunShell("chmod 755 '" + dir_ro + "'");
}

// One vocabulary: db show, tune and problem-set files use plan's names (plural for tune's
// lists); the old spellings still work, each with one deprecation line on stderr.
TEST(DbCli, OldShapeSpellingsWorkWithADeprecationNotice) {
  const Scratch s("cli_vocabulary");
  const std::string &dir = s.dir, &cli = s.cli, &db = s.db;
  ASSERT_EQ(s.TuneAll(), 0);
  const std::string out = dir + "/out.txt", err = dir + "/err.txt";
  auto read = ReadTextFile;
  auto run = [&](const std::string& args) { return RunShell(cli + " " + args + " > " + out + " 2> " + err); };

  ASSERT_EQ(run("db show --db " + db + " --head-dim 64 --seqlen-q 512 --batch 32 --heads-q 32 --heads-kv 32 --seqlen-k 512"), 0)
      << read(err);
  const std::string shown = read(out);
  EXPECT_EQ(read(err), "");
  ASSERT_EQ(run("db show --db " + db + " --head-dim 64 --nq 512 --batch 32 --hq 32 --hkv 32 --nk=512"), 0) << read(err);
  EXPECT_EQ(read(out), shown);
  EXPECT_EQ(read(err),
            "flashtune db show: --nq is deprecated; use --seqlen-q\n"
            "flashtune db show: --hq is deprecated; use --heads-q\n"
            "flashtune db show: --hkv is deprecated; use --heads-kv\n"
            "flashtune db show: --nk is deprecated; use --seqlen-k\n");

  const std::string shape = " --dry-run --db " + dir + "/dry.db --dtypes bf16 --head-dims 64 --causal 0";
  ASSERT_EQ(run("tune" + shape + " --seqlens-q 512,2048"), 0) << read(err);
  const std::string listed = read(out);
  EXPECT_EQ(read(err), "");
  ASSERT_EQ(run("tune" + shape + " --seqlens 512,2048"), 0) << read(err);
  EXPECT_EQ(read(out), listed);
  EXPECT_EQ(read(err), "flashtune tune: --seqlens is deprecated; use --seqlens-q\n");

  // Problem-set files: the new keys (with _ or -) silently, the old ones with one line.
  std::ofstream(dir + "/new.txt") << "dtype=bf16 head_dim=64 causal=0 batch=32 seqlen_q=512 seqlen-k=512 heads_q=32 heads-kv=32\n";
  std::ofstream(dir + "/old.txt") << "dtype=bf16 d=64 causal=0 batch=32 nq=512 nk=512 hq=32 hkv=32\n";
  ASSERT_EQ(run("tune --dry-run --db " + dir + "/dry.db --problem-set " + dir + "/new.txt"), 0) << read(err);
  const std::string from_file = read(out);
  EXPECT_NE(from_file.find("bf16 d64 full B32 Nq512 Nk512 Hq32 Hkv32"), std::string::npos) << from_file;
  EXPECT_EQ(read(err), "");
  ASSERT_EQ(run("tune --dry-run --db " + dir + "/dry.db --problem-set " + dir + "/old.txt"), 0) << read(err);
  EXPECT_EQ(read(out), from_file);
  EXPECT_EQ(read(err), "flashtune tune: " + dir + "/old.txt: field name(s) d, nq, nk, hq, hkv are deprecated; use "
                       "head_dim, seqlen_q, seqlen_k, heads_q, heads_kv\n");
}

// Numbers, lists and files that once were accepted and meant something else (or nothing).
TEST(TuneCli, RefusesValuesThatWouldBeSilentlyReinterpreted) {
  const Scratch s("cli_refuses");
  const std::string &dir = s.dir, &cli = s.cli, &replay = s.replay;
  const std::string header_only = dir + "/header.csv";
  std::ofstream(header_only) << "dtype,head_dim,causal,batch,seqlen_q,seqlen_k,heads_q,heads_kv,variant,status,median_us,"
                                "iqr_us\n";
  const std::string set = dir + "/set.txt";
  std::ofstream(set) << "dtype=bf16 head_dim=64 seqlen_q=512 batch=32 heads_q=32\n";
  const std::string db = " --db " + dir + "/t.db", out = dir + "/out.txt";
  auto read = [&] { return ReadTextFile(out); };
  struct Case {
    std::string args, says;
  } cases[] = {
      {"--dry-run --top-k -1" + db, "--top-k -1: allowed 1 to 100"},
      {"--dry-run --top-k 0" + db, "--top-k 0: allowed 1 to 100"},
      {"--replay " + replay + " --replay-delay-ms -5" + db, "--replay-delay-ms -5: allowed 0 or more"},
      {"--dry-run --replay-delay-ms 5" + db, "--replay-delay-ms is only for --replay"},
      {"--dry-run --retime-warmup-ms -1" + db, "--retime-warmup-ms -1: allowed 0 to 5000 (ms)"},
      {"--dry-run --retime-warmup-ms 9000" + db, "--retime-warmup-ms 9000: allowed 0 to 5000 (ms)"},
      {"--dry-run --retime-warmup-ms 200ms" + db, "retime-warmup-ms"},
      {"--replay " + replay + " --retime-warmup-ms 200" + db, "--retime-warmup-ms is for GPU re-timing; --replay times nothing"},
      {"--dry-run --top-k 1 --retime-warmup-ms 200" + db, "--retime-warmup-ms with --top-k 1: there is no re-timing"},
      {"--dry-run --retime-order sequential" + db, "--retime-order 'sequential': allowed interleaved or one-by-one"},
      {"--dry-run" + db + " --retime-order", "retime-order"},
      {"--replay " + replay + " --retime-order one-by-one" + db, "--retime-order is for GPU re-timing; --replay times nothing"},
      {"--dry-run --top-k 1 --retime-order interleaved" + db, "--retime-order with --top-k 1: there is no re-timing"},
      {"--dry-run --devices 99" + db, "--devices 99: there is no GPU 99 here"},
      {"--replay " + replay + " --devices 0,0" + db, "--devices 0,0: device 0 twice"},
      {"--dry-run --seqlens-q 512," + db, "--seqlens-q '512,': an empty item"},
      {"--dry-run --head-dims ,64" + db, "--head-dims ',64': an empty item"},
      {"--dry-run --problem-set " + set + " --seqlens-q 4096" + db, "--problem-set FILE lists the problems"},
      {"--dry-run --db ''", "--db '': give a file"},
      {"--dry-run --operation backward" + db, "--operation 'backward' is not allowed; allowed: fwd, bwd, both"},
      {"--dry-run --operation bwd --decode only" + db, "--decode only and --operation bwd exclude each other"},
      {"--replay " + header_only + db, header_only + ": no recorded measurements (only a header)"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(RunShell(cli + " tune " + c.args + " > " + out + " 2>&1"), 2) << c.args << "\n" << read();
    EXPECT_NE(read().find(c.says), std::string::npos) << c.args << "\n" << read();
  }
  EXPECT_FALSE(std::ifstream(dir + "/t.db").good());
  // db: an empty --db is refused too, and a merge refused for its OTHER.db creates no target.
  EXPECT_EQ(RunShell(cli + " db list --db '' > " + out + " 2>&1"), 2) << read();
  std::ofstream(dir + "/bad.db") << "not sqlite";
  EXPECT_EQ(RunShell(cli + " db merge " + dir + "/bad.db --db " + dir + "/new.db > " + out + " 2>&1"), 1) << read();
  EXPECT_FALSE(std::filesystem::exists(dir + "/new.db")) << read();
}

// Readers remove the -wal and -shm files they open beside a database they may write.
TEST(DbCli, ReadersLeaveNoWalOrShmBehind) {
  const Scratch s("cli_no_wal");
  const std::string &cli = s.cli, &db = s.db;
  ASSERT_EQ(s.TuneAll(), 0);
  for (const std::string& reader : {std::string("db list"), std::string("db check"), std::string("db show 1"),
                                    std::string("db export --format csv"),
                                    std::string("plan --dtype bf16 --head-dim 64 --seqlen-q 512 --heads-q 32")}) {
    ASSERT_EQ(RunShell(cli + " " + reader + " --db " + db + " >/dev/null 2>&1"), 0) << reader;
    EXPECT_FALSE(std::filesystem::exists(db + "-wal")) << reader;
    EXPECT_FALSE(std::filesystem::exists(db + "-shm")) << reader;
  }
}

// A winner found by a budget-starved search does not block a later exhaustive run: the
// exhaustive run measures what the budget left out and may replace the winner (no --retune).
TEST(TuneCli, ExhaustiveRunCompletesABudgetStarvedSearch) {
  const Scratch s("cli_budget_then_exhaustive");
  const std::string &dir = s.dir, &cli = s.cli, &replay = s.replay, &db = s.db;
  const std::string one = " --replay " + replay + " --db " + db + " --dtypes bf16 --head-dims 64 --causal 0 --seqlens-q 512";
  ASSERT_EQ(RunShell(cli + " tune" + one + " --strategy budgeted --budget-per-problem 1 >/dev/null 2>&1"), 0);
  const char* kSearch = "SELECT count(*) FROM trials WHERE phase = 'search'";
  const int64_t budgeted = Query(db, kSearch);
  const char* kWinner = "SELECT v.uri FROM winners w JOIN variants v ON v.id = w.variant_id";
  const std::string starved = QueryText(db, kWinner);
  ASSERT_GE(budgeted, 1);
  const std::string out = dir + "/out.txt";
  ASSERT_EQ(RunShell(cli + " tune" + one + " --strategy exhaustive --dry-run > " + out), 0);
  EXPECT_EQ(ReadTextFile(out).find("skip (winner present)"), std::string::npos) << ReadTextFile(out);
  ASSERT_EQ(RunShell(cli + " tune" + one + " --strategy exhaustive >/dev/null 2>&1"), 0);
  const int64_t exhaustive = Query(db, kSearch);
  EXPECT_GT(exhaustive, budgeted);
  // The winner is now the fastest of the whole space.
  EXPECT_EQ(QueryText(db, kWinner),
            QueryText(db, "SELECT v.uri FROM trials t JOIN variants v ON v.id = t.variant_id WHERE t.status = 'ok'"
                          " AND t.phase = 'search' ORDER BY t.median_us LIMIT 1"))
      << "budget winner was " << starved;
  // A second exhaustive run has nothing left to measure: skipped.
  ASSERT_EQ(RunShell(cli + " tune" + one + " --strategy exhaustive >/dev/null 2>&1"), 0);
  EXPECT_EQ(Query(db, kSearch), exhaustive);
}

}  // namespace
}  // namespace flashtune
