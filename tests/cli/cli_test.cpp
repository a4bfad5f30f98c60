// Runs the real `flashtune` binary and checks exit codes and messages.
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "tests/support/temp_dir.h"

namespace {

struct CliRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Captures stdout and stderr, or only stderr when `stderr_only`.
CliRun RunCli(const std::string& args, const std::string& env = "", bool stderr_only = false) {
  const std::string command =
      env + " '" FLASHTUNE_CLI_PATH "' " + args + (stderr_only ? " 2>&1 >/dev/null" : " 2>&1");
  CliRun run;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) run.output.append(buffer, n);
  const int status = ::pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST(Cli, NoCommandIsUsageError) {
  CliRun r = RunCli("");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Contains(r.output, "usage: flashtune")) << r.output;
}

TEST(Cli, UnknownCommandNamesAllowedOnes) {
  CliRun r = RunCli("frobnicate");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Contains(r.output, "unknown command 'frobnicate'")) << r.output;
  EXPECT_TRUE(Contains(r.output, "compile")) << r.output;
  EXPECT_TRUE(Contains(r.output, "info")) << r.output;
}

TEST(Cli, HelpListsCommands) {
  CliRun r = RunCli("--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(Contains(r.output, "info")) << r.output;
  EXPECT_TRUE(Contains(r.output, "compile")) << r.output;
}

TEST(Cli, InfoExitsZeroAndReportsWhatItFinds) {
  // With FLASHTUNE_LIBCUDA pointing nowhere this is the no-driver path on every machine.
  CliRun r = RunCli("info", "FLASHTUNE_LIBCUDA=/nonexistent/libcuda.so.1 FLASHTUNE_DB=/tmp/x.db");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "nvrtc:")) << r.output;
  EXPECT_TRUE(Contains(r.output, "sm_90a")) << r.output;
  EXPECT_TRUE(Contains(r.output, "no CUDA driver found")) << r.output;
  EXPECT_TRUE(Contains(r.output, "database: /tmp/x.db")) << r.output;
  EXPECT_TRUE(Contains(r.output, "cache:")) << r.output;
}

TEST(Cli, InfoJsonIsOneObject) {
  CliRun r = RunCli("info --json", "FLASHTUNE_LIBCUDA=/nonexistent/libcuda.so.1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  ASSERT_FALSE(r.output.empty());
  EXPECT_EQ(r.output.front(), '{');
  EXPECT_TRUE(Contains(r.output, "\"driver\":null")) << r.output;
  EXPECT_TRUE(Contains(r.output, "\"database\":\"./flashtune.db\"")) << r.output;
}

TEST(Cli, InfoRejectsUnknownOption) {
  CliRun r = RunCli("info --bogus");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Contains(r.output, "bogus")) << r.output;
}

TEST(Cli, EachCommandHasHelp) {
  for (const char* command : {"info", "compile"}) {
    CliRun r = RunCli(std::string(command) + " --help");
    EXPECT_EQ(r.exit_code, 0) << command;
    EXPECT_TRUE(Contains(r.output, "usage: flashtune " + std::string(command))) << r.output;
  }
}

TEST(Cli, CompileWithoutFileIsUsageError) {
  CliRun r = RunCli("compile --arch sm_90a");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Contains(r.output, "missing FILE")) << r.output;
}

TEST(Cli, CompileWithBadArchNamesAllowedValues) {
  flashtune::testing::TempDir dir;
  const std::string file = dir.path() + "/k.cu";
  std::ofstream(file) << "extern \"C\" __global__ void k() {}\n";
  CliRun r = RunCli("compile " + file + " --arch sm_91");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Contains(r.output, "sm_91")) << r.output;
  EXPECT_TRUE(Contains(r.output, "allowed: sm_75")) << r.output;
  CliRun missing = RunCli("compile " + file);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_TRUE(Contains(missing.output, "missing --arch")) << missing.output;
}

TEST(Cli, CompileOfMissingFileFails) {
  CliRun r = RunCli("compile /nonexistent/kernel.cu --arch sm_90a");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.output, "/nonexistent/kernel.cu")) << r.output;
}

TEST(Cli, CompileReportsResourcesAndWritesCubin) {
  flashtune::testing::TempDir dir;
  const std::string file = dir.path() + "/k.cu";
  const std::string out = dir.path() + "/k.cubin";
  std::ofstream(file) << "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] += 1.0f; }\n";
  CliRun r = RunCli("compile " + file + " --arch sm_80 -o " + out + " --option=-DUNUSED=1",
                 "FLASHTUNE_CACHE_DIR=" + dir.path() + "/cache");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "registers:")) << r.output;
  EXPECT_TRUE(Contains(r.output, "-DUNUSED=1")) << r.output;
  std::ifstream cubin(out, std::ios::binary);
  char magic[4] = {};
  cubin.read(magic, 4);
  EXPECT_EQ(std::string(magic, 4), "\x7f" "ELF");
  CliRun again = RunCli("compile " + file + " --arch sm_80 --option=-DUNUSED=1",
                     "FLASHTUNE_CACHE_DIR=" + dir.path() + "/cache");
  EXPECT_EQ(again.exit_code, 0);
  EXPECT_TRUE(Contains(again.output, "(from cache)")) << again.output;
}

TEST(Cli, CompileErrorShowsNvrtcLogOnStderr) {
  flashtune::testing::TempDir dir;
  const std::string file = dir.path() + "/bad.cu";
  std::ofstream(file) << "extern \"C\" __global__ void k() { undeclared_name = 1; }\n";
  CliRun r = RunCli("compile " + file + " --arch sm_90a", "", /*stderr_only=*/true);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.output, "compile_error")) << r.output;
  EXPECT_TRUE(Contains(r.output, "undeclared_name")) << r.output;
}

}  // namespace

namespace {

// `flashtune bench` from recorded timings (--replay): no GPU needed, the real command line.
const char* kBenchShape = "--head-dim 64 --batch 4 --seqlen-q 4096 --heads-q 32";
const std::string kA = "fa2_fwd_bf16_d64_br128_bc32_w4_s2_full";
const std::string kB = "fa2_fwd_bf16_d64_br128_bc64_w4_s3_full";
const std::string kBroken = "fa2_fwd_bf16_d64_br64_bc64_w4_s3_full";

// Writes the recorded timings into `dir`; returns the file's path.
std::string BenchReplayFile(const flashtune::testing::TempDir& dir) {
  const std::string p = "bf16,64,0,4,4096,4096,32,32,";
  const std::string path = dir.path() + "/bench_replay.csv";
  std::ofstream(path) <<
      "dtype,head_dim,causal,batch,seqlen_q,seqlen_k,heads_q,heads_kv,variant,status,median_us,iqr_us,phase\n" +
          p + kA + ",ok,100,1,search\n" + p + kA + ",ok,104,1,retime\n" + p + kA + ",ok,101,1,retime\n" + p + kB +
          ",ok,99,1,search\n" + p + kB + ",ok,110,1,retime\n" + p + kBroken + ",wrong_result,0,0,search\n";
  return path;
}

TEST(Cli, BenchRoundsReportTheMedianOfTheRoundMedians) {
  flashtune::testing::TempDir dir;
  CliRun r = RunCli(std::string("bench ") + kBenchShape + " --replay " + BenchReplayFile(dir) + " --rounds 3 --json --variant " +
                        kA + "," + kB,
                    "", /*stderr_only=*/false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // A: 100, 104, 101 -> 101. B: 99, then its one re-timing (110) twice -> 110.
  EXPECT_TRUE(Contains(r.output, "\"variant\":\"" + kA + "\",\"status\":\"ok\",\"median_us\":101.000")) << r.output;
  EXPECT_TRUE(Contains(r.output, "\"round_medians_us\":[100.000000,104.000000,101.000000]")) << r.output;
  EXPECT_TRUE(Contains(r.output, "\"variant\":\"" + kB + "\",\"status\":\"ok\",\"median_us\":110.000")) << r.output;
}

TEST(Cli, BenchReportsAFailedVariantAndTimesTheOthers) {
  flashtune::testing::TempDir dir;
  CliRun r = RunCli(std::string("bench ") + kBenchShape + " --replay " + BenchReplayFile(dir) + " --rounds 2 --variant " +
                    kBroken + "," + kA);
  ASSERT_EQ(r.exit_code, 0) << r.output;  // one variant passed
  EXPECT_TRUE(Contains(r.output, "2 rounds")) << r.output;
  EXPECT_TRUE(Contains(r.output, kBroken + "          wrong_result")) << r.output;
  EXPECT_TRUE(Contains(r.output, "best: " + kA)) << r.output;
}

// --layout paged: the paged problem's own timings (a replay's layout column; on a GPU, a pool
// of shuffled 16-key pages), not the dense ones of the same shape, and no "dense tensors" notice.
TEST(Cli, BenchTimesThePagedLayoutAsItself) {
  flashtune::testing::TempDir dir;
  // Each tile compiled for dense K/V (kv0) and for pages (kv1).
  const std::string a = "decode_fwd_bf16_d128_bn128_rm1_w4_s2_cs2_kv0_full", b = "decode_fwd_bf16_d128_bn64_rm1_w4_s3_cs4_kv0_full";
  const std::string pa = "decode_fwd_bf16_d128_bn128_rm1_w4_s2_cs2_kv1_full", pb = "decode_fwd_bf16_d128_bn64_rm1_w4_s3_cs4_kv1_full";
  const std::string shape = "bf16,128,0,8,1,32768,32,8,";
  const std::string path = dir.path() + "/paged_replay.csv";
  std::ofstream(path) << "dtype,head_dim,causal,batch,seqlen_q,seqlen_k,heads_q,heads_kv,layout,variant,status,"
                         "median_us,iqr_us\n" +
                             shape + "dense," + a + ",ok,247,1\n" + shape + "dense," + b + ",ok,250,1\n" + shape +
                             "paged," + pa + ",ok,355,1\n" + shape + "paged," + pb + ",ok,257,1\n";
  const std::string args = "bench --head-dim 128 --batch 8 --seqlen-q 1 --seqlen-k 32768 --heads-q 32 --heads-kv 8 "
                           "--replay " + path + " --variant ";
  CliRun paged = RunCli(args + pa + "," + pb + " --layout paged", "", /*stderr_only=*/false);
  ASSERT_EQ(paged.exit_code, 0) << paged.output;
  EXPECT_TRUE(Contains(paged.output, "best: " + pb)) << paged.output;
  EXPECT_FALSE(Contains(paged.output, "dense tensors")) << paged.output;
  CliRun dense = RunCli(args + a + "," + b, "", /*stderr_only=*/false);
  ASSERT_EQ(dense.exit_code, 0) << dense.output;
  EXPECT_TRUE(Contains(dense.output, "best: " + a)) << dense.output;
}

// A variant compiled for dense K/V named for a paged call is refused, saying so; nothing is timed.
TEST(Cli, BenchRefusesAVariantOfAnotherKvLayout) {
  const std::string dense = "decode_fwd_bf16_d128_bn64_rm1_w4_s3_cs4_kv0_full";
  CliRun r = RunCli("bench --head-dim 128 --batch 8 --seqlen-q 1 --seqlen-k 32768 --heads-q 32 --heads-kv 8 "
                    "--layout paged --variant " + dense);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "--variant " + dense + " is compiled for another K/V layout than this paged")) << r.output;
  EXPECT_FALSE(Contains(r.output, "no CUDA driver")) << r.output;  // refused before any GPU work
}

// --layout varlen: the varlen problem's variants (fa2_fwd, hopper_fwd), timed on dense tensors
// of the same shape, which the command says; a named variant of another layout's family is refused.
TEST(Cli, BenchAcceptsTheVarlenLayout) {
  flashtune::testing::TempDir dir;
  CliRun r = RunCli(std::string("bench ") + kBenchShape + " --layout varlen --replay " + BenchReplayFile(dir) +
                        " --variant " + kA + "," + kB,
                    "", /*stderr_only=*/false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "timing the varlen problem's variants on dense tensors of the same shape")) << r.output;
  EXPECT_TRUE(Contains(r.output, "best: " + kB)) << r.output;
  CliRun decode = RunCli(std::string("bench ") + kBenchShape + " --layout varlen --replay " + BenchReplayFile(dir) +
                         " --variant decode_fwd_bf16_d64_bn64_rm1_w4_s2_cs1_full");
  EXPECT_EQ(decode.exit_code, 2) << decode.output;
  CliRun bad = RunCli(std::string("bench ") + kBenchShape + " --layout ragged --replay " + BenchReplayFile(dir));
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_TRUE(Contains(bad.output, "--layout")) << bad.output;
}

TEST(Cli, BenchRejectsBadVariantListsAndRoundsBeforeMeasuring) {
  const std::string base = std::string("bench ") + kBenchShape + " --replay /nonexistent.csv ";
  CliRun other_class = RunCli(base + "--variant " + kA + ",fa2_fwd_bf16_d128_br128_bc32_w4_s2_full");
  EXPECT_EQ(other_class.exit_code, 2);
  EXPECT_TRUE(Contains(other_class.output, "is not of the problem's class bf16 d64 full")) << other_class.output;
  CliRun twice = RunCli(base + "--variant " + kA + "," + kA);
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_TRUE(Contains(twice.output, "--variant names " + kA + " twice")) << twice.output;
  CliRun empty = RunCli(base + "--variant ,");
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_TRUE(Contains(empty.output, "--variant")) << empty.output;
  CliRun rounds = RunCli(base + "--rounds 0");
  EXPECT_EQ(rounds.exit_code, 2);
  EXPECT_TRUE(Contains(rounds.output, "--rounds must be 1 to 100")) << rounds.output;
}

// --operation bwd benches backward variants: a replay row of a backward family's variant is a
// backward problem's; a forward variant is not of the backward class, and the pass is named.
TEST(Cli, BenchOperationBwdTimesBackwardVariants) {
  flashtune::testing::TempDir dir;
  const std::string a = "fa2_bwd_bf16_d64_bc128_br64_w8_s2_det0_dqc16_dqv1_dqs0_lay1_full";
  const std::string b = "fa2_bwd_bf16_d64_bc128_br64_w8_s2_det0_dqc64_dqv2_dqs0_lay1_full";
  const std::string p = "bf16,64,0,4,4096,4096,32,32,";
  const std::string path = dir.path() + "/bwd.csv";
  std::ofstream(path) << "dtype,head_dim,causal,batch,seqlen_q,seqlen_k,heads_q,heads_kv,variant,status,median_us,"
                         "iqr_us,phase\n" +
                             p + a + ",ok,300,1,search\n" + p + b + ",ok,250,1,search\n";
  const std::string base = std::string("bench ") + kBenchShape + " --replay " + path + " --operation bwd ";
  CliRun r = RunCli(base + "--variant " + a + "," + b, "", /*stderr_only=*/false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "bf16 d64 full B4 Nq4096 Nk4096 Hq32 Hkv32 bwd")) << r.output;
  EXPECT_TRUE(Contains(r.output, "best: " + b)) << r.output;
  CliRun forward = RunCli(base + "--variant " + kA);
  EXPECT_EQ(forward.exit_code, 2);
  EXPECT_TRUE(Contains(forward.output, "is not of the problem's class bf16 d64 full bwd")) << forward.output;
  CliRun bad = RunCli(std::string("bench ") + kBenchShape + " --replay " + path + " --operation sideways");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_TRUE(Contains(bad.output, "--operation 'sideways' is not an operation; allowed: fwd, bwd")) << bad.output;
}

TEST(Cli, BenchReplayFileThatCannotBeReadIsNamed) {
  CliRun r = RunCli(std::string("bench ") + kBenchShape + " --variant " + kA + " --replay /nonexistent/timings.csv");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(Contains(r.output, "replay file '/nonexistent/timings.csv' cannot be read")) << r.output;
}

TEST(Cli, DbExportTableNamesAllowedValuesAndBelongsToExport) {
  flashtune::testing::TempDir dir;
  const std::string db = " --db '" + dir.path() + "/x.db'";
  CliRun bad = RunCli("db export --format csv --table best" + db);
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_TRUE(Contains(bad.output, "--table 'best': allowed trials, winners")) << bad.output;
  CliRun elsewhere = RunCli("db list --table winners" + db);
  EXPECT_EQ(elsewhere.exit_code, 2) << elsewhere.output;
  EXPECT_TRUE(Contains(elsewhere.output, "--table is only for 'export'")) << elsewhere.output;
}

TEST(Cli, TuneRetimeRoundsNamesAllowedValues) {
  flashtune::testing::TempDir dir;
  CliRun r = RunCli("tune --dry-run --retime-rounds 11 --db '" + dir.path() + "/x.db'");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(Contains(r.output, "--retime-rounds 11: allowed 1 to 10")) << r.output;
}

TEST(Cli, BenchWithoutADriverSaysSo) {
  CliRun r = RunCli(std::string("bench ") + kBenchShape + " --variant " + kA, "FLASHTUNE_LIBCUDA=/nonexistent/libcuda.so.1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(Contains(r.output, "no CUDA driver found")) << r.output;
}

TEST(Cli, BinaryDoesNotLinkLibcuda) {
  // The driver is dlopen'ed so the CLI runs on machines without one.
  FILE* pipe = ::popen("readelf -d '" FLASHTUNE_CLI_PATH "' 2>/dev/null", "r");
  ASSERT_NE(pipe, nullptr);
  std::string dynamic;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) dynamic.append(buffer, n);
  ::pclose(pipe);
  if (dynamic.find("NEEDED") == std::string::npos) GTEST_SKIP() << "readelf unavailable";
  EXPECT_EQ(dynamic.find("libcuda"), std::string::npos) << dynamic;
  EXPECT_NE(dynamic.find("libnvrtc"), std::string::npos) << dynamic;
}

}  // namespace

namespace {

// --causal takes a value everywhere: "--causal 0" once meant causal (the 0 was a dropped word).
TEST(Cli, CausalValueIsParsedStrictlyOnEveryCommand) {
  flashtune::testing::TempDir dir;
  const std::string db = " --db '" + dir.path() + "/absent.db'";
  const std::string shape = "--dtype bf16 --head-dim 128 --seqlen-q 4096 --heads-q 16";
  // Without --db the default ./flashtune.db may be absent: plan then answers heuristically.
  const std::string in_dir = "cd '" + dir.path() + "' && FLASHTUNE_DB=";
  for (const char* off : {"0", "false"}) {
    CliRun plan = RunCli("plan " + shape + " --causal " + off, in_dir);
    EXPECT_EQ(plan.exit_code, 0) << plan.output;
    EXPECT_TRUE(Contains(plan.output, "problem:  bf16 d128 full")) << off << "\n" << plan.output;
    CliRun generate = RunCli(std::string("generate --dtype bf16 --head-dim 128 --causal ") + off);
    EXPECT_EQ(generate.exit_code, 0) << generate.output;
    EXPECT_TRUE(Contains(generate.output, "_full\n")) << generate.output;
    EXPECT_FALSE(Contains(generate.output, "_causal")) << generate.output;
  }
  for (const char* on : {"1", "true", ""}) {  // bare --causal is shorthand for --causal 1
    CliRun plan = RunCli("plan " + shape + " --causal " + on, in_dir);
    EXPECT_EQ(plan.exit_code, 0) << plan.output;
    EXPECT_TRUE(Contains(plan.output, "problem:  bf16 d128 causal")) << on << "\n" << plan.output;
  }
  CliRun tune = RunCli("tune --dry-run --dtypes bf16 --head-dims 64 --seqlens-q 512 --causal false" + db);
  EXPECT_EQ(tune.exit_code, 0) << tune.output;
  EXPECT_TRUE(Contains(tune.output, "bf16 d64 full")) << tune.output;
  EXPECT_FALSE(Contains(tune.output, "bf16 d64 causal")) << tune.output;

  // Anything else is refused, naming the option and the allowed values; nothing runs.
  const std::string bench = std::string("bench ") + kBenchShape + " --replay " + BenchReplayFile(dir);
  for (const std::string& command :
       {"plan " + shape + db + " --causal 2", "plan " + shape + db + " --causal yes",
        std::string("generate --dtype bf16 --head-dim 128 --causal on"), bench + " --causal -1",
        "db show --db '" + dir.path() + "/absent.db' --head-dim 64 --seqlen-q 512 --causal 2",
        "tune --dry-run --causal 0,2" + db}) {
    CliRun r = RunCli(command);
    EXPECT_EQ(r.exit_code, 2) << command << "\n" << r.output;
    EXPECT_TRUE(Contains(r.output, "--causal")) << command << "\n" << r.output;
    EXPECT_TRUE(Contains(r.output, "allowed: 0, 1, true, false")) << command << "\n" << r.output;
  }
  EXPECT_FALSE(std::ifstream(dir.path() + "/absent.db").good());
}

// A word that belongs to no option is a setting the user believes they made: refused.
TEST(Cli, StrayWordsAreRefusedOnEveryCommand) {
  flashtune::testing::TempDir dir;
  const std::string db = " --db '" + dir.path() + "/absent.db'";
  const std::string cu = dir.path() + "/k.cu";
  std::ofstream(cu) << "extern \"C\" __global__ void k() {}\n";
  for (const std::string& command :
       {"plan --dtype bf16 --head-dim 128 --seqlen-q 4096 --heads-q 16 extra" + db,
        "plan --dtype bf16 --head-dim 128 --seqlen-q 4096 --heads-q 16 --json extra" + db,
        std::string("bench ") + kBenchShape + " --replay " + BenchReplayFile(dir) + " extra",
        std::string("generate --dtype bf16 --head-dim 128 extra"), std::string("info extra"),
        std::string("info --json extra"), "tune --dry-run extra" + db, "compile " + cu + " --arch sm_90a extra",
        "db list extra" + db, "db check extra" + db, "db show 1 extra" + db}) {
    CliRun r = RunCli(command);
    EXPECT_EQ(r.exit_code, 2) << command << "\n" << r.output;
    EXPECT_TRUE(Contains(r.output, "unexpected argument 'extra'")) << command << "\n" << r.output;
  }
  // No abbreviations either: "--seqlen" is not silently "--seqlens-q".
  CliRun abbreviated = RunCli("tune --dry-run --seqlen 512" + db);
  EXPECT_EQ(abbreviated.exit_code, 2) << abbreviated.output;
  EXPECT_TRUE(Contains(abbreviated.output, "--seqlen")) << abbreviated.output;
  EXPECT_FALSE(std::ifstream(dir.path() + "/absent.db").good());
}

}  // namespace

namespace {

TEST(Cli, EveryDbSubcommandHasHelp) {
  for (const char* sub : {"list", "show", "export", "merge", "prune", "check", "report"}) {
    for (const char* flag : {"--help", "-h"}) {
      CliRun r = RunCli(std::string("db ") + sub + " " + flag, "", /*stderr_only=*/false);
      EXPECT_EQ(r.exit_code, 0) << sub << " " << flag << "\n" << r.output;
      EXPECT_TRUE(Contains(r.output, std::string("usage: flashtune db ") + sub)) << r.output;
    }
  }
  CliRun list = RunCli("db list --help");
  EXPECT_TRUE(Contains(list.output, "--json")) << list.output;
  CliRun json_elsewhere = RunCli("db check --json --db /nonexistent/x.db");
  EXPECT_EQ(json_elsewhere.exit_code, 2) << json_elsewhere.output;
  EXPECT_TRUE(Contains(json_elsewhere.output, "--json is only for 'list' and 'show'")) << json_elsewhere.output;
}

}  // namespace

namespace {

// bench refuses what the runtime would refuse, naming its option, before anything is measured.
TEST(Cli, BenchRefusesShapesBeyondTheLaunchLimits) {
  CliRun r = RunCli("bench --head-dim 64 --batch 70000 --seqlen-q 512 --heads-q 8 --replay /nonexistent.csv");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(Contains(r.output, "--batch (70000) must be in [1, 65535] (grid z limit)")) << r.output;
}

}  // namespace
