// `flashtune plan`: exit codes, and answers from a replay-filled database without a GPU.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "flashtune/forward_args.h"
#include "tests/runtime/tuned_db.h"
#include "tests/support/replay_fixture.h"

namespace flashtune {
namespace {

using namespace flashtune::testing;

struct CliRun {
  int rc;
  std::string out;
  std::string err;
};

// `flashtune plan ARGS`, from the folder `cwd` when given (with $FLASHTUNE_DB empty).
CliRun Plan(const std::string& args, const std::string& cwd = "") {
  static int n = 0;
  const std::string dir = TempDir("plan_cli_" + std::to_string(n++));
  CliRun r;
  r.rc = RunShell((cwd.empty() ? "" : "cd '" + cwd + "' && FLASHTUNE_DB= ") + "'" FLASHTUNE_CLI_PATH "' plan " + args +
                  " > '" + dir + "/out' 2> '" + dir + "/err'");
  auto read = [](const std::string& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  r.out = read(dir + "/out");
  r.err = read(dir + "/err");
  return r;
}

TEST(PlanCli, UsageErrorsExitTwoNamingTheOption) {
  const std::string empty = TempDir("plan_cli_usage") + "/empty.db";
  { std::ofstream touch(empty); }  // a database with no devices in it
  const std::string db = " --db '" + empty + "'";
  struct Case {
    std::string args;
    std::string names;
  } cases[] = {
      {"--head-dim 128 --seqlen-q 512 --heads-q 8", "--dtype"},
      {"--dtype fp8 --head-dim 128 --seqlen-q 512 --heads-q 8", "--dtype"},
      {"--dtype bf16 --head-dim 100 --seqlen-q 512 --heads-q 8", "--head-dim"},
      {"--dtype bf16 --head-dim 128 --heads-q 8", "--seqlen-q"},
      {"--dtype bf16 --head-dim 128 --seqlen-q 0 --heads-q 8", "--seqlen-q"},
      {"--dtype bf16 --head-dim 128 --seqlen-q 512 --heads-q 8 --heads-kv 3", "--heads-kv"},
      {"--dtype bf16 --head-dim 128 --seqlen-q 512 --heads-q 8 --batch -1", "--batch"},
      {"--dtype bf16 --head-dim 128 --seqlen-q 512 --heads-q 8 --bogus", "bogus"},
      {"--dtype bf16 --head-dim 128 --seqlen-q 512 --heads-q 8 --device-uuid GPU-nope", "--device-uuid"},
      // The runtime's launch limits, not merely 2^31: plan never answers for what forward refuses.
      {"--dtype bf16 --head-dim 128 --seqlen-q 512 --heads-q 8 --batch 100000",
       "--batch (100000) must be in [1, 65535] (grid z limit)"},
      {"--dtype bf16 --head-dim 128 --seqlen-q 512 --heads-q 70000 --heads-kv 1",
       "--heads-q (70000) must be in [1, 65535] (grid y limit)"},
      {"--dtype bf16 --head-dim 128 --seqlen-q 2147483648 --heads-q 8", "--seqlen-q (2147483648) must be in [1, 2147483647]"},
      {"--dtype bf16 --head-dim 128 --seqlen-q 512 --heads-q 8 --operation sideways", "--operation 'sideways'"},
  };
  for (const Case& c : cases) {
    CliRun r = Plan(c.args + db);
    EXPECT_EQ(r.rc, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.names), std::string::npos) << c.args << "\n" << r.err;
  }
  EXPECT_EQ(Plan("--help").rc, 0);
}

TEST(PlanCli, AnswersWithoutADatabase) {
  // The default ./flashtune.db absent: the heuristic answers.
  CliRun r = Plan("--dtype bf16 --head-dim 128 --causal --seqlen-q 1024 --heads-q 16", TempDir("plan_cli_nodb"));
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("database: ./flashtune.db (absent)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("source:   heuristic"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hopper_fwd_bf16_d128_"), std::string::npos) << r.out;  // sm_90a, the target without a GPU
  EXPECT_NE(r.out.find("_causal"), std::string::npos) << r.out;
}

// Varlen and paged calls plan to the families that read those layouts: packed sequences to the
// prefill kernels (hopper_fwd on sm_90a, the target without a GPU), pages to decode_fwd.
TEST(PlanCli, LayoutsPlanToTheFamiliesThatReadThem) {
  const std::string cwd = TempDir("plan_cli_layouts");
  CliRun varlen = Plan("--dtype bf16 --head-dim 128 --causal --batch 8 --seqlen-q 4096 --heads-q 32 --heads-kv 8 "
                       "--layout varlen", cwd);
  EXPECT_EQ(varlen.rc, 0) << varlen.err;
  EXPECT_NE(varlen.out.find("varlen"), std::string::npos) << varlen.out;
  EXPECT_NE(varlen.out.find("hopper_fwd_bf16_d128_"), std::string::npos) << varlen.out;
  CliRun paged = Plan("--dtype bf16 --head-dim 128 --batch 8 --seqlen-q 1 --seqlen-k 8192 --heads-q 32 --heads-kv 8 "
                      "--layout paged", cwd);
  EXPECT_EQ(paged.rc, 0) << paged.err;
  EXPECT_NE(paged.out.find("decode_fwd_bf16_d128_"), std::string::npos) << paged.out;
  CliRun bad = Plan("--dtype bf16 --head-dim 128 --seqlen-q 64 --heads-q 8 --layout ragged", cwd);
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.err.find("--layout"), std::string::npos) << bad.err;
}

// The workspace line: the bytes a call must be given, as Runtime::workspace_size answers
// (decode's partials, a paged prefill's tile counter and a mixed batch's decode part), or none.
TEST(PlanCli, SaysTheWorkspaceACallMustBeGiven) {
  const std::string cwd = TempDir("plan_cli_workspace");
  CliRun dense = Plan("--dtype bf16 --head-dim 128 --batch 8 --seqlen-q 2048 --heads-q 32 --heads-kv 8", cwd);
  EXPECT_EQ(dense.rc, 0) << dense.err;
  EXPECT_NE(dense.out.find("workspace: none needed"), std::string::npos) << dense.out;
  EXPECT_EQ(dense.out.find("holds"), std::string::npos) << dense.out;
  struct Case {
    std::string args;
    Problem problem;
  } cases[] = {
      {"--batch 8 --seqlen-q 1 --seqlen-k 8192 --layout paged", {DType::kBF16, 128, false, 8, 1, 8192, 32, 8}},
      {"--batch 64 --seqlen-q 300 --seqlen-k 2048 --layout paged --causal", {DType::kBF16, 128, true, 64, 300, 2048, 32, 8}},
      {"--batch 2 --seqlen-q 2048 --operation bwd", {DType::kBF16, 128, false, 2, 2048, 2048, 32, 8, Operation::kBackward}},
  };
  cases[0].problem.layout = cases[1].problem.layout = Layout::kPaged;
  for (const Case& c : cases) {
    const int64_t want = WorkspaceBytes(c.problem, 0);  // no GPU: planned for 132 SMs
    ASSERT_GT(want, 0) << c.args;
    CliRun text = Plan("--dtype bf16 --head-dim 128 --heads-q 32 --heads-kv 8 " + c.args, cwd);
    EXPECT_EQ(text.rc, 0) << text.err;
    EXPECT_NE(text.out.find("workspace: " + std::to_string(want) + " bytes, caller-owned"), std::string::npos)
        << c.args << "\n" << text.out;
    const std::string use = WorkspaceUse(c.problem, 0);  // what it holds, part by part
    ASSERT_FALSE(use.empty()) << c.args;
    EXPECT_NE(text.out.find("\n           holds " + use + "\n"), std::string::npos) << c.args << "\n" << text.out;
    CliRun json = Plan("--dtype bf16 --head-dim 128 --heads-q 32 --heads-kv 8 " + c.args + " --json", cwd);
    EXPECT_EQ(json.rc, 0) << json.err;
    EXPECT_NE(json.out.find("\"workspace_bytes\":" + std::to_string(want) + ",\"workspace_use\":\""), std::string::npos)
        << json.out;
  }
}

TEST(PlanCli, BackwardPlansTheBackwardFamily) {
  CliRun r = Plan("--dtype bf16 --head-dim 64 --seqlen-q 1024 --heads-q 16 --heads-kv 4 --operation bwd",
                  TempDir("plan_cli_bwd"));
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("hopper_bwd_bf16_d64_"), std::string::npos) << r.out;  // no GPU: planned for sm_90a
  EXPECT_NE(r.out.find("bucket:   bwd/bf16/d64/full/"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" bwd"), std::string::npos) << r.out;  // the problem line says which pass
}

// A database named on purpose must exist, as for `db list`: a typo in --db or $FLASHTUNE_DB
// would otherwise answer as if nothing had been tuned.
TEST(PlanCli, NamedDatabaseThatDoesNotExistIsAnError) {
  const std::string missing = TempDir("plan_cli_missing") + "/missing.db";
  const std::string shape = "--dtype bf16 --head-dim 128 --seqlen-q 1024 --heads-q 16";
  CliRun by_option = Plan(shape + " --db '" + missing + "'");
  EXPECT_EQ(by_option.rc, 1) << by_option.out;
  EXPECT_NE(by_option.err.find("database '" + missing + "' does not exist (named by --db)"), std::string::npos)
      << by_option.err;
  const std::string err = TempDir("plan_cli_missing_env") + "/err";
  EXPECT_EQ(RunShell("FLASHTUNE_DB='" + missing + "' '" FLASHTUNE_CLI_PATH "' plan " + shape + " 2> '" + err + "' >/dev/null"), 1);
  std::ifstream in(err);
  std::stringstream by_env;
  by_env << in.rdbuf();
  EXPECT_NE(by_env.str().find("(named by $FLASHTUNE_DB)"), std::string::npos) << by_env.str();
  EXPECT_EQ(Plan(shape + " --db ''").rc, 2);
}

TEST(PlanCli, EmptyDatabaseFileIsNotYetTunedNotCorrupt) {
  const std::string db = TempDir("plan_cli_empty") + "/empty.db";
  { std::ofstream touch(db); }  // what a reader sees while a tuner creates the file
  CliRun r = Plan("--dtype bf16 --head-dim 64 --seqlen-q 100 --heads-q 2 --db '" + db + "'");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("source:   heuristic"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(empty: no tuning results yet)"), std::string::npos) << r.out;
}

TEST(PlanCli, CorruptDatabaseExitsOne) {
  const std::string db = WriteTempFile("plan_cli_corrupt.db", "garbage garbage garbage garbage\n");
  CliRun r = Plan("--dtype bf16 --head-dim 128 --seqlen-q 1024 --heads-q 16 --db '" + db + "'");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("corrupt"), std::string::npos) << r.err;
}

TEST(PlanCli, TunedDatabaseGivesExactAndNearest) {
  const std::string db = MakeTunedDatabase(TempDir("plan_cli_tuned"));
  const Problem p = TunedProblems()[0];
  const std::string device = " --device-uuid " + TunedDevice().uuid + " --db '" + db + "' --json";
  CliRun exact = Plan("--dtype bf16 --head-dim 128 --batch " + std::to_string(p.batch) + " --seqlen-q " +
                   std::to_string(p.seqlen_q) + " --heads-q " + std::to_string(p.heads_q) + device);
  EXPECT_EQ(exact.rc, 0) << exact.err;
  EXPECT_NE(exact.out.find("\"source\":\"exact\""), std::string::npos) << exact.out;
  EXPECT_NE(exact.out.find("\"device\":\"NVIDIA H200\""), std::string::npos) << exact.out;
  CliRun nearest = Plan("--dtype bf16 --head-dim 128 --batch 2 --seqlen-q 8192 --heads-q 16" + device);
  EXPECT_EQ(nearest.rc, 0) << nearest.err;
  EXPECT_NE(nearest.out.find("\"source\":\"nearest\""), std::string::npos) << nearest.out;
  CliRun by_name = Plan("--dtype bf16 --head-dim 128 --batch 2 --seqlen-q 8192 --heads-q 16 --gpu-name 'NVIDIA H200' --db '" +
                     db + "'");
  EXPECT_EQ(by_name.rc, 0) << by_name.err;
  EXPECT_NE(by_name.out.find("source:   nearest"), std::string::npos) << by_name.out;
}

// The plan says what ptxas gave the chosen kernel: its latest measurement on the problem it was
// tuned on. A heuristic plan has none.
TEST(PlanCli, ShowsTheChosenKernelsRegistersSharedMemoryAndSpills) {
  const std::string db = MakeTunedDatabase(TempDir("plan_cli_resources"));
  const Problem p = TunedProblems()[0];
  {
    auto opened = Database::Open(db);
    ASSERT_TRUE(opened.ok());
    const int64_t dev = *(*opened)->UpsertDevice(TunedDevice()), tc = *(*opened)->UpsertToolchain(CurrentToolchain());
    auto winner = (*opened)->FindWinner(TunedDevice(), CurrentToolchain(), BucketOf(p));
    ASSERT_TRUE(winner.ok() && winner->has_value());
    TrialRecord t;
    t.problem = p;
    t.variant = (*winner)->variant;
    t.median_us = 500;
    t.registers = 168;
    t.smem_bytes = 36864;
    t.spill_bytes = 16;
    t.phase = "retime";
    ASSERT_TRUE((*opened)->RecordTrial(dev, tc, t).ok());
  }
  const std::string shape = "--dtype bf16 --head-dim 128 --batch " + std::to_string(p.batch) + " --seqlen-q " +
                            std::to_string(p.seqlen_q) + " --heads-q " + std::to_string(p.heads_q);
  const std::string where = " --device-uuid " + TunedDevice().uuid + " --db '" + db + "'";
  CliRun text = Plan(shape + where);
  EXPECT_EQ(text.rc, 0) << text.err;
  EXPECT_NE(text.out.find("kernel:   168 registers per thread, 36864 B shared memory, 16 B spill stores + loads"),
            std::string::npos) << text.out;
  CliRun json = Plan(shape + where + " --json");
  EXPECT_NE(json.out.find("\"resources\":{\"registers\":168,\"smem_bytes\":36864,\"spill_bytes\":16}"),
            std::string::npos) << json.out;
  CliRun heuristic = Plan("--dtype f16 --head-dim 64 --batch 1 --seqlen-q 128 --heads-q 2" + where + " --json");
  EXPECT_NE(heuristic.out.find("\"resources\":null"), std::string::npos) << heuristic.out;
}

}  // namespace
}  // namespace flashtune
