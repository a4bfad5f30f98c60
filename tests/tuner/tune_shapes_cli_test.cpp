// `flashtune tune` with the shapes users name (--head-dims alone, --model config.json) and
// spread over machines (--shard K/N, joined by `flashtune db merge`).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "flashtune/database.h"
#include "tests/support/replay_fixture.h"

namespace flashtune {
namespace {

using namespace flashtune::testing;

const std::string kCli = FLASHTUNE_CLI_PATH;

std::string Read(const std::string& path) { return ReadTextFile(path); }

TEST(TuneShapesCli, HeadDimsAloneFitTheHeadCountAndAChosenHiddenSaysWhatToPass) {
  const std::string dir = TempDir("cli_head_dims");
  const std::string out = dir + "/out.txt";
  ASSERT_EQ(RunShell(kCli + " tune --dry-run --db " + dir + "/t.db --dtypes bf16 --head-dims 96 --causal 0 "
                     "--seqlens-q 2048 > " + out + " 2>&1"), 0) << Read(out);
  EXPECT_NE(Read(out).find("bf16 d96 full B8 Nq2048 Nk2048 Hq21 Hkv21"), std::string::npos) << Read(out);
  ASSERT_EQ(RunShell(kCli + " tune --dry-run --db " + dir + "/t.db --head-dims 96 --hidden 2048 > " + out + " 2>&1"), 2);
  EXPECT_NE(Read(out).find("hidden 2048 is not a multiple of head dim 96; give hidden 2016 (21 heads) or 2112 "
                           "(22 heads)"), std::string::npos) << Read(out);
}

// The default set: 120 prefill problems, the GQA-8 d128 causal buckets (DefaultGqaProblems,
// 12) and the decode ones; a shape option drops the extra buckets.
TEST(TuneShapesCli, DefaultSetHasTheGqaBucketsWhereTheyChangeTheWinner) {
  const std::string dir = TempDir("cli_default_gqa");
  const std::string out = dir + "/out.txt";
  ASSERT_EQ(RunShell(kCli + " tune --dry-run --db " + dir + "/t.db > " + out + " 2>&1"), 0) << Read(out);
  std::string text = Read(out);
  EXPECT_NE(text.find("bf16 d128 causal B4 Nq4096 Nk4096 Hq16 Hkv2  [bf16/d128/causal/q12/k12/bh6/g3]"),
            std::string::npos) << text.substr(0, 2000);
  EXPECT_NE(text.find("f16 d128 causal B32 Nq512 Nk512 Hq16 Hkv2  [f16/d128/causal/q9/k9/bh9/g3]"), std::string::npos);
  EXPECT_EQ(text.find("d128 full B4 Nq4096 Nk4096 Hq16 Hkv2"), std::string::npos) << "non-causal: no GQA bucket";
  EXPECT_EQ(text.find("d64 causal B4 Nq4096 Nk4096 Hq32 Hkv4"), std::string::npos) << "d64: no GQA bucket";
  ASSERT_EQ(RunShell(kCli + " tune --dry-run --db " + dir + "/t.db --head-dims 128 > " + out + " 2>&1"), 0);
  EXPECT_EQ(Read(out).find("Hkv2 "), std::string::npos) << Read(out);
}

// The default set carries backward buckets (DefaultBackwardProblems); --operation or a shape
// option names the passes itself and drops them.
TEST(TuneShapesCli, DefaultSetHasTheBackwardBuckets) {
  const std::string dir = TempDir("cli_default_bwd");
  const std::string out = dir + "/out.txt";
  ASSERT_EQ(RunShell(kCli + " tune --dry-run --db " + dir + "/t.db > " + out + " 2>&1"), 0) << Read(out);
  std::string text = Read(out);
  EXPECT_NE(text.find("bf16 d64 full B8 Nq2048 Nk2048 Hq32 Hkv32 bwd  [bwd/bf16/d64/full/q11/k11/bh8]"),
            std::string::npos) << text.substr(0, 2000);
  EXPECT_NE(text.find("f16 d128 causal B2 Nq8192 Nk8192 Hq16 Hkv16 bwd  [bwd/f16/d128/causal/q13/k13/bh5]"),
            std::string::npos);
  EXPECT_NE(text.find("170 problem(s)"), std::string::npos) << "120 + 12 GQA + 22 decode (11 dense, 11 paged) + 16 backward";
  ASSERT_EQ(RunShell(kCli + " tune --dry-run --db " + dir + "/t.db --operation fwd > " + out + " 2>&1"), 0);
  EXPECT_EQ(Read(out).find(" bwd "), std::string::npos) << "--operation fwd: forward only";
  EXPECT_NE(Read(out).find("154 problem(s)"), std::string::npos);
  ASSERT_EQ(RunShell(kCli + " tune --dry-run --db " + dir + "/t.db --head-dims 64 > " + out + " 2>&1"), 0);
  EXPECT_EQ(Read(out).find(" bwd "), std::string::npos) << "a shape option: forward only";
}

TEST(TuneShapesCli, ModelConfigGivesTheProblemSet) {
  const std::string dir = TempDir("cli_model");
  const std::string out = dir + "/out.txt";
  const std::string phi = std::string(FLASHTUNE_SOURCE_DIR) + "/examples/models/phi-3-mini-4k.config.json";
  ASSERT_EQ(RunShell(kCli + " tune --dry-run --db " + dir + "/t.db --model " + phi + " > " + out + " 2>&1"), 0)
      << Read(out);
  const std::string text = Read(out);
  EXPECT_NE(text.find("bf16 d96 causal B4 Nq4096 Nk4096 Hq32 Hkv32"), std::string::npos) << text;
  EXPECT_EQ(text.find("Nq8192"), std::string::npos) << "past the model's 4k context";
  EXPECT_EQ(text.find("\nf16 d96"), std::string::npos) << "its torch_dtype only";
  EXPECT_EQ(text.rfind("f16 d96", 0), std::string::npos) << "its torch_dtype only";
  // 8 prefill problems and its decode steps: B 1, 8, 64 x 2k keys (its context is 4k), dense and
  // paged, non-causal.
  EXPECT_NE(text.find("14 problem(s)"), std::string::npos) << text;
  EXPECT_NE(text.find("bf16 d96 full B64 Nq1 Nk2048 Hq32 Hkv32 paged  [bf16/d96/full/q0/k11/bh11/paged]"),
            std::string::npos) << text;
  EXPECT_EQ(text.find("Nk8192"), std::string::npos) << "decode keys past the model's 4k context";
  // --dtypes overrides the config's dtype; --causal shapes the prefill problems.
  ASSERT_EQ(RunShell(kCli + " tune --dry-run --db " + dir + "/t.db --model " + phi + " --dtypes f16 --causal 1 > " +
                     out + " 2>&1"), 0);
  EXPECT_NE(Read(out).find("10 problem(s)"), std::string::npos) << Read(out);
  // --decode none: prefill only; --decode only: its decode steps, which --causal, --seqlens-q
  // (speculative drafts) and --decode-layouts then shape.
  ASSERT_EQ(RunShell(kCli + " tune --dry-run --db " + dir + "/t.db --model " + phi + " --decode none > " + out +
                     " 2>&1"), 0);
  EXPECT_NE(Read(out).find("8 problem(s)"), std::string::npos) << Read(out);
  ASSERT_EQ(RunShell(kCli + " tune --dry-run --db " + dir + "/t.db --model " + phi +
                     " --decode only --causal 1 --seqlens-q 1,4 --decode-layouts paged --decode-batches 16 > " + out +
                     " 2>&1"), 0) << Read(out);
  EXPECT_NE(Read(out).find("2 problem(s)"), std::string::npos) << Read(out);
  EXPECT_NE(Read(out).find("bf16 d96 causal B16 Nq4 Nk2048 Hq32 Hkv32 paged"), std::string::npos) << Read(out);
  // Shape options the model gives are refused.
  ASSERT_EQ(RunShell(kCli + " tune --dry-run --model " + phi + " --head-dims 128 > " + out + " 2>&1"), 2);
  EXPECT_NE(Read(out).find("--model FILE gives the heads, K/V heads and head dim; drop --head-dims"), std::string::npos);
  ASSERT_EQ(RunShell(kCli + " tune --dry-run --model " + dir + "/none.json > " + out + " 2>&1"), 1);
  EXPECT_NE(Read(out).find("none.json' cannot be read"), std::string::npos) << Read(out);
}

// --decode only with shape options: the decode problems of those configurations; what would be
// ignored is refused.
TEST(TuneShapesCli, DecodeOnlyShapeOptionsGiveDecodeProblems) {
  const std::string dir = TempDir("cli_decode_only");
  const std::string out = dir + "/out.txt";
  ASSERT_EQ(RunShell(kCli + " tune --dry-run --db " + dir + "/t.db --decode only --dtypes f16 --head-dims 64 "
                     "--heads-kv 4 --seqlens-k 1000,5000 --decode-layouts dense > " + out + " 2>&1"), 0) << Read(out);
  std::string text = Read(out);
  EXPECT_NE(text.find("6 problem(s)"), std::string::npos) << text;  // B 1, 8, 64 x 2 key counts
  EXPECT_NE(text.find("f16 d64 full B8 Nq1 Nk5000 Hq32 Hkv4  [f16/d64/full/q0/k13/bh8/g3]"), std::string::npos) << text;
  EXPECT_EQ(text.find(" paged "), std::string::npos) << text;
  // Alone, or with the default set's own dtype and head dim: the default set's decode buckets.
  for (const char* same : {"", " --dtypes bf16 --head-dims 128"}) {
    ASSERT_EQ(RunShell(kCli + " tune --dry-run --db " + dir + "/t.db --decode only" + same + " > " + out + " 2>&1"), 0);
    EXPECT_NE(Read(out).find("22 problem(s)"), std::string::npos) << same << ": " << Read(out);
    EXPECT_NE(Read(out).find("bf16 d128 full B64 Nq1 Nk32768 Hq32 Hkv8 paged"), std::string::npos) << same;
  }
  ASSERT_EQ(RunShell(kCli + " tune --dry-run --db " + dir + "/t.db --decode only --hidden 2048 --decode-batches 1 "
                     "--seqlens-k 4096 > " + out + " 2>&1"), 0);
  EXPECT_NE(Read(out).find("bf16 d128 full B1 Nq1 Nk4096 Hq16 Hkv8  [bf16/d128/full/q0/k12/bh4/g1]"), std::string::npos)
      << Read(out);
  struct Refused { const char* args; const char* says; };
  for (const Refused& r : {Refused{"--decode only --seqlens-q 32", "allowed: 1 to 16"},
                           Refused{"--decode only --tokens 4096", "--tokens sizes prefill batches"},
                           Refused{"--head-dims 64 --decode-batches 2", "add --decode only"},
                           Refused{"--decode none --decode-layouts paged", "this run has none"},
                           Refused{"--decode-layouts varlen", "'varlen' is not allowed; allowed: dense, paged"}}) {
    EXPECT_EQ(RunShell(kCli + " tune --dry-run --db " + dir + "/t.db " + r.args + " > " + out + " 2>&1"), 2) << r.args;
    EXPECT_NE(Read(out).find(r.says), std::string::npos) << r.args << ": " << Read(out);
  }
  const std::string set = dir + "/set.txt";
  std::ofstream(set) << "dtype=bf16 head_dim=128 seqlen_q=1 seqlen_k=4096 batch=2 heads_q=8 heads_kv=2 layout=paged\n";
  EXPECT_EQ(RunShell(kCli + " tune --dry-run --db " + dir + "/t.db --problem-set " + set + " --decode only > " + out +
                     " 2>&1"), 2);
  EXPECT_NE(Read(out).find("lists the problems, decode ones included"), std::string::npos) << Read(out);
  ASSERT_EQ(RunShell(kCli + " tune --dry-run --db " + dir + "/t.db --problem-set " + set + " > " + out + " 2>&1"), 0);
  EXPECT_NE(Read(out).find("[bf16/d128/full/q0/k12/bh4/g2/paged]"), std::string::npos) << Read(out);
}

// Three machines each tune a shard (replayed timings), `db merge` joins them: the winners of one
// run over the whole set.
TEST(TuneShapesCli, ShardsMergedGiveTheWinnersOfOneRun) {
  const std::string dir = TempDir("cli_shard");
  const std::string out = dir + "/out.txt";
  std::vector<RecordedRow> rows;
  const auto problems = SmallProblemSet();
  for (size_t i = 0; i < problems.size(); ++i) {
    auto r = SyntheticRows(problems[i], uint32_t(i + 1));
    rows.insert(rows.end(), r.begin(), r.end());
  }
  const std::string replay = dir + "/rec.csv";
  std::ofstream(replay) << ReplayCsv(rows);
  ASSERT_EQ(RunShell(kCli + " tune --replay " + replay + " --db " + dir + "/one.db > " + out + " 2>&1"), 0) << Read(out);
  for (int k = 1; k <= 3; ++k) {
    const std::string shard = std::to_string(k) + "/3";
    ASSERT_EQ(RunShell(kCli + " tune --replay " + replay + " --shard " + shard + " --db " + dir + "/s" +
                       std::to_string(k) + ".db > " + out + " 2>&1"), 0) << Read(out);
    EXPECT_NE(Read(out).find("shard " + shard + ": "), std::string::npos) << Read(out);
  }
  for (int k : {2, 3, 1, 3})
    ASSERT_EQ(RunShell(kCli + " db merge " + dir + "/s" + std::to_string(k) + ".db --db " + dir + "/all.db > " + out +
                       " 2>&1"), 0) << Read(out);
  auto winners = [&](const std::string& db) {
    auto d = Database::Open(db);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    auto rows = (*d)->ListWinners();
    EXPECT_TRUE(rows.ok());
    std::map<std::string, std::string> m;
    for (const WinnerRow& w : *rows) m[BucketString(w.bucket)] = w.variant_uri;
    return m;
  };
  EXPECT_EQ(winners(dir + "/all.db"), winners(dir + "/one.db"));
  EXPECT_EQ(winners(dir + "/all.db").size(), problems.size());
  ASSERT_EQ(RunShell(kCli + " tune --dry-run --shard 4/3 > " + out + " 2>&1"), 2);
  EXPECT_NE(Read(out).find("--shard '4/3': allowed K/N"), std::string::npos) << Read(out);
}

}  // namespace
}  // namespace flashtune
