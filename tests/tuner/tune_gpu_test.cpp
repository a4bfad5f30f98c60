// A small tune end to end on the GPU, with a planted variant that faults (illegal address):
// the fault is recorded as a trial with its status and message, the worker restarts, and the
// remaining candidates are measured and a correct winner is stored.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>

#include "flashtune/database.h"
#include "flashtune/gpu_measurer.h"
#include "flashtune/source.h"
#include "flashtune/space.h"
#include "flashtune/tuner.h"
#include "generator/families/decode_fwd.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_cli.h"

namespace flashtune {
namespace {

// Same name and parameter block size as the real kernel, but it writes to address 8.
std::string FaultingKernel(const std::string& name) {
  return "struct Params { char bytes[" + std::to_string(sizeof(long long) * 20) + "]; };\n"
         "extern \"C\" __global__ void " + name + "(const Params p) {\n"
         "  if (threadIdx.x == 0) *reinterpret_cast<volatile int*>(8) = p.bytes[0];\n"
         "}\n";
}

// The source of `twin` (the same variant but for its causal flag) under `named`'s kernel names:
// it computes the other mask fast, so only the output checks can catch it.
std::string TwinSource(const Variant& named, bool twin_causal) {
  Variant twin = named;
  twin.causal = twin_causal;
  auto source = GenerateSource(twin);
  EXPECT_TRUE(source.ok()) << source.status().ToString();
  if (!source.ok()) return "";
  std::string text = source->text;
  for (size_t at; (at = text.find(twin.Uri())) != std::string::npos;) text.replace(at, twin.Uri().size(), named.Uri());
  return text;
}

// Each candidate's search-trial status in the database at `db_path`, by variant URI; empty
// (with a test failure) when the database or the problem cannot be read.
std::map<std::string, std::string> SearchStatuses(const std::string& db_path, const Problem& problem) {
  std::map<std::string, std::string> status_of;
  auto db = Database::Open(db_path);
  EXPECT_TRUE(db.ok()) << db.status().ToString();
  if (!db.ok()) return status_of;
  auto problem_id = (*db)->FindProblem(problem);
  EXPECT_TRUE(problem_id.ok()) << problem_id.status().ToString();
  if (!problem_id.ok()) return status_of;
  auto trials = (*db)->TrialsForProblem(*problem_id);
  EXPECT_TRUE(trials.ok()) << trials.status().ToString();
  if (!trials.ok()) return status_of;
  for (const TrialRow& t : *trials)
    if (t.trial.phase == "search") status_of[t.variant_uri] = t.status_name;
  return status_of;
}

// Tunes `problem` over exactly `candidates` with `measurers` into a fresh database, expecting it
// tuned; *winner_uri gets the winner. Returns each candidate's search-trial status by URI.
std::map<std::string, std::string> TuneAndReadStatuses(const Problem& problem, const std::vector<Variant>& candidates,
                                                       std::vector<std::unique_ptr<Measurer>> measurers,
                                                       std::string* winner_uri) {
  flashtune::testing::TempDir dir;
  const std::string db_path = dir.path() + "/t.db";
  TuneOptions options;
  options.db_path = db_path;
  options.problems = {problem};
  options.enumerate = [&](const Problem&, const DeviceRecord&) -> Result<std::vector<Variant>> { return candidates; };
  auto summary = Tune(options, std::move(measurers));
  EXPECT_TRUE(summary.ok()) << summary.status().ToString();
  if (!summary.ok()) return {};
  EXPECT_EQ(summary->problems.size(), 1u);
  if (summary->problems.size() != 1u) return {};
  EXPECT_EQ(summary->problems[0].outcome, ProblemOutcome::kTuned) << summary->problems[0].message;
  *winner_uri = summary->problems[0].winner_uri;
  return SearchStatuses(db_path, problem);
}

// The GPU measurers for device 0, each URI in `planted` compiled from the source given with it
// instead of its generated one. Without $FLASHTUNE_WORKER the worker is the test's CLI where
// there is one (GpuTestCli: on a GPU machine's pack the measurer's default, the build tree's
// CLI, is absent, and it would fork this process, which CUDA does not survive once initialised).
Result<std::vector<std::unique_ptr<Measurer>>> PlantedMeasurers(std::map<std::string, std::string> planted) {
  GpuMeasurerOptions options;
  options.source_overrides = std::move(planted);
  if (const char* env = std::getenv("FLASHTUNE_WORKER"); env == nullptr || *env == '\0')
    if (const std::string cli = testing::GpuTestCli(); ::access(cli.c_str(), X_OK) == 0) options.worker_executable = cli;
  return MakeGpuMeasurers({0}, options);
}

// Whether `status` (from PlantedMeasurers) says this machine has no GPU; the test then skips. A
// worker forked after this process initialised CUDA says kNoDriver too, on a machine that has
// one: that is a failure of the test's setup, not a reason to skip.
bool NoGpu(const Status& status) {
  return (status.code() == Code::kNoDriver || status.code() == Code::kNoDevice) &&
         status.message().find("forked from the tuning process") == std::string::npos;
}

// Whether there is a GPU is asked of the worker itself: where it is forked (no CLI to exec), no
// CUDA call may happen in this process before it starts (CUDA does not survive fork()).
TEST(TuneGpu, PlantedFaultIsRecordedAndTheRunGoesOn) {
  const Problem problem{DType::kBF16, 64, false, 2, 1000, 1000, 4, 4};
  // The families that serve this prefill shape (the class's space starts with decode_fwd's).
  auto space = EnumerateSpaceFor(problem);
  ASSERT_TRUE(space.ok());
  std::vector<Variant> candidates(space->begin(), space->begin() + std::min<size_t>(5, space->size()));
  const Variant planted = candidates[1];  // neither first (trusted default) nor last

  auto measurers = PlantedMeasurers({{planted.Uri(), FaultingKernel(planted.Uri())}});
  if (NoGpu(measurers.status())) GTEST_SKIP() << "no GPU to run on: " << measurers.status().ToString();
  ASSERT_TRUE(measurers.ok()) << measurers.status().ToString();

  std::string winner;
  std::map<std::string, std::string> status_of = TuneAndReadStatuses(problem, candidates, std::move(*measurers), &winner);
  EXPECT_NE(winner, planted.Uri());
  EXPECT_EQ(status_of.size(), candidates.size()) << "every candidate has a trial";
  EXPECT_EQ(status_of[planted.Uri()], "fault");
  for (const Variant& v : candidates) {
    if (!(v == planted)) {
      EXPECT_EQ(status_of[v.Uri()], "ok") << v.Uri();
    }
  }
}

// The interleaved re-timing answers each finalist with its own time: a finalist's time there is
// close to its time measured alone, the fastest and slowest of a few candidates keep their order
// and ratio, and a finalist listed twice reads the same both times.
TEST(TuneGpu, AnInterleavedRetimingGivesEachFinalistItsOwnTime) {
  const Problem problem{DType::kBF16, 64, false, 2, 1000, 1000, 4, 4};
  auto space = EnumerateSpaceFor(problem);
  ASSERT_TRUE(space.ok());
  std::vector<Variant> candidates(space->begin(), space->begin() + std::min<size_t>(6, space->size()));
  auto measurers = PlantedMeasurers({});
  if (NoGpu(measurers.status())) GTEST_SKIP() << "no GPU to run on: " << measurers.status().ToString();
  ASSERT_TRUE(measurers.ok()) << measurers.status().ToString();
  Measurer& m = *measurers->front();
  std::vector<double> alone;
  for (const Variant& v : candidates) {
    auto r = m.Measure(problem, v);
    ASSERT_TRUE(r.ok() && r->status.ok()) << v.Uri() << ": " << (r.ok() ? r->status : r.status()).ToString();
    alone.push_back(r->median_us);
  }
  const size_t fast = size_t(std::min_element(alone.begin(), alone.end()) - alone.begin());
  const size_t slow = size_t(std::max_element(alone.begin(), alone.end()) - alone.begin());
  auto again = m.Remeasure(problem, {candidates[slow], candidates[fast], candidates[slow]});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ASSERT_EQ(again->size(), 3u);
  for (const Measurement& r : *again) ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_NEAR((*again)[2].median_us / (*again)[0].median_us, 1.0, 0.1);
  EXPECT_NEAR((*again)[0].median_us / alone[slow], 1.0, 0.3) << candidates[slow].Uri();
  EXPECT_NEAR((*again)[1].median_us / alone[fast], 1.0, 0.3) << candidates[fast].Uri();
  const double ratio_alone = alone[slow] / alone[fast], ratio_again = (*again)[0].median_us / (*again)[1].median_us;
  if (ratio_alone > 1.3) {
    EXPECT_GT(ratio_again, 1.0);
    EXPECT_NEAR(ratio_again / ratio_alone, 1.0, 0.25);
  }
}

// On sm_90a, hopper_fwd variants are verified like fa2_fwd's: one planted hopper_fwd variant
// computes the wrong thing fast (the causal kernel's code under the non-causal variant's name)
// and another faults; both are recorded with their status and neither wins.
TEST(TuneGpu, PlantedWrongAndFaultingHopperVariantsNeverWin) {
  const Problem problem{DType::kBF16, 128, false, 2, 1000, 1000, 4, 4};
  SpaceOptions sm90a;
  sm90a.families = {"hopper_fwd"};
  auto hopper = EnumerateSpace(ClassOf(problem), sm90a);
  ASSERT_TRUE(hopper.ok());
  ASSERT_GE(hopper->size(), 3u);
  sm90a.families = {"fa2_fwd"};
  auto fa2 = EnumerateSpace(ClassOf(problem), sm90a);
  ASSERT_TRUE(fa2.ok());
  std::vector<Variant> candidates = {fa2->front(), (*hopper)[0], (*hopper)[1], (*hopper)[2]};
  const Variant wrong = (*hopper)[1], faulting = (*hopper)[2];

  auto measurers = PlantedMeasurers({{wrong.Uri(), TwinSource(wrong, /*twin_causal=*/true)},
                                     {faulting.Uri(), FaultingKernel(faulting.Uri())}});
  if (NoGpu(measurers.status())) GTEST_SKIP() << "no GPU to run on: " << measurers.status().ToString();
  ASSERT_TRUE(measurers.ok()) << measurers.status().ToString();
  if ((*measurers)[0]->Device().cc_major != 9) GTEST_SKIP() << "hopper_fwd needs an sm_90a GPU";

  std::string winner;
  std::map<std::string, std::string> status_of = TuneAndReadStatuses(problem, candidates, std::move(*measurers), &winner);
  EXPECT_NE(winner, wrong.Uri());
  EXPECT_NE(winner, faulting.Uri());
  EXPECT_EQ(status_of[wrong.Uri()], "wrong_result");
  EXPECT_EQ(status_of[faulting.Uri()], "fault");
  EXPECT_EQ(status_of[candidates[0].Uri()], "ok");
  EXPECT_EQ(status_of[candidates[1].Uri()], "ok");
}

// Backward candidates go through the same engine: each is checked (dq, dk, dv against float64
// on ragged shapes and against the class default on the timed shape) and timed; a planted
// variant that computes the non-causal gradients under a causal variant's name is recorded as
// wrong_result and never wins.
TEST(TuneGpu, BackwardCandidatesAreVerifiedAndTimed) {
  const Problem problem{DType::kBF16, 64, true, 2, 1000, 1000, 4, 4, Operation::kBackward};
  auto space = EnumerateSpaceFor(problem, SpaceOptions{});
  ASSERT_TRUE(space.ok()) << space.status().ToString();
  ASSERT_GE(space->size(), 3u);
  const Variant trusted = DefaultVariant(ClassOf(problem));
  std::vector<Variant> candidates = {trusted};
  for (const Variant& v : *space)
    if (!(v == trusted) && candidates.size() < 3) candidates.push_back(v);
  const Variant wrong = candidates[2];

  auto measurers = PlantedMeasurers({{wrong.Uri(), TwinSource(wrong, /*twin_causal=*/false)}});
  if (NoGpu(measurers.status())) GTEST_SKIP() << "no GPU to run on: " << measurers.status().ToString();
  ASSERT_TRUE(measurers.ok()) << measurers.status().ToString();

  std::string winner;
  std::map<std::string, std::string> status_of = TuneAndReadStatuses(problem, candidates, std::move(*measurers), &winner);
  EXPECT_NE(winner, wrong.Uri());
  EXPECT_NE(winner.find("_bwd_"), std::string::npos) << winner;  // fa2_bwd or, on sm_90a, hopper_bwd
  EXPECT_EQ(status_of[wrong.Uri()], "wrong_result");
  EXPECT_EQ(status_of[candidates[0].Uri()], "ok");
  EXPECT_EQ(status_of[candidates[1].Uri()], "ok");
}

// A paged problem is verified and timed on a page pool (shuffled 16-key pages): every candidate
// that reads its pages right passes against the float64 reference on paged cases, a planted
// variant that masks the other way (the causal kernel under a non-causal name: wrong from the
// second of 4 query rows) is recorded as wrong_result, and the winner is stored for the paged
// problem's own bucket.
TEST(TuneGpu, PagedDecodeIsVerifiedAndTimedOnPages) {
  Problem problem{DType::kBF16, 128, false, 3, 4, 1000, 8, 2};
  problem.layout = Layout::kPaged;
  const std::vector<Variant> candidates = {DecodeVariant(DType::kBF16, 128, false, 64, 1, 4, 3, 2, /*paged=*/true),
                                           DecodeVariant(DType::kBF16, 128, false, 32, 1, 2, 2, 4, /*paged=*/true),
                                           DecodeVariant(DType::kBF16, 128, false, 128, 1, 4, 2, 2, /*paged=*/true)};
  const Variant wrong = candidates[2];
  auto measurers = PlantedMeasurers({{wrong.Uri(), TwinSource(wrong, /*twin_causal=*/true)}});
  if (NoGpu(measurers.status())) GTEST_SKIP() << "no GPU to run on: " << measurers.status().ToString();
  ASSERT_TRUE(measurers.ok()) << measurers.status().ToString();

  std::string winner;
  std::map<std::string, std::string> status_of = TuneAndReadStatuses(problem, candidates, std::move(*measurers), &winner);
  EXPECT_NE(winner, wrong.Uri());
  EXPECT_EQ(status_of[wrong.Uri()], "wrong_result");
  EXPECT_EQ(status_of[candidates[0].Uri()], "ok");
  EXPECT_EQ(status_of[candidates[1].Uri()], "ok");
}

}  // namespace
}  // namespace flashtune
