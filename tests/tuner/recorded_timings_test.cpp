// The tuner against real H200 timings (bench/data): the budgeted strategy against exhaustive
// on the recordings as they are, and both under fresh simulated measurement noise (how often
// a strategy misses the best, how often two runs disagree).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "flashtune/database.h"
#include "flashtune/replay_measurer.h"
#include "flashtune/tuner.h"
#include "tests/support/replay_fixture.h"

namespace flashtune {
namespace {

using namespace flashtune::testing;

// The problem's eight columns of a `db export --format csv` row, comma-separated.
std::string ProblemKey(const Problem& p) {
  return std::string(DTypeName(p.dtype)) + "," + std::to_string(p.head_dim) + "," + (p.causal ? "1" : "0") + "," +
         std::to_string(p.batch) + "," + std::to_string(p.seqlen_q) + "," + std::to_string(p.seqlen_k) + "," +
         std::to_string(p.heads_q) + "," + std::to_string(p.heads_kv);
}
// "problem fields,variant": the first nine columns.
std::string RecordedKey(const Problem& p, const std::string& uri) { return ProblemKey(p) + "," + uri; }

// RecordedKey -> mean median_us over the ok rows of an exported trials CSV's text. The columns
// read (problem, variant, status, median_us) come before any quoted free text.
std::map<std::string, double> MeanRecordedTimesOfText(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);  // header
  std::map<std::string, std::pair<double, int>> sums;
  while (std::getline(in, line)) {
    std::vector<std::string> fields;
    std::stringstream ss(line);
    std::string f;
    while (fields.size() < 11 && std::getline(ss, f, ',')) fields.push_back(f);
    if (fields.size() < 11 || fields[9] != "ok") continue;
    std::string key = fields[0];
    for (int i = 1; i < 9; ++i) key += "," + fields[i];
    auto& e = sums[key];
    e.first += std::stod(fields[10]);
    ++e.second;
  }
  std::map<std::string, double> out;
  for (const auto& [k, e] : sums) out[k] = e.first / e.second;
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::map<std::string, double> MeanRecordedTimes(const std::string& file) {
  return MeanRecordedTimesOfText(ReadFile(file));
}

// The rows of several exported trials CSVs (paths under bench/data) as one: the first file's
// header, then every file's rows. Each file must exist and carry the same header: a recording
// that went missing must fail the test, not shrink it.
std::string ConcatenatedRecordings(const std::vector<std::string>& names) {
  std::string out, header;
  for (const std::string& name : names) {
    std::ifstream in(std::string(FLASHTUNE_SOURCE_DIR) + "/bench/data/" + name);
    EXPECT_TRUE(in.good()) << "bench/data/" << name << " cannot be read";
    std::string first, line;
    if (!std::getline(in, first)) continue;
    if (header.empty()) out = (header = first) + "\n";
    EXPECT_EQ(first, header) << name << ": another CSV layout";
    while (std::getline(in, line)) out += line + "\n";
  }
  return out;
}

// Tunes the problems recorded in `text` (a trials CSV) from those recordings into `db`.
TuneSummary TuneReplayed(const std::string& text, const std::string& strategy, const std::string& db) {
  auto space = ReplayMeasurer::FromText(text, "recording", {});
  EXPECT_TRUE(space.ok()) << space.status().ToString();
  auto measurer = ReplayMeasurer::FromText(text, "recording", {});
  std::vector<std::unique_ptr<Measurer>> ms;
  ms.push_back(std::move(*measurer));
  TuneOptions o = ReplayTuneOptions(db, (*space)->Problems(), space->get());
  o.strategy = strategy;
  auto summary = Tune(o, std::move(ms));
  EXPECT_TRUE(summary.ok()) << summary.status().ToString();
  return summary.ok() ? *summary : TuneSummary{};
}

// Real timings: every variant of the default set's problems, measured on an H200 by
// `flashtune tune` and exported with `flashtune db export --format csv`: `file` under bench/data.
// The budgeted strategy must find a winner within 3% of the exhaustive one for every problem
// with at most a quarter of the measurements and of the kernel time.
void ExpectBudgetedMatchesExhaustive(const std::string& name, size_t problem_count) {
  const std::string file = std::string(FLASHTUNE_SOURCE_DIR) + "/bench/data/" + name;
  auto space = ReplayMeasurer::FromFile(file, {});
  ASSERT_TRUE(space.ok()) << space.status().ToString();
  const std::vector<Problem> problems = (*space)->Problems();
  ASSERT_EQ(problems.size(), problem_count);
  struct Run {
    TuneSummary summary;
    int64_t calls = 0;
    double gpu_us = 0;  // kernel time of every measurement: what timing costs on the GPU
  };
  const std::string text = ReadFile(file);
  auto run = [&](const std::string& strategy) {
    const std::string db = TempDir("tune_" + strategy) + "/t.db";
    Run r;
    r.summary = TuneReplayed(text, strategy, db);
    r.calls = r.summary.measured;
    auto opened = Database::Open(db);
    for (const Problem& p : problems) {
      const auto trials = (*opened)->TrialsForProblem(*(*opened)->FindProblem(p));  // held: not a temporary
      for (const TrialRow& t : *trials) r.gpu_us += t.trial.median_us;
    }
    return r;
  };
  const Run exhaustive = run("exhaustive");
  const Run budgeted = run("budgeted");
  ASSERT_EQ(budgeted.summary.problems.size(), exhaustive.summary.problems.size());
  // A variant's speed is the mean of all its recorded medians (search and re-timings): the
  // single re-timing a replayed run happens to draw differs by up to 3% at short lengths.
  const std::map<std::string, double> speed = MeanRecordedTimes(file);
  auto speed_of = [&](const ProblemSummary& s) {
    auto it = speed.find(RecordedKey(s.problem, s.winner_uri));
    return it == speed.end() ? 0.0 : it->second;
  };
  double worst = 0;  // slowest budgeted winner relative to the exhaustive one
  for (size_t i = 0; i < problems.size(); ++i) {
    const ProblemSummary& b = budgeted.summary.problems[i];
    const ProblemSummary& e = exhaustive.summary.problems[i];
    ASSERT_EQ(b.outcome, ProblemOutcome::kTuned) << b.message;
    ASSERT_GT(speed_of(e), 0) << e.winner_uri;
    worst = std::max(worst, speed_of(b) / speed_of(e));
    EXPECT_LE(speed_of(b), speed_of(e) * 1.03) << b.problem.ToString() << ": " << b.winner_uri << " vs " << e.winner_uri;
  }
  EXPECT_LE(budgeted.calls * 4, exhaustive.calls) << budgeted.calls << " of " << exhaustive.calls << " measurements";
  EXPECT_LE(budgeted.gpu_us * 4, exhaustive.gpu_us) << budgeted.gpu_us << " of " << exhaustive.gpu_us << " us";
  std::printf("[ budgeted ] %s: %lld of %lld measurements, %.0f%% of the kernel time, worst winner %+.1f%%\n",
              name.c_str(), (long long)budgeted.calls, (long long)exhaustive.calls,
              100.0 * budgeted.gpu_us / exhaustive.gpu_us, 100.0 * (worst - 1));
}

// The first template version's timings (42 problems; the GPU run stopped before the last 6).
TEST(Tuner, BudgetedMatchesExhaustiveOnRecordedH200Timings) {
  ExpectBudgetedMatchesExhaustive("h200-2026-11-30-trials.csv", 42);
}

// The current template's timings, whose landscape is more rugged: d64's best B_c = 32 variant
// is an isolated winner (its neighbours in stages are 15% slower).
TEST(Tuner, BudgetedMatchesExhaustiveOnRecordedH200TimingsOfTheCurrentTemplate) {
  ExpectBudgetedMatchesExhaustive("h200-2026-11-30-trials-v2.csv", 48);
}

// The same template tuned again in a later session (exhaustive, cold; another lease of the
// machine): the same landscape with another draw of the noise.
TEST(Tuner, BudgetedMatchesExhaustiveOnASecondRecordingOfTheCurrentTemplate) {
  ExpectBudgetedMatchesExhaustive("h200-2026-11-30-trials-v2-run2.csv", 48);
}

// A third exhaustive run of the current template on the H200 (stop 10), where the budgeted run
// beside it missed bf16 d64 non-causal by 5%: that class's best variant is set apart by
// occupancy (tests/tuner/occupancy_test.cpp). The fourth run (run4) is only replayed with
// fresh noise below: its one re-timing of f16 d64 causal N512's best is 6% above its search
// time, and a budgeted run, which re-times once, loses that near-tie to the draw.
TEST(Tuner, BudgetedMatchesExhaustiveOnAThirdRecordingOfTheCurrentTemplate) {
  ExpectBudgetedMatchesExhaustive("h200-2026-11-30-trials-v2-run3.csv", 48);
}
// The fifth (stop 10, with the next class's compiles prefetched; same kernels).
TEST(Tuner, BudgetedMatchesExhaustiveOnAFifthRecordingOfTheCurrentTemplate) {
  ExpectBudgetedMatchesExhaustive("h200-2026-11-30-trials-v2-run5.csv", 48);
}

// `auto` and exhaustive replayed over one recording's text: each problem's `auto` winner within
// 3% of the exhaustive one (expected per problem); the worst ratio, and what the problems that
// `budgeted(problem)` names measured of their spaces.
struct AutoAgainstExhaustive {
  TuneSummary automatic, exhaustive;
  double worst = 0;
  std::string worst_shape;
  int64_t budgeted_measured = 0, budgeted_space = 0;
};
AutoAgainstExhaustive ReplayAutoAgainstExhaustive(const std::string& text, const std::string& name,
                                                  bool (*budgeted)(const Problem&)) {
  AutoAgainstExhaustive r;
  r.automatic = TuneReplayed(text, "auto", TempDir(name + "_auto") + "/a.db");
  r.exhaustive = TuneReplayed(text, "exhaustive", TempDir(name + "_exhaustive") + "/e.db");
  EXPECT_EQ(r.exhaustive.problems.size(), r.automatic.problems.size());
  const std::map<std::string, double> speed = MeanRecordedTimesOfText(text);
  for (size_t i = 0; i < std::min(r.automatic.problems.size(), r.exhaustive.problems.size()); ++i) {
    const ProblemSummary& a = r.automatic.problems[i];
    const ProblemSummary& e = r.exhaustive.problems[i];
    EXPECT_EQ(a.outcome, ProblemOutcome::kTuned) << a.problem.ToString() << ": " << a.message;
    EXPECT_EQ(e.outcome, ProblemOutcome::kTuned) << e.problem.ToString() << ": " << e.message;
    if (a.outcome != ProblemOutcome::kTuned || e.outcome != ProblemOutcome::kTuned) continue;
    const double ta = speed.at(RecordedKey(a.problem, a.winner_uri)), te = speed.at(RecordedKey(e.problem, e.winner_uri));
    if (ta / te > r.worst) r.worst = ta / te, r.worst_shape = a.problem.ToString();
    EXPECT_LE(ta, te * 1.03) << a.problem.ToString() << ": " << a.winner_uri << " vs " << e.winner_uri;
    if (budgeted(a.problem)) {
      r.budgeted_measured += a.measured;
      r.budgeted_space += a.space;
    }
  }
  return r;
}

// The current kernels (both families, hopper_fwd with one to three consumer warpgroups) on the
// H200, 2026-12-01 (bench/data/h200-2026-12-01-online2/grid-exhaustive-trials.csv): every
// candidate of bf16 d64 causal and bf16 d128 causal and not at the six default lengths, from the
// default tune and its exhaustive completion. Under `auto` (d128 exhaustive, d64 budgeted) every
// winner is within 3% of the exhaustive one, and d64's search measures under a quarter of its
// space. Before the budgeted search seeded every query tile, its d64 winners there were 7-29%
// slower (N 512: fa2_fwd, never having timed hopper_fwd's 64-row tiles).
TEST(Tuner, AutoMatchesExhaustiveOnTheGridOfTheCurrentKernels) {
  const std::string text =
      ReadFile(std::string(FLASHTUNE_SOURCE_DIR) + "/bench/data/h200-2026-12-01-online2/grid-exhaustive-trials.csv");
  const AutoAgainstExhaustive r =
      ReplayAutoAgainstExhaustive(text, "grid", [](const Problem& p) { return p.head_dim == 64; });
  ASSERT_EQ(r.automatic.problems.size(), 18u);
  EXPECT_GT(r.budgeted_space, 0);
  EXPECT_LE(r.budgeted_measured * 4, r.budgeted_space) << r.budgeted_measured << " of " << r.budgeted_space;
  std::printf("[ auto ] current kernels' grid: worst winner %+.1f%%; d64 budgeted %lld of %lld candidates\n",
              100.0 * (r.worst - 1), (long long)r.budgeted_measured, (long long)r.budgeted_space);
}

// Issue 17's 3% check (session 17, H200, 2026-12-02): every candidate of the default set's grid
// shapes (hidden 2048, B*N 16k) but d128 MHA (exhaustive under auto), recorded exhaustively in
// two device calls (bench/issue17-record.problems, issue17-record2.problems): bf16 and fp16 d64,
// d96, d192 and d256, causal and not, 108 shapes (bf16 d64 causal re-recorded on session 16's
// d64 space, last). Every `auto` winner must be within 3% of the
// exhaustive one. Before the followers dropped a family the class ranks wholly behind another
// (fa2_fwd at d192 and d256, 2-3x slower) and measured what is left whole when it is small,
// d192 causal N 4k-8k picked bn80 where bn112 is 17-19% faster.
TEST(Tuner, AutoMatchesExhaustiveOnTheSession17Grid) {
  const std::string text = ConcatenatedRecordings(
      {"h200-2026-12-02-s17/record1-trials.csv", "h200-2026-12-02-s17/record2-trials.csv"});
  ASSERT_FALSE(text.empty());
  // d128 MHA prefill is exhaustive under auto; every other class is budgeted.
  const AutoAgainstExhaustive r =
      ReplayAutoAgainstExhaustive(text, "s17", [](const Problem& p) { return p.head_dim != 128; });
  ASSERT_EQ(r.automatic.problems.size(), 108u);
  // The budgeted classes stay budgeted (28% of their candidates with the re-timings; 26% before
  // the fix): the small spaces measured whole are what is left after dropping a family.
  EXPECT_LE(r.budgeted_measured * 3, r.budgeted_space) << r.budgeted_measured << " of " << r.budgeted_space;
  std::printf("[ auto ] session 17 grid, %zu shapes: worst winner %+.1f%% (%s); %lld measurements (exhaustive "
              "%lld); budgeted classes %lld of %lld candidates\n",
              r.automatic.problems.size(), 100.0 * (r.worst - 1), r.worst_shape.c_str(),
              (long long)r.automatic.measured, (long long)r.exhaustive.measured, (long long)r.budgeted_measured,
              (long long)r.budgeted_space);
}

// The recorded H200 timings with fresh measurement noise: per variant of each problem, one
// search row and three re-timing rows, each its mean over the recording times
// exp(N(0, sigma)), seeded; failed rows as recorded. Returns the CSV text.
std::string WithNoise(const std::string& file, const std::map<std::string, double>& mean, uint32_t seed,
                      double sigma) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0.0, sigma);
  std::ifstream in(file);
  std::string header, line;
  std::getline(in, header);
  std::vector<std::string> columns;
  {
    std::stringstream ss(header);
    for (std::string c; std::getline(ss, c, ',');) columns.push_back(c);
  }
  const size_t phase = std::find(columns.begin(), columns.end(), "phase") - columns.begin();
  std::string out = header + "\n";
  std::set<std::string> written;
  while (std::getline(in, line)) {
    // An ok row's message is empty, so none of its columns holds a comma.
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, ',');) f.push_back(c);
    if (f.size() <= phase || f[9] != "ok") {
      out += line + "\n";
      continue;
    }
    std::string key = f[0];
    for (int i = 1; i < 9; ++i) key += "," + f[i];
    if (!written.insert(key).second) continue;  // recorded re-timings: replaced by fresh ones
    for (const char* p : {"search", "retime", "retime", "retime"}) {
      f[10] = std::to_string(mean.at(key) * std::exp(noise(rng)));
      f[phase] = p;
      std::string row = f[0];
      for (size_t i = 1; i < f.size(); ++i) row += "," + f[i];
      out += row + "\n";
    }
  }
  return out;
}

// RecordedKey -> problem key -> the fastest mean.
std::map<std::string, double> FastestPerProblem(const std::map<std::string, double>& mean) {
  std::map<std::string, double> best;
  for (const auto& [key, us] : mean) {
    const std::string problem = key.substr(0, key.rfind(','));
    if (!best.count(problem) || us < best[problem]) best[problem] = us;
  }
  return best;
}

// Real landscapes, simulated noise: how often does a strategy pick a variant more than 3%
// slower than the true best (its mean over the recording)? 1.5% per measurement is what two
// runs on the H200 differ by (docs/perf-notes.md). Exhaustive does so for about 0.5% of
// problems; budgeted, which measures a quarter as much, must stay under 2% (1.2% with the
// residency factor and four follower measurements; 3.1% without them, on the first five).
TEST(Tuner, BudgetedRarelyMissesByMoreThan3PercentUnderMeasurementNoise) {
  int64_t misses = 0, problems = 0, measured = 0, exhaustive_measured = 0;
  for (const char* name : {"h200-2026-11-30-trials.csv", "h200-2026-11-30-trials-v2.csv",
                           "h200-2026-11-30-trials-v2-run2.csv", "h200-2026-11-30-trials-v2-run3.csv",
                           "h200-2026-11-30-trials-v2-run4.csv", "h200-2026-11-30-trials-v2-run5.csv"}) {
    const std::string file = std::string(FLASHTUNE_SOURCE_DIR) + "/bench/data/" + name;
    const std::map<std::string, double> mean = MeanRecordedTimes(file);
    const std::map<std::string, double> best = FastestPerProblem(mean);
    for (uint32_t seed = 1; seed <= 10; ++seed) {
      const std::string text = WithNoise(file, mean, seed, 0.015);
      if (seed == 1) exhaustive_measured += TuneReplayed(text, "exhaustive", TempDir("noisy") + "/e.db").measured * 10;
      const TuneSummary summary = TuneReplayed(text, "budgeted", TempDir("noisy") + "/b.db");
      measured += summary.measured;
      for (const ProblemSummary& p : summary.problems) {
        misses += mean.at(RecordedKey(p.problem, p.winner_uri)) > best.at(ProblemKey(p.problem)) * 1.03;
        ++problems;
      }
    }
  }
  std::printf("[ budgeted ] with 1.5%% noise: %lld of %lld winners more than 3%% slower than the best; "
              "%lld of %lld measurements\n", (long long)misses, (long long)problems, (long long)measured,
              (long long)exhaustive_measured);
  EXPECT_LE(misses * 100, problems * 2) << misses << " of " << problems;
  EXPECT_LE(measured * 4, exhaustive_measured) << measured << " of " << exhaustive_measured << " measurements";
}

// Tuning twice with fresh noise (1.5% per measurement, two recordings, five pairs of runs):
// how often are the two winners' true times more than 2% apart? Re-timing near-ties up to three
// rounds keeps it under 3.5% of problems (one round: 4.4%).
TEST(Tuner, TuningTwiceRarelyDisagreesByMoreThan2PercentUnderMeasurementNoise) {
  int64_t apart = 0, problems = 0;
  for (const char* name : {"h200-2026-11-30-trials-v2.csv", "h200-2026-11-30-trials-v2-run2.csv"}) {
    const std::string file = std::string(FLASHTUNE_SOURCE_DIR) + "/bench/data/" + name;
    const std::map<std::string, double> mean = MeanRecordedTimes(file);
    for (uint32_t pair = 0; pair < 5; ++pair) {
      const TuneSummary first =
          TuneReplayed(WithNoise(file, mean, 100 + 2 * pair, 0.015), "exhaustive", TempDir("twice") + "/1.db");
      const TuneSummary second =
          TuneReplayed(WithNoise(file, mean, 101 + 2 * pair, 0.015), "exhaustive", TempDir("twice") + "/2.db");
      ASSERT_EQ(first.problems.size(), second.problems.size());
      for (size_t i = 0; i < first.problems.size(); ++i) {
        const double a = mean.at(RecordedKey(first.problems[i].problem, first.problems[i].winner_uri));
        const double b = mean.at(RecordedKey(second.problems[i].problem, second.problems[i].winner_uri));
        apart += std::max(a, b) > std::min(a, b) * 1.02;
        ++problems;
      }
    }
  }
  std::printf("[ twice ] with 1.5%% noise: %lld of %lld problems with winners more than 2%% apart\n",
              (long long)apart, (long long)problems);
  EXPECT_LE(apart * 1000, problems * 35) << apart << " of " << problems;
}

}  // namespace
}  // namespace flashtune
