// A small tune end to end on the GPU, with a planted variant that faults (illegal address):
// the fault is recorded as a trial with its status and message, the worker restarts, and the
// remaining candidates are measured and a correct winner is stored.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "flashtune/database.h"
#include "flashtune/gpu_measurer.h"
#include "flashtune/space.h"
#include "flashtune/tuner.h"
#include "tests/support/temp_dir.h"

namespace flashtune {
namespace {

// Same name and parameter block size as the real kernel, but it writes to address 8.
std::string FaultingKernel(const std::string& name) {
  return "struct Params { char bytes[" + std::to_string(sizeof(long long) * 20) + "]; };\n"
         "extern \"C\" __global__ void " + name + "(const Params p) {\n"
         "  if (threadIdx.x == 0) *reinterpret_cast<volatile int*>(8) = p.bytes[0];\n"
         "}\n";
}

// No CUDA call may happen in this process before the measurers fork their worker (CUDA does
// not survive fork()), so whether there is a GPU is asked of the worker itself.
TEST(TuneGpu, PlantedFaultIsRecordedAndTheRunGoesOn) {
  const Problem problem{DType::kBF16, 64, false, 2, 1000, 1000, 4, 4};
  auto space = EnumerateSpace(ClassOf(problem));
  ASSERT_TRUE(space.ok());
  std::vector<Variant> candidates(space->begin(), space->begin() + std::min<size_t>(5, space->size()));
  const Variant planted = candidates[1];  // neither first (trusted default) nor last

  GpuMeasurerOptions gpu_options;
  gpu_options.source_overrides[planted.Uri()] = FaultingKernel(planted.Uri());
  auto measurers = MakeGpuMeasurers({0}, gpu_options);
  if (!measurers.ok() && (measurers.status().code() == Code::kNoDriver || measurers.status().code() == Code::kNoDevice))
    GTEST_SKIP() << "no GPU to run on: " << measurers.status().ToString();
  ASSERT_TRUE(measurers.ok()) << measurers.status().ToString();

  flashtune::testing::TempDir dir;
  const std::string db_path = dir.path() + "/t.db";
  TuneOptions options;
  options.db_path = db_path;
  options.problems = {problem};
  options.enumerate = [&](const Problem&) -> Result<std::vector<Variant>> { return candidates; };
  auto summary = Tune(options, std::move(*measurers));
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  ASSERT_EQ(summary->problems.size(), 1u);
  EXPECT_EQ(summary->problems[0].outcome, ProblemOutcome::kTuned) << summary->problems[0].message;
  EXPECT_NE(summary->problems[0].winner_uri, planted.Uri());

  auto db = Database::Open(db_path);
  ASSERT_TRUE(db.ok());
  auto problem_id = (*db)->FindProblem(problem);
  ASSERT_TRUE(problem_id.ok());
  auto trials = (*db)->TrialsForProblem(*problem_id);
  ASSERT_TRUE(trials.ok());
  std::map<std::string, std::string> status_of;
  for (const TrialRow& t : *trials)
    if (t.trial.phase == "search") status_of[t.variant_uri] = t.status_name;
  EXPECT_EQ(status_of.size(), candidates.size()) << "every candidate has a trial";
  EXPECT_EQ(status_of[planted.Uri()], "fault");
  for (const Variant& v : candidates) {
    if (!(v == planted)) {
      EXPECT_EQ(status_of[v.Uri()], "ok") << v.Uri();
    }
  }
}

}  // namespace
}  // namespace flashtune
