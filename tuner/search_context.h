// tuner/search_context.h — the engine's side of one problem's search: the SearchContext a
// Strategy measures through (flashtune/strategy.h). It enforces the per-problem and total
// budgets, records every trial in the database, reports progress, ranks candidates by what the
// class's other problems taught (PriorRanking) and predicts occupancy from compiled registers.
//
// Thread safety: a ProblemSearch belongs to one device thread; EngineState is shared by all
// of a Tune() call's threads (its counters are atomic, progress calls take its mutex).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "flashtune/strategy.h"
#include "flashtune/tuner.h"

namespace flashtune {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since);
double Tflops(const Problem& p, double median_us);
// One measurement as the database's trial row; `phase` is "search" or "retime".
TrialRecord ToTrial(const Problem& p, const Variant& v, const Measurement& m, const char* phase, int64_t run_id);

// What every device's thread of one Tune() call shares.
struct EngineState {
  const TuneOptions* options;
  std::mutex mu;  // guards progress calls and summaries
  std::atomic<int64_t> total_spent{0};
  Clock::time_point start = Clock::now();
};

class ProblemSearch final : public SearchContext {
 public:
  ProblemSearch(EngineState& shared, Database& db, Measurer& measurer, int64_t device_id, int64_t toolchain_id,
                int64_t run_id, size_t index, const Problem& problem, std::vector<Variant> unmeasured,
                std::vector<CandidateResult> results, size_t space, std::optional<Variant> untuned,
                ProblemSummary& summary);

  const Problem& problem() const override { return problem_; }
  const std::vector<Variant>& unmeasured() const override { return unmeasured_; }
  const std::vector<CandidateResult>& results() const override { return results_; }
  size_t space_size() const override { return space_; }
  int64_t per_problem_budget() const override { return per_problem_; }

  int64_t budget_left() const override {
    const TuneOptions& o = *shared_.options;
    int64_t left = -1;
    auto cap = [&left](int64_t v) { left = left < 0 ? std::max<int64_t>(0, v) : std::min(left, std::max<int64_t>(0, v)); };
    if (per_problem_ >= 0) cap(per_problem_ - spent_);
    if (o.per_problem.seconds >= 0 && Seconds(start_) >= o.per_problem.seconds) cap(0);
    if (o.total.measurements >= 0) cap(o.total.measurements - shared_.total_spent.load());
    if (o.total.seconds >= 0 && Seconds(shared_.start) >= o.total.seconds) cap(0);
    return left;
  }

  Result<CandidateResult> Measure(const Variant& v) override;

  // Variants of this class measured on other problems, best first: each variant's mean of
  // log(time / that problem's best), weighted 2^-distance, where the distance counts the
  // octaves between the two problems' Nq, Nk and batch*heads. The nearest sizes dominate, so a
  // ranking learnt at N = 512 does not decide N = 16k once N = 8k has been tuned.
  std::vector<Variant> PriorRanking() const override;

  // This problem's search trials in the other 16-bit type, fastest first, retyped.
  std::vector<Variant> SiblingRanking() const override;

  std::optional<Variant> UntunedPlan() const override { return untuned_; }

  int ResidentWarpsPerSm(const Variant& v) override;

  void SeedBest() {
    for (const auto& r : results_)
      if (r.ok() && (best_us_ == 0 || r.measurement.median_us < best_us_)) best_us_ = r.measurement.median_us;
  }

 private:
  EngineState& shared_;
  Database& db_;
  Measurer& measurer_;
  const bool trace_ = std::getenv("FLASHTUNE_TRACE") != nullptr;  // phase times on stderr
  int64_t device_id_, toolchain_id_, run_id_;
  size_t index_;
  Problem problem_;
  std::vector<Variant> unmeasured_;
  std::vector<CandidateResult> results_;
  std::map<std::string, int> residency_;  // URI -> ResidentWarpsPerSm
  size_t space_;
  std::optional<Variant> untuned_;
  ProblemSummary& summary_;
  int64_t per_problem_ = -1;
  int64_t spent_ = 0;
  double best_us_ = 0;
  Clock::time_point start_;
};

}  // namespace flashtune
