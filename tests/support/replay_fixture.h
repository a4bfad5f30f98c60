// Test support: recorded-timing files for the replay measurer, from a smooth synthetic
// performance landscape (so search strategies have something realistic to find).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "flashtune/replay_measurer.h"
#include "flashtune/tuner.h"

namespace flashtune::testing {

struct RecordedRow {
  Problem problem;
  Variant variant;
  std::string status = "ok";
  double median_us = 0;
  double iqr_us = 0;
  std::string phase = "search";
  std::string message;  // why a failed row failed ("" = the replay's default text)
};

// Every fa2_fwd variant of `problem`, timed by a landscape whose optimum is not
// the cost model's first pick; `seed` varies the optimum and a ±0.5% noise.
std::vector<RecordedRow> SyntheticRows(const Problem& problem, uint32_t seed);
// The replay CSV for `rows` (header + one line per row).
std::string ReplayCsv(const std::vector<RecordedRow>& rows);
// Writes `text` to a fresh file under the test temp dir; returns its path.
std::string WriteTempFile(const std::string& name, const std::string& text);
// A fresh, empty directory for one test.
std::string TempDir(const std::string& name);
// Small problems for tests: bf16/f16 × d64/d128, N 512 and 2048, causal both.
std::vector<Problem> SmallProblemSet();
// TuneOptions for `problems` into the database at `db`, their candidates the variants
// `space` recorded.
TuneOptions ReplayTuneOptions(const std::string& db, std::vector<Problem> problems, ReplayMeasurer* space);
// The whole file at `path` ("" when it cannot be read).
std::string ReadTextFile(const std::string& path);
// Runs a shell command; returns its exit status (-1 if it did not exit normally).
int RunShell(const std::string& command);

}  // namespace flashtune::testing
