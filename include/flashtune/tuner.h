// flashtune/tuner.h — the tuning engine: for every problem of a problem set, measure candidate
// variants on one device, record every trial, re-time the finalists, and store the winner.
//
// The engine is GPU-agnostic: a Measurer (flashtune/measurer.h, one per device) compiles,
// launches, verifies and times one variant; a Strategy (flashtune/strategy.h) decides which
// candidates to measure (Exhaustive, or Budgeted: cost-model ranking + local search) and how many
// re-timing rounds its finalists get. Per problem the engine's steps are named in
// tuner/problem_tuner.h. Resume: problems with a winner for (device, toolchain, bucket) are skipped, and
// variants with a recorded search trial are not measured again (their recorded result counts);
// `retune` redoes both. Winner rule: only ok candidates; the top K are re-timed in shuffled
// order; a challenger replaces the incumbent (the previous winner, else the first-pass leader)
// only when faster by more than the noise: max(min_noise, IQR/median of either).
//
// Multi-GPU: Tune() takes one Measurer per device and runs one thread per device, each with its
// own Database connection on one file. Devices of one model (name, cc, SM count, driver) share
// the problem list (a work queue); devices of different models each tune the whole list.
//
// Thread safety: Tune() is re-entrant. A Measurer is used by one thread at a time. ProgressSink
// calls are serialised by the engine.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "flashtune/database.h"
#include "flashtune/export.h"
#include "flashtune/measurer.h"
#include "flashtune/problem_set.h"
#include "flashtune/status.h"
#include "flashtune/strategy.h"
#include "flashtune/variant.h"

FLASHTUNE_API_BEGIN
namespace flashtune {

// A measurement budget: a count, or a fraction of the space (per problem only), or seconds.
struct Budget {
  int64_t measurements = -1;  // -1 = unlimited
  double fraction = -1;       // of the problem's space; -1 = unset
  double seconds = -1;        // wall time; -1 = unlimited
  bool unlimited() const { return measurements < 0 && fraction < 0 && seconds < 0; }
};
// "100" (measurements), "25%" (of the space), "90s" / "10m" (wall time), "" or "none".
// kInvalidArgument naming `what` and the allowed forms.
Result<Budget> ParseBudget(std::string_view text, std::string_view what);

enum class ProblemOutcome { kTuned, kSkipped, kNoWinner, kError };
std::string_view ProblemOutcomeName(ProblemOutcome outcome);

struct ProblemSummary {
  Problem problem;
  std::string bucket;
  std::string device;
  ProblemOutcome outcome = ProblemOutcome::kNoWinner;
  std::string winner_uri;
  double median_us = 0;
  double tflops = 0;
  int64_t space = 0;
  int64_t measured = 0;  // measurements this run (search + retime)
  int64_t resumed = 0;   // recorded trials reused
  int64_t failed = 0;    // measured candidates whose status was not ok
  double seconds = 0;
  std::string message;   // why, for kNoWinner / kError
  // The runtime's plan for the problem without a database (SearchContext::UntunedPlan) and its
  // time in this run: its re-timing when it was a finalist, else its search measurement; empty
  // and 0 when it was not measured. untuned_us / median_us is what tuning bought.
  std::string untuned_uri;
  double untuned_us = 0;
};

struct TuneSummary {
  std::vector<ProblemSummary> problems;
  double seconds = 0;
  int64_t measured = 0;
  int64_t failed = 0;
  int64_t winners = 0;
  int64_t skipped = 0;
  int64_t errors = 0;
};

// Progress events. Calls are serialised by the engine (never concurrent).
class ProgressSink {
 public:
  virtual ~ProgressSink() = default;
  virtual void OnStart(size_t problems, size_t devices) { (void)problems; (void)devices; }
  // problem_index is 0-based over the whole run.
  virtual void OnProblemStart(size_t problem_index, const Problem& problem, const std::string& device,
                              size_t candidates) { (void)problem_index; (void)problem; (void)device; (void)candidates; }
  virtual void OnCandidate(size_t problem_index, size_t done, size_t total, const CandidateResult& result,
                           double best_us) { (void)problem_index; (void)done; (void)total; (void)result; (void)best_us; }
  // One re-timing round of the finalists (1-based `round` of at most `rounds`): their new
  // measurements, in the order the round timed them. The winner is decided after the last round.
  virtual void OnRetime(size_t problem_index, int round, int rounds, const std::vector<CandidateResult>& timed) {
    (void)problem_index; (void)round; (void)rounds; (void)timed;
  }
  virtual void OnProblemEnd(size_t problem_index, const ProblemSummary& summary) { (void)problem_index; (void)summary; }
  virtual void OnFinish(const TuneSummary& summary) { (void)summary; }
};
// A progress bar with ETA redrawn in place when `tty`, one log line per event otherwise;
// OnFinish prints FormatSummaryTable.
std::unique_ptr<ProgressSink> MakeConsoleProgress(std::FILE* out, bool tty);
std::string FormatSummaryTable(const TuneSummary& summary);

struct TuneOptions {
  std::string db_path;                 // one connection per device thread is opened on it
  std::vector<Problem> problems;
  EnumerateFn enumerate;               // required
  std::string strategy = "exhaustive";  // or "budgeted", "auto" (MakeStrategy, strategy.h)
  Budget per_problem;
  Budget total;                        // shared by all devices
  bool retune = false;
  int retime_top_k = 3;                // 0 or 1: no re-timing
  double retime_reach = 0.05;          // beyond the first two, only finalists this close to the leader
  int retime_rounds = 0;               // most re-timing rounds (a finalist's time is its median
                                       // round; they stop once the leader is 3% ahead); 0: the
                                       // strategy's RetimeRounds()
  double min_noise = 0.01;             // 1%
  uint64_t seed = 0x5eed;              // shuffles the re-timing order
  ProgressSink* progress = nullptr;    // may be null
  // After tuning, compile each problem's winner for every measurer's device arch and store the
  // cubin in the database (unless stored already), so the runtime never needs NVRTC for it.
  // Off for replayed measurements, whose devices are recordings.
  bool store_winner_cubins = false;
};

// Checks the options a caller sets by hand (strategy name, retime_rounds 0-10). OK, or
// kInvalidArgument naming the option (as its CLI flag) and the allowed values.
Status ValidateTuneOptions(const TuneOptions& options);

// Tunes options.problems on every measurer's device. OK with the summary (candidate failures are
// data, not errors; a problem whose measurer failed is kError in its summary), or
// kInvalidArgument for bad options, or the database's error when it cannot be opened.
Result<TuneSummary> Tune(const TuneOptions& options, std::vector<std::unique_ptr<Measurer>> measurers);

// What Tune would do, without measuring: per problem, whether it would be skipped (winner present
// for this device/toolchain) and the candidates it would compile and measure (minus recorded
// ones unless retune). Opens the database read-only when it exists.
struct DryRunProblem {
  Problem problem;
  std::string bucket;
  bool skipped = false;
  std::vector<Variant> to_measure;
  size_t recorded = 0;
};
Result<std::vector<DryRunProblem>> PlanTuning(const TuneOptions& options, const DeviceRecord& device,
                                              const ToolchainInfo& toolchain);

}  // namespace flashtune
FLASHTUNE_API_END
