// tests/runtime/tuned_db.h — a tuning database filled by the replay runner, for runtime tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "flashtune/database.h"
#include "flashtune/replay_measurer.h"
#include "flashtune/tuner.h"
#include "tests/support/replay_fixture.h"

namespace flashtune::testing {

// The GPU the replayed timings pretend to come from.
inline DeviceRecord TunedDevice() { return DeviceRecord{"NVIDIA H200", "GPU-runtime-test-0", 9, 0, 132, "13.0"}; }

// bf16, d128, non-causal, Nq = Nk in {512, 2048}, hidden 2048, tokens 16384 (B 32 / 8, Hq 16).
inline std::vector<Problem> TunedProblems() {
  std::vector<Problem> out;
  for (const Problem& p : SmallProblemSet())
    if (p.dtype == DType::kBF16 && p.head_dim == 128 && !p.causal) out.push_back(p);
  return out;
}

// Synthetic replay rows for TunedProblems().
inline std::vector<RecordedRow> TunedRows() {
  std::vector<RecordedRow> rows;
  const auto problems = TunedProblems();
  for (size_t i = 0; i < problems.size(); ++i) {
    auto r = SyntheticRows(problems[i], static_cast<uint32_t>(i + 7));
    rows.insert(rows.end(), r.begin(), r.end());
  }
  return rows;
}

// Tunes `problems` from the replayed `rows` into the database at `path`, as `device` with this
// build's toolchain so the runtime's lookups match.
inline void TuneRowsInto(const std::string& path, const std::vector<Problem>& problems,
                         const std::vector<RecordedRow>& rows, const DeviceRecord& device = TunedDevice()) {
  ReplayMeasurer::Options o;
  o.device = device;
  o.toolchain = CurrentToolchain();
  auto space = ReplayMeasurer::FromText(ReplayCsv(rows), "rows", o);
  ASSERT_TRUE(space.ok()) << space.status().ToString();
  auto measurer = ReplayMeasurer::FromText(ReplayCsv(rows), "rows", o);
  std::vector<std::unique_ptr<Measurer>> measurers;
  measurers.push_back(std::move(*measurer));
  TuneOptions t;
  t.db_path = path;
  t.problems = problems;
  ReplayMeasurer* s = space->get();
  t.enumerate = [s](const Problem& p, const DeviceRecord&) -> Result<std::vector<Variant>> { return s->Variants(p); };
  auto summary = Tune(t, std::move(measurers));
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->winners, static_cast<int64_t>(problems.size()));
}

// Tunes `problems` from synthetic replay rows (seeds from `seed`) into a fresh database at
// `path`, as `device` (TuneRowsInto).
inline void TuneSyntheticInto(const std::string& path, const std::vector<Problem>& problems, uint32_t seed = 7,
                              const DeviceRecord& device = TunedDevice()) {
  std::vector<RecordedRow> rows;
  for (size_t i = 0; i < problems.size(); ++i) {
    auto r = SyntheticRows(problems[i], static_cast<uint32_t>(i + seed));
    rows.insert(rows.end(), r.begin(), r.end());
  }
  TuneRowsInto(path, problems, rows, device);
}

// TunedProblems() tuned from TunedRows() into a fresh database at `dir`/t.db. Returns the path.
inline std::string MakeTunedDatabase(const std::string& dir) {
  TuneSyntheticInto(dir + "/t.db", TunedProblems());
  return dir + "/t.db";
}

}  // namespace flashtune::testing
