// flashtune/strategy.h — how the tuning engine chooses which candidates of a problem to measure:
// a Strategy searches through a SearchContext (the engine's view of one problem's search:
// candidates, results so far, budget, what other problems of the class taught).
//
// Thread safety: a Strategy and its SearchContext are used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "flashtune/export.h"
#include "flashtune/measurer.h"

FLASHTUNE_API_BEGIN
namespace flashtune {

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
  // Candidates ranked by how they did on the problems of the same class (operation, dtype, head
  // dim, causal; decode and prefill apart, GQA groups together: problem_set.h's BucketDistance)
  // already tuned on this device and toolchain: geometric mean of time / best time.
  // Empty when no such problem exists. Winners of one class tend to agree across lengths.
  virtual std::vector<Variant> PriorRanking() const { return {}; }
  // Variants measured on this very problem in the other 16-bit element type (bf16 for fp16 and
  // the reverse; every other field the same) already tuned on this device and toolchain, best
  // first, as variants of this problem's type. Both types run the same tiles at the same rate,
  // so the tile that wins one is the first to try for the other. Empty when that problem has no
  // measurement.
  virtual std::vector<Variant> SiblingRanking() const { return {}; }
  // The variant the runtime launches for this problem when no tuning database serves it
  // (DefaultVariantFor on this device), when it is one of the candidates; nullopt otherwise. A
  // tune whose winner is slower than what the user had without tuning has made things worse,
  // so a search that measures only part of the space measures this one.
  virtual std::optional<Variant> UntunedPlan() const { return std::nullopt; }
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
  // How many rounds of re-timing the finalists of `problem` deserve at most
  // (TuneOptions::retime_rounds overrides it): a search that measured everything can afford to
  // settle near-ties, a budgeted one spends its time on the search instead.
  virtual int RetimeRounds(const Problem& problem) const = 0;
  // Whether it measures every candidate of `problem`: then a rerun completes a search that a
  // budget cut short, rather than keeping that search's winner.
  virtual bool MeasuresEverything(const Problem& /*problem*/) const { return false; }
};

// Measures every candidate, most promising first (so a budget cut keeps the likely best).
std::unique_ptr<Strategy> MakeExhaustiveStrategy();
// Spends most of its budget on the first problem of each class and little on the rest:
// - with no tuned problem of the class yet: ranks by a cost model (FA-2's known-good tiles per
//   head dim, warps, stages), measures the cost model's best for each query tile of each family
//   and its top few, then follows an additive model of the
//   measured times — one effect per B_r, B_c, warps, stages and per resident warps per SM
//   (SearchContext::ResidentWarpsPerSm, from the compiled registers) — and finally the
//   neighbours of the best, alternating with those of the best with the other B_r when it is
//   within 5% (default budget: 45% of the space);
// - either way, first the two best of SiblingRanking() (the same problem in the other 16-bit
//   type): a search that starts from another class's results can miss a tile that class never
//   measured (H100, f16 d64 causal N 2k-16k never timed hopper_fwd 192x128, bf16's winner at
//   each, and ran 2-13% slower than bf16 there; bench/data/h100-2026-12-05-s31, call 7), then
//   SearchContext::UntunedPlan(), within the budget (unless the prior ranks its family wholly
//   behind another): the winner is never one measured slower than the untuned plan (H100, decode
//   B64 x 2k: a search that skipped it crowned a tile 2.4% slower; bench/data/h100-2026-12-06-s38);
// - otherwise: measures the two best of PriorRanking() (nearest sizes weigh most), the prior's
//   best tile with each other value of its switches (stages, warps, scheduler), the prior's best
//   for each B_r and B_c not yet covered, B_c values never measured in the class, and spends
//   its last two measurements on the nearest neighbours of the best so far (default budget: 14%
//   of the space, at least 4; the switch flips from 6 measurements, the polish from 8). A
//   family the prior ranks wholly behind another gets none of it, and what is left is measured
//   whole when it is at most 8 candidates (hopper_fwd at d192 and d256); from 8, another query
//   tile's best within 5% of the best also gets its nearest neighbour measured.
// Over the default problem set this measures about a quarter of what exhaustive does.
// Replaying six H200 recordings (bench/data) with fresh 1.5% lognormal noise on every
// measurement (10 draws each), about 1% of its winners are more than 3% slower than the true
// best (exhaustive: about 0.5%); on the current kernels' bf16 d64 causal grid every winner is
// the exhaustive one (docs/perf-notes.md, issue 17's closing round).
std::unique_ptr<Strategy> MakeBudgetedStrategy(double default_fraction = 0.45);
// Exhaustive for the forward prefill of head dim 128 with one K/V head per query head (what
// most models run: every candidate measured); budgeted, problem by problem, for everything else:
// the other head dims (64, 96, 192, 256, ...), GQA groups (they follow their MHA shape's
// ranking), decode buckets and the backward pass (whose first problem per class measures a
// quarter of its space, not 45%: a backward measurement costs 3-5 forward ones). So the default
// problem set stays within ten minutes cold on one H200 (docs/performance.md). The CLI's default
// strategy.
std::unique_ptr<Strategy> MakeAutoStrategy();
// "auto" | "exhaustive" | "budgeted"; kInvalidArgument naming the allowed values.
Result<std::unique_ptr<Strategy>> MakeStrategy(std::string_view name);

// The cost model's score for a variant on a problem: lower is more promising.
double CostModelScore(const Problem& problem, const Variant& variant);

}  // namespace flashtune
FLASHTUNE_API_END
