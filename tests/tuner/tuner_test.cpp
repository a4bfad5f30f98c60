#include "generator/families/fa2_fwd.h"
#include "flashtune/replay_measurer.h"
#include "flashtune/tuner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>

#include "flashtune/database.h"
#include "flashtune/source.h"
#include "flashtune/space.h"
#include "tests/support/replay_fixture.h"

namespace flashtune {
namespace {

using namespace flashtune::testing;

std::unique_ptr<ReplayMeasurer> Replay(const std::vector<RecordedRow>& rows, const std::string& uuid = "replay-0") {
  ReplayMeasurer::Options o;
  o.device.uuid = uuid;
  auto r = ReplayMeasurer::FromText(ReplayCsv(rows), "rows", o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return std::move(*r);
}

double TrueBest(const std::vector<RecordedRow>& rows, const Problem& p, Variant* best) {
  double us = 1e30;
  for (const auto& r : rows)
    if (r.problem == p && r.status == "ok" && r.median_us < us) {
      us = r.median_us;
      *best = r.variant;
    }
  return us;
}

TEST(Tuner, ExhaustiveFindsTrueBest) {
  std::vector<RecordedRow> rows;
  auto problems = SmallProblemSet();
  for (size_t i = 0; i < problems.size(); ++i) {
    auto r = SyntheticRows(problems[i], uint32_t(i + 1));
    rows.insert(rows.end(), r.begin(), r.end());
  }
  auto space = Replay(rows);
  std::string db_path = TempDir("tune_exhaustive") + "/t.db";
  std::vector<std::unique_ptr<Measurer>> ms;
  ms.push_back(Replay(rows));
  auto summary = Tune(ReplayTuneOptions(db_path, problems, space.get()), std::move(ms));
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->winners, int64_t(problems.size()));
  auto db = Database::Open(db_path);
  ASSERT_TRUE(db.ok());
  for (const Problem& p : problems) {
    Variant best;
    double us = TrueBest(rows, p, &best);
    auto w = (*db)->FindWinner(space->Device(), space->Toolchain(), BucketOf(p));
    ASSERT_TRUE(w.ok() && w->has_value()) << p.ToString();
    // The true best, or one within the 1% noise rule of it.
    EXPECT_LE((*w)->median_us, us * 1.01) << p.ToString();
  }
  // Rerun: everything is skipped, nothing measured.
  std::vector<std::unique_ptr<Measurer>> again;
  again.push_back(Replay(rows));
  auto second = Tune(ReplayTuneOptions(db_path, problems, space.get()), std::move(again));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->skipped, int64_t(problems.size()));
  EXPECT_EQ(second->measured, 0);
}

// The budgeted search of a problem starts with the same problem's best in the other 16-bit type
// (both types run the same tiles at the same rate): fp16 measures bf16's winner first, and finds
// it, though the class has no fp16 problem tuned and the cost model ranks it elsewhere.
TEST(Tuner, BudgetedStartsFromTheSameProblemInTheOther16BitType) {
  const Problem bf16{DType::kBF16, 64, true, 4, 2048, 2048, 32, 32};
  Problem f16 = bf16;
  f16.dtype = DType::kF16;
  std::vector<RecordedRow> rows = SyntheticRows(bf16, 7);
  for (size_t i = 0, n = rows.size(); i < n; ++i) {  // the same landscape in fp16
    RecordedRow r = rows[i];
    r.problem = f16;
    r.variant.dtype = DType::kF16;
    rows.push_back(r);
  }
  Variant best;
  TrueBest(rows, bf16, &best);
  auto space = Replay(rows);
  const std::string db_path = TempDir("tune_sibling") + "/t.db";
  std::vector<std::unique_ptr<Measurer>> ms;
  ms.push_back(Replay(rows));
  TuneOptions o = ReplayTuneOptions(db_path, {bf16, f16}, space.get());
  o.strategy = "budgeted";
  auto summary = Tune(o, std::move(ms));
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  auto db = Database::Open(db_path);
  ASSERT_TRUE(db.ok());
  auto first_measured = [&](const Problem& p) {
    auto trials = (*db)->TrialsForProblem(*(*db)->FindProblem(p));
    EXPECT_TRUE(trials.ok());
    const TrialRow* first = nullptr;
    for (const TrialRow& t : *trials)
      if (t.trial.phase == "search" && (!first || t.id < first->id)) first = &t;
    return first ? first->trial.variant : Variant{};
  };
  Variant want = best;
  want.dtype = DType::kF16;
  EXPECT_NE(first_measured(bf16).Uri(), best.Uri()) << "the landscape's best must not be the cost model's first pick";
  EXPECT_EQ(first_measured(f16).Uri(), want.Uri());
  auto w = (*db)->FindWinner(space->Device(), space->Toolchain(), BucketOf(f16));
  ASSERT_TRUE(w.ok() && w->has_value());
  EXPECT_EQ((*w)->variant_uri, want.Uri());
}

// The budgeted search measures the runtime's untuned plan (SearchContext::UntunedPlan), for a
// class's first problem and for one that follows the prior of the class's others: a landscape
// whose best elsewhere sits far from the untuned plan, with the untuned plan made the fastest,
// crowns it either way (without UntunedPlan, this landscape's searches crown another tile).
TEST(Tuner, BudgetedNeverSkipsTheUntunedPlan) {
  const Problem first{DType::kBF16, 64, false, 4, 2048, 2048, 32, 32};
  Problem later = first;
  later.batch = 1;
  later.seqlen_q = later.seqlen_k = 8192;
  ReplayMeasurer::Options o;
  o.device = {"NVIDIA A100-SXM4-80GB", "replay-a100", 8, 0, 108, "replay"};
  auto untuned = DefaultVariantForGpu(first, 8, 0);  // the replay device's compute capability
  ASSERT_TRUE(untuned.ok()) << untuned.status().ToString();
  // Seed 2's landscape is best at 128 x 64, 8 warps, 3 stages (SyntheticRows): the untuned plan,
  // 128 x 128, 4 warps, 2 stages, differs in all three.
  auto landscape = [&](const Problem& p, bool untuned_fastest) {
    std::vector<RecordedRow> rows = SyntheticRows(p, 2);
    Variant best;
    const double best_us = TrueBest(rows, p, &best);
    EXPECT_NE(best.Uri(), untuned->Uri()) << "the landscape's best must not be the untuned plan";
    bool found = false;
    for (RecordedRow& r : rows)
      if (r.variant == *untuned) {
        found = true;
        if (untuned_fastest) r.median_us = 0.8 * best_us;
      }
    EXPECT_TRUE(found) << untuned->Uri() << " is not in the recorded space";
    return rows;
  };
  for (const bool first_too : {true, false}) {
    SCOPED_TRACE(first_too ? "first problem" : "a problem following the prior");
    std::vector<RecordedRow> rows = landscape(first, first_too);
    std::vector<RecordedRow> more = landscape(later, true);
    rows.insert(rows.end(), more.begin(), more.end());
    auto space = ReplayMeasurer::FromText(ReplayCsv(rows), "rows", o);
    auto measurer = ReplayMeasurer::FromText(ReplayCsv(rows), "rows", o);
    ASSERT_TRUE(space.ok() && measurer.ok());
    const std::string db_path = TempDir(first_too ? "tune_untuned_first" : "tune_untuned_later") + "/t.db";
    std::vector<std::unique_ptr<Measurer>> ms;
    ms.push_back(std::move(*measurer));
    TuneOptions t = ReplayTuneOptions(db_path, {first, later}, space->get());
    t.strategy = "budgeted";
    auto summary = Tune(t, std::move(ms));
    ASSERT_TRUE(summary.ok()) << summary.status().ToString();
    for (const ProblemSummary& s : summary->problems) EXPECT_LT(s.measured, s.space) << s.problem.ToString();
    auto db = Database::Open(db_path);
    ASSERT_TRUE(db.ok());
    for (const Problem& p : first_too ? std::vector<Problem>{first, later} : std::vector<Problem>{later}) {
      auto w = (*db)->FindWinner(o.device, o.toolchain, BucketOf(p));
      ASSERT_TRUE(w.ok() && w->has_value()) << p.ToString();
      EXPECT_EQ((*w)->variant_uri, untuned->Uri()) << p.ToString();
    }
  }
}

// A replay that logs what the tuner asks of it: "measure P" and "prefetch P".
class LoggingMeasurer final : public Measurer {
 public:
  LoggingMeasurer(std::unique_ptr<ReplayMeasurer> replay, std::shared_ptr<std::vector<std::string>> log)
      : replay_(std::move(replay)), log_(std::move(log)) {}
  DeviceRecord Device() const override { return replay_->Device(); }
  ToolchainInfo Toolchain() const override { return replay_->Toolchain(); }
  Result<Measurement> Measure(const Problem& p, const Variant& v) override {
    log_->push_back("measure " + p.ToString());
    return replay_->Measure(p, v);
  }
  void Prefetch(const Problem& p) override { log_->push_back("prefetch " + p.ToString()); }

 private:
  std::unique_ptr<ReplayMeasurer> replay_;
  std::shared_ptr<std::vector<std::string>> log_;
};

// While a problem measures, the next problem of another class is announced (its compiles can
// start), once per problem measured; a rerun that measures nothing announces nothing.
TEST(Tuner, TheNextClassIsPrefetchedWhileAProblemMeasures) {
  const std::vector<Problem> all = SmallProblemSet();
  std::vector<Problem> problems;  // two lengths of one class, then one of another
  for (const Problem& p : all)
    if (ClassOf(p) == ClassOf(all[0]) && problems.size() < 2) problems.push_back(p);
  for (const Problem& p : all)
    if (ClassOf(p) != ClassOf(all[0])) {
      problems.push_back(p);
      break;
    }
  ASSERT_EQ(problems.size(), 3u);
  std::vector<RecordedRow> rows;
  for (size_t i = 0; i < problems.size(); ++i) {
    auto r = SyntheticRows(problems[i], uint32_t(i + 1));
    rows.insert(rows.end(), r.begin(), r.end());
  }
  auto space = Replay(rows);
  const std::string db_path = TempDir("tune_prefetch") + "/t.db";
  auto run = [&] {
    auto log = std::make_shared<std::vector<std::string>>();
    std::vector<std::unique_ptr<Measurer>> ms;
    ms.push_back(std::make_unique<LoggingMeasurer>(Replay(rows), log));
    EXPECT_TRUE(Tune(ReplayTuneOptions(db_path, problems, space.get()), std::move(ms)).ok());
    return *log;
  };
  const std::vector<std::string> log = run();
  const std::string other = "prefetch " + problems[2].ToString();
  EXPECT_EQ(std::count(log.begin(), log.end(), other), 2);  // once per problem of the first class
  EXPECT_EQ(log.front(), other);  // before the first measurement
  const auto first_of_other = std::find(log.begin(), log.end(), "measure " + problems[2].ToString());
  ASSERT_NE(first_of_other, log.end());
  EXPECT_EQ(std::count_if(first_of_other, log.end(), [](const std::string& e) { return e.rfind("prefetch", 0) == 0; }),
            0);  // the last class has nothing after it
  EXPECT_TRUE(run().empty());  // rerun: every problem skipped
}

TEST(Tuner, FailedAndWrongCandidatesNeverWin) {
  Problem p = SmallProblemSet()[0];
  auto rows = SyntheticRows(p, 7);
  // The three fastest are broken in different ways (their "timings" are the fastest of all).
  std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.median_us < b.median_us; });
  rows[0].status = "wrong_result";
  rows[1].status = "fault";
  rows[2].status = "compile_error";
  rows[2].median_us = 0;
  for (int i = 0; i < 3; ++i) rows[i].median_us = rows[i].median_us * 0.5;
  auto space = Replay(rows);
  std::vector<std::unique_ptr<Measurer>> ms;
  ms.push_back(Replay(rows));
  std::string db_path = TempDir("tune_failed") + "/t.db";
  auto summary = Tune(ReplayTuneOptions(db_path, {p}, space.get()), std::move(ms));
  ASSERT_TRUE(summary.ok());
  ASSERT_EQ(summary->problems[0].outcome, ProblemOutcome::kTuned);
  EXPECT_EQ(summary->problems[0].winner_uri, rows[3].variant.Uri());
  EXPECT_EQ(summary->failed, 3);
  // Failures are recorded as trials with their status.
  auto db = Database::Open(db_path);
  auto trials = (*db)->TrialsForProblem(*(*db)->FindProblem(p));
  ASSERT_TRUE(trials.ok());
  std::map<std::string, int> by_status;
  for (const auto& t : *trials) by_status[t.status_name]++;
  EXPECT_EQ(by_status["wrong_result"], 1);
  EXPECT_EQ(by_status["fault"], 1);
  EXPECT_EQ(by_status["compile_error"], 1);

  // All candidates failing: no winner at all.
  for (auto& r : rows) r.status = "out_of_resources";
  auto space2 = Replay(rows);
  std::vector<std::unique_ptr<Measurer>> ms2;
  ms2.push_back(Replay(rows));
  auto none = Tune(ReplayTuneOptions(TempDir("tune_allfail") + "/t.db", {p}, space2.get()), std::move(ms2));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->problems[0].outcome, ProblemOutcome::kNoWinner);
  EXPECT_EQ(none->winners, 0);
}

// A backward problem is searched over the backward family's space (the replay knows it is a
// backward row by its variant's family) and crowned under its own "bwd/" bucket, beside the
// forward problem of the same shape.
TEST(Tuner, BackwardProblemsAreTunedUnderTheirOwnBuckets) {
  Problem p = SmallProblemSet()[0];
  Problem backward = p;
  backward.operation = Operation::kBackward;
  auto rows = SyntheticRows(p, 7);
  auto space = EnumerateSpaceFor(backward, SpaceOptions{});
  ASSERT_TRUE(space.ok()) << space.status().ToString();
  ASSERT_GT(space->size(), 2u);
  std::string fastest;
  for (size_t i = 0; i < space->size(); ++i) {
    const Variant& v = (*space)[i];
    EXPECT_EQ(v.family.substr(v.family.size() - 4), "_bwd");  // fa2_bwd, hopper_bwd on sm_90a
    // Fastest: the third variant of the space; the others 10 % apart.
    const double us = 1000.0 * (i == 2 ? 1.0 : 1.1 + 0.1 * double(i));
    if (i == 2) fastest = v.Uri();
    rows.push_back(RecordedRow{backward, v, "ok", us, us * 0.003, "search", ""});
  }
  auto replay = Replay(rows);
  std::vector<std::unique_ptr<Measurer>> ms;
  ms.push_back(Replay(rows));
  const std::string db_path = TempDir("tune_backward") + "/t.db";
  auto summary = Tune(ReplayTuneOptions(db_path, {backward, p}, replay.get()), std::move(ms));
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  ASSERT_EQ(summary->problems.size(), 2u);
  for (const ProblemSummary& s : summary->problems) EXPECT_EQ(s.outcome, ProblemOutcome::kTuned) << s.message;
  auto db = Database::Open(db_path);
  ASSERT_TRUE(db.ok());
  auto bw = (*db)->FindWinner(replay->Device(), replay->Toolchain(), BucketOf(backward));
  ASSERT_TRUE(bw.ok() && bw->has_value());
  EXPECT_EQ((*bw)->variant_uri, fastest);
  auto fw = (*db)->FindWinner(replay->Device(), replay->Toolchain(), BucketOf(p));
  ASSERT_TRUE(fw.ok() && fw->has_value());
  EXPECT_EQ((*fw)->variant_uri.rfind("fa2_fwd_", 0), 0u) << (*fw)->variant_uri;
}

// With store_winner_cubins the engine itself puts each winner's cubin, compiled for the
// measurers' arch (the replay device is cc 9.0: sm_90a), into the database: a library caller
// of Tune() gets them, not only the CLI. Without it, nothing is compiled.
TEST(Tuner, StoresWinnerCubinsWhenAsked) {
  Problem p = SmallProblemSet()[0];
  Variant a = Fa2Variant(p.dtype, p.head_dim, p.causal, 128, 64, 4, 2);
  Variant b = Fa2Variant(p.dtype, p.head_dim, p.causal, 128, 128, 4, 2);
  std::vector<RecordedRow> rows = {{p, a, "ok", 100.0, 0.2, "search", ""}, {p, b, "ok", 120.0, 0.2, "search", ""}};
  for (bool store : {false, true}) {
    auto space = Replay(rows);
    std::vector<std::unique_ptr<Measurer>> ms;
    ms.push_back(Replay(rows));
    const std::string db_path = TempDir(store ? "tune_store_cubins" : "tune_no_cubins") + "/t.db";
    TuneOptions options = ReplayTuneOptions(db_path, {p}, space.get());
    options.store_winner_cubins = store;
    auto s = Tune(options, std::move(ms));
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ASSERT_EQ(s->problems[0].winner_uri, a.Uri());
    auto db = Database::Open(db_path);
    ASSERT_TRUE(db.ok());
    auto cubins = (*db)->ListCubins();
    ASSERT_TRUE(cubins.ok());
    if (!store) {
      EXPECT_TRUE(cubins->empty());
      continue;
    }
    ASSERT_EQ(cubins->size(), 1u);
    EXPECT_EQ((*cubins)[0].arch, "sm_90a");
    auto source = GenerateSource(a);
    ASSERT_TRUE(source.ok());
    EXPECT_EQ((*cubins)[0].source_hash, source->sha256);
  }
}

TEST(Tuner, NoiseRuleKeepsIncumbent) {
  Problem p = SmallProblemSet()[0];
  Variant a = Fa2Variant(p.dtype, p.head_dim, p.causal, 128, 64, 4, 2);
  Variant b = Fa2Variant(p.dtype, p.head_dim, p.causal, 128, 128, 4, 2);
  // First pass: a leads. Re-timing: b is 0.5% faster — within noise, so a stays.
  std::vector<RecordedRow> rows = {
      {p, a, "ok", 100.0, 0.2, "search", ""}, {p, b, "ok", 101.0, 0.2, "search", ""},
      {p, a, "ok", 100.0, 0.2, "retime", ""}, {p, b, "ok", 99.5, 0.2, "retime", ""},
  };
  auto space = Replay(rows);
  std::vector<std::unique_ptr<Measurer>> ms;
  ms.push_back(Replay(rows));
  auto s = Tune(ReplayTuneOptions(TempDir("tune_noise") + "/t.db", {p}, space.get()), std::move(ms));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->problems[0].winner_uri, a.Uri());
  // Beyond noise (5% faster on re-timing) the challenger takes it.
  rows[3].median_us = 95.0;
  auto space2 = Replay(rows);
  std::vector<std::unique_ptr<Measurer>> ms2;
  ms2.push_back(Replay(rows));
  auto s2 = Tune(ReplayTuneOptions(TempDir("tune_noise2") + "/t.db", {p}, space2.get()), std::move(ms2));
  ASSERT_TRUE(s2.ok());
  EXPECT_EQ(s2->problems[0].winner_uri, b.Uri());
  EXPECT_DOUBLE_EQ(s2->problems[0].median_us, 95.0);
}

// Re-timing rounds: one noisy round decides for a; more rounds continue while the leader is
// less than 3% ahead, and the median round decides for b. A clear gap stops after one round.
TEST(Tuner, RetimeRoundsDecideNearTiesOnTheMedianRound) {
  Problem p = SmallProblemSet()[0];
  Variant a = Fa2Variant(p.dtype, p.head_dim, p.causal, 128, 64, 4, 2);
  Variant b = Fa2Variant(p.dtype, p.head_dim, p.causal, 128, 128, 4, 2);
  auto rows_with = [&](std::vector<double> a_retimes, std::vector<double> b_retimes) {
    std::vector<RecordedRow> rows = {{p, a, "ok", 100.0, 0.2, "search", ""}, {p, b, "ok", 101.0, 0.2, "search", ""}};
    for (double us : a_retimes) rows.push_back({p, a, "ok", us, 0.2, "retime", ""});
    for (double us : b_retimes) rows.push_back({p, b, "ok", us, 0.2, "retime", ""});
    return rows;
  };
  auto tune = [&](const std::vector<RecordedRow>& rows, int rounds) {
    auto space = Replay(rows);
    std::vector<std::unique_ptr<Measurer>> ms;
    ms.push_back(Replay(rows));
    TuneOptions o = ReplayTuneOptions(TempDir("tune_rounds") + "/t.db", {p}, space.get());
    o.retime_rounds = rounds;
    return Tune(o, std::move(ms));
  };
  auto tuned = [&](const std::vector<RecordedRow>& rows, int rounds) {
    auto s = tune(rows, rounds);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? *s : TuneSummary{};
  };
  const auto near_tie = rows_with({101.5, 110.0, 111.0}, {103.0, 104.0, 103.0});
  TuneSummary one = tuned(near_tie, 1);
  EXPECT_EQ(one.problems[0].winner_uri, a.Uri());
  EXPECT_DOUBLE_EQ(one.problems[0].median_us, 101.5);
  EXPECT_EQ(one.measured, 2 + 2);  // search, then each finalist once
  TuneSummary three = tuned(near_tie, 3);
  EXPECT_EQ(three.problems[0].winner_uri, b.Uri());
  EXPECT_DOUBLE_EQ(three.problems[0].median_us, 103.0);
  EXPECT_EQ(three.measured, 2 + 2 * 3);
  TuneSummary clear = tuned(rows_with({99.0, 110.0, 111.0}, {105.0, 104.0, 103.0}), 3);
  EXPECT_EQ(clear.problems[0].winner_uri, a.Uri());
  EXPECT_EQ(clear.measured, 2 + 2);  // 6% apart after one round: decided
  for (int bad : {-1, 11}) {
    auto s = tune(near_tie, bad);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
    EXPECT_NE(s.status().message().find("--retime-rounds " + std::to_string(bad) + ": allowed 1 to 10, or 0"),
              std::string::npos) << s.status().message();
  }
}

// A finalist that faults when re-timed (a race that passed its first run) is out of contention,
// with its failed re-timing recorded as a trial; the next finalist wins on its own re-timing.
// When every finalist fails re-timing, the problem has no winner and says why.
TEST(Tuner, AFinalistThatFailsItsRetimingIsOutAndRecorded) {
  Problem p = SmallProblemSet()[0];
  Variant a = Fa2Variant(p.dtype, p.head_dim, p.causal, 128, 64, 4, 2);
  Variant b = Fa2Variant(p.dtype, p.head_dim, p.causal, 128, 128, 4, 2);
  auto tune = [&](const std::vector<RecordedRow>& rows, const std::string& db_path) {
    auto space = Replay(rows);
    std::vector<std::unique_ptr<Measurer>> ms;
    ms.push_back(Replay(rows));
    TuneOptions o = ReplayTuneOptions(db_path, {p}, space.get());
    o.retime_rounds = 1;
    auto s = Tune(o, std::move(ms));
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? *s : TuneSummary{};
  };
  const std::string db_path = TempDir("tune_retime_fault") + "/t.db";
  TuneSummary one = tune({{p, a, "ok", 100.0, 0.2, "search", ""},
                          {p, b, "ok", 101.0, 0.2, "search", ""},
                          {p, a, "fault", 0, 0, "retime", "illegal address"},
                          {p, b, "ok", 102.0, 0.2, "retime", ""}},
                         db_path);
  ASSERT_EQ(one.problems.size(), 1u);
  EXPECT_EQ(one.problems[0].outcome, ProblemOutcome::kTuned);
  EXPECT_EQ(one.problems[0].winner_uri, b.Uri());
  EXPECT_DOUBLE_EQ(one.problems[0].median_us, 102.0);
  EXPECT_EQ(one.failed, 1);
  auto db = Database::Open(db_path);
  ASSERT_TRUE(db.ok());
  auto trials = (*db)->TrialsForProblem(*(*db)->FindProblem(p));
  ASSERT_TRUE(trials.ok());
  int failed_retimes = 0;
  for (const auto& t : *trials)
    failed_retimes += t.trial.phase == "retime" && t.status_name == "fault" && t.variant_uri == a.Uri();
  EXPECT_EQ(failed_retimes, 1);

  TuneSummary none = tune({{p, a, "ok", 100.0, 0.2, "search", ""},
                           {p, b, "ok", 101.0, 0.2, "search", ""},
                           {p, a, "fault", 0, 0, "retime", "illegal address"},
                           {p, b, "wrong_result", 0, 0, "retime", "max abs error 0.5"}},
                          TempDir("tune_retime_all") + "/t.db");
  ASSERT_EQ(none.problems.size(), 1u);
  EXPECT_EQ(none.problems[0].outcome, ProblemOutcome::kNoWinner);
  EXPECT_EQ(none.problems[0].message, "every finalist failed re-timing");
  EXPECT_EQ(none.winners, 0);
  EXPECT_EQ(none.failed, 2);
}

// Each re-timing round reaches the progress sink with what it timed; the console prints it (not
// on a terminal, where the bar stays) so that a user sees which finalists decided the winner.
TEST(Tuner, RetimeRoundsReachTheProgressSinkAndTheConsole) {
  Problem p = SmallProblemSet()[0];
  Variant a = Fa2Variant(p.dtype, p.head_dim, p.causal, 128, 64, 4, 2);
  Variant b = Fa2Variant(p.dtype, p.head_dim, p.causal, 128, 128, 4, 2);
  const std::vector<RecordedRow> rows = {{p, a, "ok", 100.0, 0.2, "search", ""}, {p, b, "ok", 101.0, 0.2, "search", ""},
                                         {p, a, "ok", 101.5, 0.2, "retime", ""}, {p, a, "ok", 110.0, 0.2, "retime", ""},
                                         {p, a, "ok", 111.0, 0.2, "retime", ""}, {p, b, "ok", 103.0, 0.2, "retime", ""},
                                         {p, b, "ok", 104.0, 0.2, "retime", ""}, {p, b, "ok", 103.0, 0.2, "retime", ""}};
  struct Recorder final : ProgressSink {
    std::vector<std::pair<int, std::map<std::string, double>>> rounds;
    int most = 0;
    void OnRetime(size_t, int round, int of, const std::vector<CandidateResult>& timed) override {
      std::map<std::string, double> us;
      for (const CandidateResult& r : timed) us[r.variant.Uri()] = r.measurement.median_us;
      rounds.push_back({round, us});
      most = of;
    }
  } recorder;
  const std::string dir = TempDir("tune_progress"), log_path = dir + "/console.txt";
  std::FILE* log = std::fopen(log_path.c_str(), "w");
  ASSERT_NE(log, nullptr);
  auto console = MakeConsoleProgress(log, /*tty=*/false);
  for (ProgressSink* sink : {static_cast<ProgressSink*>(&recorder), console.get()}) {
    auto space = Replay(rows);
    std::vector<std::unique_ptr<Measurer>> ms;
    ms.push_back(Replay(rows));
    TuneOptions o = ReplayTuneOptions(dir + (sink == console.get() ? "/console.db" : "/recorder.db"), {p}, space.get());
    o.retime_rounds = 3;
    o.progress = sink;
    auto summary = Tune(o, std::move(ms));
    ASSERT_TRUE(summary.ok()) << summary.status().ToString();
    EXPECT_EQ(summary->problems[0].winner_uri, b.Uri());
  }
  std::fclose(log);
  ASSERT_EQ(recorder.rounds.size(), 3u);
  EXPECT_EQ(recorder.most, 3);
  const double a_us[] = {101.5, 110.0, 111.0}, b_us[] = {103.0, 104.0, 103.0};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(recorder.rounds[i].first, i + 1);
    EXPECT_DOUBLE_EQ(recorder.rounds[i].second[a.Uri()], a_us[i]);
    EXPECT_DOUBLE_EQ(recorder.rounds[i].second[b.Uri()], b_us[i]);
  }
  std::ifstream in(log_path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("  re-timed, round 1 of at most 3: "), std::string::npos) << text;
  EXPECT_NE(text.find(a.Uri() + " 101.50 us"), std::string::npos) << text;
  EXPECT_NE(text.find(b.Uri() + " 104.00 us"), std::string::npos) << text;
  EXPECT_NE(text.find("round 3 of at most 3"), std::string::npos) << text;
}

// The summary says what tuning bought: the untuned plan's time over the winner's, on the
// console line of each problem and in the summary table's last column ("the untuned plan" and
// 1.00 where it won).
TEST(Tuner, TheSummarySaysWhatTuningBoughtOverTheUntunedPlan) {
  const Problem p = SmallProblemSet()[0];
  Problem q = p;
  q.seqlen_q = q.seqlen_k = 2 * p.seqlen_q;
  ReplayMeasurer::Options o;
  o.device = {"NVIDIA A100-SXM4-80GB", "replay-a100", 8, 0, 108, "replay"};
  auto untuned = DefaultVariantForGpu(p, 8, 0);  // the replay device's compute capability
  ASSERT_TRUE(untuned.ok()) << untuned.status().ToString();
  ASSERT_EQ(untuned->family, "fa2_fwd");
  Variant fast = Fa2Variant(p.dtype, p.head_dim, p.causal, 64, 64, 4, 2);
  Variant slow = Fa2Variant(p.dtype, p.head_dim, p.causal, 64, 32, 4, 3);
  ASSERT_FALSE(fast == *untuned || slow == *untuned);
  // p: the untuned plan 130 us against the winner's 100; q: the untuned plan wins.
  const std::vector<RecordedRow> rows = {{p, *untuned, "ok", 130.0, 0.2, "search", ""},
                                         {p, fast, "ok", 100.0, 0.2, "search", ""},
                                         {p, slow, "ok", 150.0, 0.2, "search", ""},
                                         {q, *untuned, "ok", 90.0, 0.2, "search", ""},
                                         {q, fast, "ok", 120.0, 0.2, "search", ""},
                                         {q, slow, "ok", 150.0, 0.2, "search", ""}};
  auto space = ReplayMeasurer::FromText(ReplayCsv(rows), "rows", o);
  auto measurer = ReplayMeasurer::FromText(ReplayCsv(rows), "rows", o);
  ASSERT_TRUE(space.ok() && measurer.ok());
  const std::string dir = TempDir("tune_untuned_summary"), log_path = dir + "/console.txt";
  std::FILE* log = std::fopen(log_path.c_str(), "w");
  ASSERT_NE(log, nullptr);
  auto console = MakeConsoleProgress(log, /*tty=*/false);
  std::vector<std::unique_ptr<Measurer>> ms;
  ms.push_back(std::move(*measurer));
  TuneOptions t = ReplayTuneOptions(dir + "/t.db", {p, q}, space->get());
  t.strategy = "exhaustive";
  t.progress = console.get();
  auto summary = Tune(t, std::move(ms));
  std::fclose(log);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  ASSERT_EQ(summary->problems.size(), 2u);
  const ProblemSummary& ps = summary->problems[0].problem == p ? summary->problems[0] : summary->problems[1];
  const ProblemSummary& qs = summary->problems[0].problem == p ? summary->problems[1] : summary->problems[0];
  EXPECT_EQ(ps.winner_uri, fast.Uri());
  EXPECT_EQ(ps.untuned_uri, untuned->Uri());
  EXPECT_DOUBLE_EQ(ps.untuned_us, 130.0);
  EXPECT_EQ(qs.winner_uri, untuned->Uri());
  EXPECT_DOUBLE_EQ(qs.untuned_us, qs.median_us);
  std::ifstream in(log_path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find(" (1.30x the untuned plan " + untuned->Uri() + ", 130.00 us)"), std::string::npos) << text;
  const size_t q_at = text.find(q.ToString() + ": tuned " + untuned->Uri() + " 90.00 us ");
  ASSERT_NE(q_at, std::string::npos) << text;
  const std::string q_line = text.substr(q_at, text.find('\n', q_at) - q_at);
  EXPECT_EQ(q_line.substr(q_line.size() - 19), " (the untuned plan)") << q_line;
  const std::string table = FormatSummaryTable(*summary);
  EXPECT_NE(table.find("x untuned"), std::string::npos) << table;
  std::string p_row, q_row;
  for (size_t at = 0, end; (end = table.find('\n', at)) != std::string::npos; at = end + 1) {
    const std::string line = table.substr(at, end - at);
    if (line.rfind(p.ToString(), 0) == 0) p_row = line;
    if (line.rfind(q.ToString(), 0) == 0) q_row = line;
  }
  EXPECT_EQ(p_row.substr(p_row.size() - 5), " 1.30") << table;
  EXPECT_EQ(q_row.substr(q_row.size() - 5), " 1.00") << table;
}

TEST(Tuner, ResumeSkipsRecordedVariants) {
  Problem p = SmallProblemSet()[0];
  auto rows = SyntheticRows(p, 3);
  auto space = Replay(rows);
  std::string db_path = TempDir("tune_resume") + "/t.db";
  // A first run cut short by a total budget of 5 measurements: no winner is written... 
  {
    std::vector<std::unique_ptr<Measurer>> ms;
    ms.push_back(Replay(rows));
    TuneOptions o = ReplayTuneOptions(db_path, {p}, space.get());
    o.total.measurements = 5;
    o.retime_top_k = 0;
    auto s = Tune(o, std::move(ms));
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->measured, 5);
  }
  // ...the rerun measures only the rest and uses the recorded five.
  std::vector<std::unique_ptr<Measurer>> ms;
  ms.push_back(Replay(rows));
  TuneOptions o = ReplayTuneOptions(db_path, {p}, space.get());
  o.retime_top_k = 0;
  // The first run wrote a winner from its five; an exhaustive rerun is not blocked by it (a
  // budget-starved winner must not end a richer search): it measures the rest only.
  auto s = Tune(o, std::move(ms));
  ASSERT_TRUE(s.ok());
  EXPECT_NE(s->problems[0].outcome, ProblemOutcome::kSkipped);
  EXPECT_EQ(s->problems[0].resumed, 5);
  EXPECT_EQ(s->measured, int64_t(rows.size()) - 5);
  // Now the space is complete: a third run skips.
  std::vector<std::unique_ptr<Measurer>> again;
  again.push_back(Replay(rows));
  auto third = Tune(o, std::move(again));
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->problems[0].outcome, ProblemOutcome::kSkipped);
  EXPECT_EQ(third->measured, 0);
}

// GPUs of two models tune every problem each, and each searches the space the enumerator gives
// for its own device (a GPU of another arch has other families): here one variant for the
// cc 8.0 GPU, another for the cc 9.0 one, and each GPU's winner is its own space's.
TEST(Tuner, EachDeviceModelSearchesTheSpaceEnumeratedForIt) {
  const Problem p = SmallProblemSet()[0];
  const Variant a = Fa2Variant(p.dtype, p.head_dim, p.causal, 128, 64, 4, 2);
  const Variant b = Fa2Variant(p.dtype, p.head_dim, p.causal, 128, 128, 4, 2);
  const std::vector<RecordedRow> rows = {{p, a, "ok", 100.0, 0.2, "search", ""}, {p, b, "ok", 90.0, 0.2, "search", ""}};
  auto model = [&](DeviceRecord device) {
    ReplayMeasurer::Options o;
    o.device = std::move(device);
    auto r = ReplayMeasurer::FromText(ReplayCsv(rows), "rows", o);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return std::move(*r);
  };
  const DeviceRecord hopper{"NVIDIA H200", "GPU-h", 9, 0, 132, "580"}, ampere{"NVIDIA A100", "GPU-a", 8, 0, 108, "580"};
  std::vector<std::unique_ptr<Measurer>> ms;
  ms.push_back(model(hopper));
  ms.push_back(model(ampere));
  const std::string db_path = TempDir("tune_models") + "/t.db";
  TuneOptions o;
  o.db_path = db_path;
  o.problems = {p};
  o.strategy = "exhaustive";
  o.enumerate = [&](const Problem&, const DeviceRecord& device) -> Result<std::vector<Variant>> {
    return std::vector<Variant>{device.cc_major == 9 ? a : b};
  };
  auto s = Tune(o, std::move(ms));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->winners, 2);
  auto db = Database::Open(db_path);
  ASSERT_TRUE(db.ok());
  for (const auto& [device, want] : {std::pair{hopper, a}, std::pair{ampere, b}}) {
    auto w = (*db)->FindWinner(device, ReplayMeasurer::Options{}.toolchain, BucketOf(p));
    ASSERT_TRUE(w.ok() && w->has_value()) << device.name;
    EXPECT_EQ((*w)->variant_uri, want.Uri()) << device.name;
  }
}

TEST(Tuner, MultiDeviceSplitsProblemsAndLosesNothing) {
  std::vector<RecordedRow> rows;
  auto problems = SmallProblemSet();
  for (size_t i = 0; i < problems.size(); ++i) {
    auto r = SyntheticRows(problems[i], uint32_t(i + 11));
    rows.insert(rows.end(), r.begin(), r.end());
  }
  auto space = Replay(rows);
  std::vector<std::unique_ptr<Measurer>> ms;
  for (int d = 0; d < 3; ++d) ms.push_back(Replay(rows, "replay-" + std::to_string(d)));
  std::string db_path = TempDir("tune_multi") + "/t.db";
  TuneOptions o = ReplayTuneOptions(db_path, problems, space.get());
  o.retime_top_k = 0;
  auto s = Tune(o, std::move(ms));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->winners, int64_t(problems.size()));
  EXPECT_EQ(s->measured, int64_t(rows.size()));  // each problem measured once, by one device
  auto db = Database::Open(db_path);
  auto exported = (*db)->Export(ExportFormat::kCsv);
  ASSERT_TRUE(exported.ok());
  EXPECT_EQ(size_t(std::count(exported->begin(), exported->end(), '\n')), rows.size() + 1);
}

TEST(Tuner, BudgetParsing) {
  EXPECT_EQ(ParseBudget("100", "b")->measurements, 100);
  EXPECT_DOUBLE_EQ(ParseBudget("25%", "b")->fraction, 0.25);
  EXPECT_DOUBLE_EQ(ParseBudget("90s", "b")->seconds, 90);
  EXPECT_DOUBLE_EQ(ParseBudget("10m", "b")->seconds, 600);
  EXPECT_TRUE(ParseBudget("", "b")->unlimited());
  for (const char* bad : {"-1", "abc", "150%", "1.5", "0"}) {
    auto r = ParseBudget(bad, "--budget-total");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("--budget-total"), std::string::npos);
  }
  EXPECT_FALSE(MakeStrategy("random").ok());
}

TEST(Replay, ParseErrorsNameLineAndColumn) {
  std::string head = "dtype,head_dim,causal,batch,seqlen_q,seqlen_k,heads_q,heads_kv,variant,status,median_us,iqr_us\n";
  auto r = ReplayMeasurer::FromText(head + "bf16,128,0,4,4096,4096,16,16,fa2_fwd_bf16_d128_br128_bc64_w4_s2_full,ok,1,0\n"
                                           "bf16,128,0,4,4096,4096,16,16,fa2_fwd_bf16_d128_br128_bc64_w4_s2_full,great,1,0\n",
                                    "rec.csv", {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("rec.csv:3: column 'status'"), std::string::npos) << r.status().message();
  auto missing = ReplayMeasurer::FromText("dtype,head_dim\n", "rec.csv", {});
  EXPECT_NE(missing.status().message().find("column 'causal' is missing"), std::string::npos);
  auto json = ReplayMeasurer::FromText("[{\"dtype\": 1", "rec.json", {});
  EXPECT_NE(json.status().message().find("not valid JSON"), std::string::npos);
  // Counts that do not fit (found by fuzzing: they used to overflow the conversion).
  auto huge = ReplayMeasurer::FromText(
      head.substr(0, head.size() - 1) + ",reps\n" +
          "bf16,128,0,4,4096,4096,16,16,fa2_fwd_bf16_d128_br128_bc64_w4_s2_full,ok,1,0,2.4e12\n",
      "rec.csv", {});
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("rec.csv:2: column 'reps'"), std::string::npos) << huge.status().message();
  auto wide_d = ReplayMeasurer::FromText(
      head + "bf16,4294967360,0,4,4096,4096,16,16,fa2_fwd_bf16_d64_br128_bc64_w4_s2_full,ok,1,0\n", "rec.csv", {});
  ASSERT_FALSE(wide_d.ok());
  EXPECT_NE(wide_d.status().message().find("column 'head_dim'"), std::string::npos) << wide_d.status().message();
}

}  // namespace
}  // namespace flashtune
