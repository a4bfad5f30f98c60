// flashtune/tuner.h — the tuning engine: for every problem of a problem set, measure candidate
// variants on one device, record every trial, re-time the finalists, and store the winner.
//
// The engine is GPU-agnostic: a Measurer (one per device) compiles/launches/verifies/times one
// variant; the GPU one lives elsewhere, ReplayMeasurer here feeds recorded timings. A Strategy
// decides which candidates to measure (Exhaustive, or Budgeted: cost-model ranking + local
// search). Resume: problems with a winner for (device, toolchain, bucket) are skipped, and
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
#include "flashtune/problem_set.h"
#include "flashtune/status.h"
#include "flashtune/toolchain.h"  // CurrentToolchain, which measurers report
#include "flashtune/variant.h"

FLASHTUNE_API_BEGIN
namespace flashtune {

// One candidate's outcome. status is the candidate's result (ok, compile_error,
// out_of_resources, wrong_result, fault, timeout ...); timings are meaningful when ok.
struct Measurement {
  Status status;
  double median_us = 0;
  double iqr_us = 0;
  int reps = 0;
  int registers = 0;
  int smem_bytes = 0;
  int spill_bytes = 0;
  double compile_ms = 0;
  std::string source_hash;  // sha256 of the emitted source, "" when unknown
};

class Measurer {
 public:
  virtual ~Measurer() = default;
  virtual DeviceRecord Device() const = 0;
  virtual ToolchainInfo Toolchain() const = 0;
  // Compiles, verifies and times `variant` on `problem`. A failing candidate is an OK Result
  // whose Measurement.status says why; an error Result means the measurer itself cannot go on
  // (no driver, replay data missing), which stops this device's run.
  virtual Result<Measurement> Measure(const Problem& problem, const Variant& variant) = 0;
  // Re-times already verified candidates, in the given (shuffled) order; one Measurement each,
  // same order. The default calls Measure for each.
  virtual Result<std::vector<Measurement>> Remeasure(const Problem& problem, const std::vector<Variant>& variants);
  // Registers per thread of `variant`'s compiled kernel, compiling it (or reading the cubin
  // cache) without launching it: what a strategy needs to predict occupancy before measuring.
  // The compile error's status when it does not compile; kUnsupported (the default) when this
  // measurer cannot tell.
  virtual Result<int> CompiledRegisters(const Variant& variant);
  // A hint that `problem` comes next: the GPU measurer queues its class's compiles on its
  // background threads, so they are ready when its first candidate is. The default ignores it.
  virtual void Prefetch(const Problem& /*problem*/) {}
};

// What limits how many CTAs an SM holds at once (the CUDA occupancy rules).
struct SmLimits {
  int registers = 65536;            // per SM, allocated per warp in units of 256
  int64_t smem_bytes = 233472;      // per SM, for CTAs' shared memory
  int64_t smem_reserved_per_cta = 1024;
  int threads = 2048;
  int ctas = 32;
};
// The limits of compute capability major.minor (sm_80 … sm_120); unknown ones get the
// smallest of the known (100 KB shared memory, 1536 threads, 16 CTAs).
SmLimits SmLimitsFor(int cc_major, int cc_minor);
// CTAs of `threads` threads using `registers` per thread and `smem_bytes` of shared memory
// that one SM holds at once; 0 when one does not fit.
int ResidentCtasPerSm(const SmLimits& limits, int registers, int threads, int64_t smem_bytes);

// The candidates of a problem (the search space). The GPU build passes EnumerateSpace.
using EnumerateFn = std::function<Result<std::vector<Variant>>(const Problem&)>;


struct CandidateResult {
  Variant variant;
  Measurement measurement;
  bool ok() const { return measurement.status.ok(); }
};

// What a Strategy sees of one problem's search.
class SearchContext {
 public:
  virtual ~SearchContext() = default;
  virtual const Problem& problem() const = 0;
  // Candidates not measured yet (resumed ones are already in results()).
  virtual const std::vector<Variant>& unmeasured() const = 0;
  // Every measurement so far, resumed ones included.
  virtual const std::vector<CandidateResult>& results() const = 0;
  virtual size_t space_size() const = 0;
  // Measurements still allowed by the per-problem and total budgets; -1 = unlimited.
  virtual int64_t budget_left() const = 0;
  // The per-problem budget in measurements, -1 when none was given (strategies pick their own).
  virtual int64_t per_problem_budget() const = 0;
  // Candidates ranked by how they did on the problems of the same class (dtype, head dim,
  // causal) already tuned on this device and toolchain: geometric mean of time / best time.
  // Empty when no such problem exists. Winners of one class tend to agree across lengths.
  virtual std::vector<Variant> PriorRanking() const { return {}; }
  // Warps of `variant` one SM of this device holds at once (ResidentCtasPerSm × warps), from
  // its compiled registers and its shared memory; 0 when unknown (the measurer cannot tell
  // before measuring, or the variant does not compile). May compile the variant.
  virtual int ResidentWarpsPerSm(const Variant& /*variant*/) { return 0; }
  // Measures and records one unmeasured candidate. kOutOfResources when the budget is spent,
  // kInvalidArgument when not an unmeasured candidate, the Measurer's error otherwise.
  virtual Result<CandidateResult> Measure(const Variant& variant) = 0;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;
  // Measures the candidates it chooses; OK when the search ended (space or budget exhausted).
  virtual Status Search(SearchContext& context) = 0;
};

// Measures every candidate, most promising first (so a budget cut keeps the likely best).
std::unique_ptr<Strategy> MakeExhaustiveStrategy();
// Spends most of its budget on the first problem of each class and little on the rest:
// - with no tuned problem of the class yet: ranks by a cost model (FA-2's known-good tiles per
//   head dim, warps, stages), measures the top few, then follows an additive model of the
//   measured times — one effect per B_r, B_c, warps, stages and per resident warps per SM
//   (SearchContext::ResidentWarpsPerSm, from the compiled registers) — and finally the
//   neighbours of the best, alternating with those of the best with the other B_r when it is
//   within 5% (default budget: 45% of the space);
// - otherwise: measures the two best of PriorRanking() (nearest sizes weigh most), then the
//   prior's best for each B_r and B_c not yet covered, then B_c values never measured in the
//   class (default budget: 5% of the space, at least 4).
// Over the default problem set this measures under a quarter of what exhaustive does (17% of
// its kernel time). Replaying six H200 recordings (bench/data) with fresh 1.5% lognormal
// noise on every measurement (10 draws each), 1.2% of its winners are more than 3% slower
// than the true best (exhaustive: about 0.5%).
std::unique_ptr<Strategy> MakeBudgetedStrategy(double default_fraction = 0.45);
// Exhaustive for head dims 64 and 128 (what most models run: every candidate measured, as
// before), budgeted for the others (96, 192, 256, ...), so that the default problem set, all
// five head dims, stays within ten minutes cold on one H200 (docs/performance.md). The CLI's
// default strategy.
std::unique_ptr<Strategy> MakeAutoStrategy();
// Whether `strategy` measures every candidate of `problem`: "exhaustive" always, "auto" for its
// exhaustive head dims. Such a search re-times its finalists up to 3 rounds (else 1) and a
// resumed run completes a search a budget cut short.
bool SearchesExhaustively(std::string_view strategy, const Problem& problem);
// "auto" | "exhaustive" | "budgeted"; kInvalidArgument naming the allowed values.
Result<std::unique_ptr<Strategy>> MakeStrategy(std::string_view name);

// The cost model's score for a variant on a problem: lower is more promising.
double CostModelScore(const Problem& problem, const Variant& variant);

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
  std::string strategy = "exhaustive";  // or "budgeted", "auto" (MakeStrategy)
  Budget per_problem;
  Budget total;                        // shared by all devices
  bool retune = false;
  int retime_top_k = 3;                // 0 or 1: no re-timing
  double retime_reach = 0.05;          // beyond the first two, only finalists this close to the leader
  int retime_rounds = 0;               // most re-timing rounds (a finalist's time is its median
                                       // round; they stop once the leader is 3% ahead); 0: 3 for
                                       // an exhaustive search (SearchesExhaustively), else 1
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

// Replay: a Measurer that answers from recorded rows (CSV with a header, or a JSON array of
// objects; both as written by Database::Export). Columns used: dtype, head_dim, causal, batch,
// seqlen_q, seqlen_k, heads_q, heads_kv, variant, status, median_us, iqr_us; optional reps,
// registers, smem_bytes, spill_bytes, compile_ms, message, source_hash, phase. The first row per
// (problem, variant) answers Measure; later rows (e.g. phase=retime) answer successive Remeasure
// calls, cycling. Unknown columns are ignored; errors name the line and column.
class ReplayMeasurer : public Measurer {
 public:
  struct Options {
    DeviceRecord device = {"replay", "replay-0", 9, 0, 132, "replay"};
    ToolchainInfo toolchain = {"replay", "replay", "replay"};
    int delay_ms = 0;  // sleep per measurement, to make runs observable (kill -9 tests)
  };
  static Result<std::unique_ptr<ReplayMeasurer>> FromFile(const std::string& path, Options options);
  // `source` names the text in errors.
  static Result<std::unique_ptr<ReplayMeasurer>> FromText(std::string_view text, std::string_view source,
                                                          Options options);

  DeviceRecord Device() const override { return options_.device; }
  ToolchainInfo Toolchain() const override { return options_.toolchain; }
  // kNotFound (error Result) when nothing was recorded for (problem, variant).
  Result<Measurement> Measure(const Problem& problem, const Variant& variant) override;
  Result<std::vector<Measurement>> Remeasure(const Problem& problem, const std::vector<Variant>& variants) override;
  // The registers recorded for `variant` (on any problem); kNotFound when none was.
  Result<int> CompiledRegisters(const Variant& variant) override;

  // The problems recorded, in first-seen order, and each one's recorded variants (the space).
  std::vector<Problem> Problems() const;
  std::vector<Variant> Variants(const Problem& problem) const;
  int64_t measure_calls() const { return measure_calls_; }

  struct Entry {
    Problem problem;
    Variant variant;
    std::vector<Measurement> rows;
    size_t next_retime = 1;
  };

 private:
  explicit ReplayMeasurer(Options options) : options_(std::move(options)) {}
  Entry* Find(const Problem& problem, const Variant& variant);
  Options options_;
  std::vector<Entry> entries_;
  int64_t measure_calls_ = 0;
};

}  // namespace flashtune
FLASHTUNE_API_END
