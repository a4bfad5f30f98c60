// tuner/problem_tuner.h — the tuning engine's work on one problem on one device, in named steps:
//   1. Admit     validate the problem; skip it when a winner for its bucket exists on this GPU
//                model and toolchain (unless retune, or an exhaustive run still finds unmeasured
//                candidates: a budget-starved winner must not end a richer search);
//   2. Gather    enumerate the space; resume this device's recorded search trials;
//   3. Search    the Strategy measures through a ProblemSearch (tuner/search_context.h);
//   4. Finalists the passing leaders within reach, plus the incumbent;
//   5. Retime    the finalists again in shuffled rounds (as many as the strategy wants) until
//                the leader is clear of the noise;
//   6. Crown     a challenger displaces the incumbent only when faster by more than the noise;
//                the winner is stored.
// Candidate failures are data; only a failing measurer or database stops the device's run.
//
// Thread safety: one ProblemTuner per device thread.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "flashtune/strategy.h"
#include "flashtune/tuner.h"
#include "tuner/search_context.h"

namespace flashtune {

// Whether a strategy that measures every candidate of `p` (Strategy::MeasuresEverything) still
// finds candidates of its space that no GPU of this model measured with this toolchain (false
// for other strategies).
Result<bool> SearchIncomplete(Database& db, const TuneOptions& o, const Strategy& strategy, const Problem& p,
                              const DeviceRecord& device, int64_t toolchain_id);

class ProblemTuner {
 public:
  ProblemTuner(EngineState& shared, Database& db, Measurer& measurer, Strategy& strategy, int64_t device_id,
               int64_t toolchain_id, int64_t run_id)
      : shared_(shared), db_(db), measurer_(measurer), strategy_(strategy), device_id_(device_id),
        toolchain_id_(toolchain_id), run_id_(run_id) {}

  // Tunes `problem` (the run's `index`-th); fills `s`. An error only when the device's run cannot
  // go on. `next_class`, when given, is the next problem of another class: its compiles are
  // queued while this one measures.
  Status Tune(size_t index, const Problem& problem, const Problem* next_class, ProblemSummary& s);

 private:
  struct Work {
    size_t index = 0;
    Problem problem;
    int64_t problem_id = 0;
    std::optional<WinnerRow> existing;
    std::vector<Variant> unmeasured;
    std::vector<CandidateResult> results;
    size_t space_size = 0;
    std::optional<Variant> untuned;  // the runtime's plan without a database, when a candidate
  };
  // Each step returns false when the problem is finished (s says how), or an error for the run.
  Result<bool> Admit(Work& w, ProblemSummary& s);
  Result<bool> Gather(Work& w, ProblemSummary& s);
  Result<bool> Search(Work& w, ProblemSummary& s, std::vector<CandidateResult>* passing);
  std::vector<CandidateResult> Finalists(const std::vector<CandidateResult>& passing, size_t incumbent) const;
  Result<bool> Retime(const Work& w, ProblemSummary& s, std::vector<CandidateResult>* finalists);
  Status Crown(const Work& w, const Variant& incumbent, const std::vector<CandidateResult>& finalists,
               ProblemSummary& s);

  EngineState& shared_;
  Database& db_;
  Measurer& measurer_;
  Strategy& strategy_;
  int64_t device_id_, toolchain_id_, run_id_;
};

}  // namespace flashtune
