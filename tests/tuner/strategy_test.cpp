// The auto strategy: every candidate of d128 MHA prefill, the budgeted search elsewhere, problem
// by problem within one run.
#include "flashtune/strategy.h"

#include <gtest/gtest.h>

#include "flashtune/replay_measurer.h"
#include "flashtune/tuner.h"
#include "tests/support/replay_fixture.h"

namespace flashtune {
namespace {

using namespace flashtune::testing;

TEST(AutoStrategy, SaysWhichSearchEachHeadDimGets) {
  auto strategy = MakeStrategy("auto");
  ASSERT_TRUE(strategy.ok());
  EXPECT_EQ((*strategy)->name(), "auto");
  const Problem d128{DType::kBF16, 128, false, 4, 4096, 4096, 16, 16};
  EXPECT_TRUE((*strategy)->MeasuresEverything(d128));
  EXPECT_EQ((*strategy)->RetimeRounds(d128), 3);
  for (int d : {64, 96, 192, 256}) {
    const Problem p{DType::kBF16, d, false, 4, 4096, 4096, 8, 8};
    EXPECT_FALSE((*strategy)->MeasuresEverything(p)) << d;
    EXPECT_EQ((*strategy)->RetimeRounds(p), 1) << d;
  }
  // d128 calls other than MHA prefill forward: GQA groups, decode rows, the backward pass.
  Problem gqa = d128;
  gqa.heads_kv = 2;
  Problem decode{DType::kBF16, 128, false, 8, 1, 8192, 32, 8};
  Problem backward = d128;
  backward.operation = Operation::kBackward;
  for (const Problem& p : {gqa, decode, backward}) {
    EXPECT_FALSE((*strategy)->MeasuresEverything(p)) << p.ToString();
    EXPECT_EQ((*strategy)->RetimeRounds(p), 1) << p.ToString();
  }
  auto bad = MakeStrategy("fastest");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "--strategy 'fastest': allowed auto, exhaustive, budgeted");
}

TEST(AutoStrategy, MeasuresAllOfD128AndPartOfD96InOneRun) {
  ProblemSetOptions o;
  o.dtypes = {DType::kBF16};
  o.head_dims = {128, 96};
  o.causal = {false};
  o.seqlens = {1024, 4096};
  auto problems = MakeProblemSet(o);
  ASSERT_TRUE(problems.ok());
  std::vector<RecordedRow> rows;
  for (size_t i = 0; i < problems->size(); ++i) {
    auto r = SyntheticRows((*problems)[i], uint32_t(i + 3));
    rows.insert(rows.end(), r.begin(), r.end());
  }
  auto space = ReplayMeasurer::FromText(ReplayCsv(rows), "rows", {});
  auto measurer = ReplayMeasurer::FromText(ReplayCsv(rows), "rows", {});
  ASSERT_TRUE(space.ok() && measurer.ok());
  std::vector<std::unique_ptr<Measurer>> ms;
  ms.push_back(std::move(*measurer));
  TuneOptions t = ReplayTuneOptions(TempDir("auto_strategy") + "/t.db", *problems, space->get());
  t.strategy = "auto";
  auto summary = Tune(t, std::move(ms));
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  ASSERT_EQ(summary->problems.size(), 4u);
  for (const ProblemSummary& s : summary->problems) {
    EXPECT_EQ(s.outcome, ProblemOutcome::kTuned) << s.problem.ToString();
    if (s.problem.head_dim == 128)
      EXPECT_GE(s.measured, s.space) << "every candidate of " << s.problem.ToString();
    else
      EXPECT_LT(s.measured, s.space) << "a budgeted search of " << s.problem.ToString();
  }
}

}  // namespace
}  // namespace flashtune
