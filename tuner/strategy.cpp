// Search strategies and budgets; see include/flashtune/tuner.h.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>

#include "flashtune/tuner.h"

namespace flashtune {

double CostModelScore(const Problem& p, const Variant& v) {
  // FA-2's own forward tiles (H100): d <= 64 128x128 w4; d <= 128 128x64 w4; larger 64x64 w4.
  // Distance from them in log2 steps, plus mild preferences for 2 stages and 4 warps.
  int bm = 128, bn = p.head_dim <= 64 ? 128 : (p.head_dim <= 128 ? 64 : 64);
  if (p.head_dim > 128) bm = 64;
  double score = std::abs(std::log2(double(v.block_m) / bm)) + std::abs(std::log2(double(v.block_n) / bn));
  score += 0.5 * std::abs(std::log2(v.warps / 4.0));
  score += 0.3 * std::abs(v.stages - 2);
  // Short sequences waste a large query tile: prefer 64-row tiles when Nq is small.
  if (p.seqlen_q <= 512 && v.block_m == 128) score += 0.25;
  return score;
}

namespace {

std::vector<Variant> RankByCost(const Problem& p, std::vector<Variant> vs) {
  std::stable_sort(vs.begin(), vs.end(), [&](const Variant& a, const Variant& b) {
    return CostModelScore(p, a) < CostModelScore(p, b);
  });
  return vs;
}

class Exhaustive final : public Strategy {
 public:
  std::string name() const override { return "exhaustive"; }
  Status Search(SearchContext& ctx) override {
    for (const Variant& v : RankByCost(ctx.problem(), ctx.unmeasured())) {
      if (ctx.budget_left() == 0) break;
      auto r = ctx.Measure(v);
      if (!r.ok()) return r.status().code() == Code::kOutOfResources ? Status::Ok() : r.status();
    }
    return Status::Ok();
  }
};

// Steps between two variants: log2 ratio of tile sizes and warps, plus the stage difference.
double Steps(const Variant& a, const Variant& b) {
  return std::abs(std::log2(double(a.block_m) / b.block_m)) + std::abs(std::log2(double(a.block_n) / b.block_n)) +
         std::abs(std::log2(double(a.warps) / b.warps)) + std::abs(a.stages - b.stages);
}

class Budgeted final : public Strategy {
 public:
  static constexpr double kOptimism = 0.05;  // assumed gain of an untried parameter value (5%)
  explicit Budgeted(double fraction) : fraction_(fraction) {}
  std::string name() const override { return "budgeted"; }
  Status Search(SearchContext& ctx) override {
    const int64_t own = ctx.per_problem_budget() >= 0
                            ? ctx.per_problem_budget()
                            : std::max<int64_t>(4, int64_t(std::ceil(fraction_ * double(ctx.space_size()))));
    int64_t spent = 0;
    std::vector<Variant> pending = RankByCost(ctx.problem(), ctx.unmeasured());
    auto allowed = [&] { return spent < own && ctx.budget_left() != 0 && !pending.empty(); };
    auto measure = [&](Variant v) -> Status {  // by value: erasing from pending must not move it
      pending.erase(std::find(pending.begin(), pending.end(), v));
      ++spent;
      auto r = ctx.Measure(v);
      if (!r.ok() && r.status().code() != Code::kOutOfResources) return r.status();
      return Status::Ok();
    };
    // Seed: the cost model's top picks (a third of the budget, at least 2).
    const int64_t seeds = std::max<int64_t>(2, own / 3);
    while (allowed() && spent < seeds) FT_RETURN_IF_ERROR(measure(pending.front()));
    // Model-guided search: an additive model of log(time) with one effect per parameter value
    // (mean over ok results having that value), optimistic for values not tried yet so each
    // parameter's untried values get explored. Measure the pending candidate it predicts fastest;
    // ties go to the closest to the best result, then to the cost model. The last third of the
    // budget measures the closest neighbours of the best instead (a local polish).
    while (allowed()) {
      std::map<std::pair<int, int>, std::pair<double, int>> sums;  // (param, value) -> (sum log t, n)
      double total = 0;
      int n = 0;
      const CandidateResult* best = nullptr;
      for (const auto& r : ctx.results()) {
        if (!r.ok() || !(r.measurement.median_us > 0)) continue;
        double lt = std::log(r.measurement.median_us);
        total += lt;
        ++n;
        const int values[4] = {r.variant.block_m, r.variant.block_n, r.variant.warps, r.variant.stages};
        for (int k = 0; k < 4; ++k) {
          auto& e = sums[{k, values[k]}];
          e.first += lt;
          ++e.second;
        }
        if (!best || r.measurement.median_us < best->measurement.median_us) best = &r;
      }
      const Variant* next = &pending.front();  // nothing ok yet: the model's order
      const bool refine = spent >= own - own / 3;
      if (best) {
        const double mean = total / n;
        double best_pred = 1e30, best_steps = 1e30;
        for (const Variant& v : pending) {  // pending is in cost order: first minimum wins ties
          const int values[4] = {v.block_m, v.block_n, v.warps, v.stages};
          double pred = 0;
          for (int k = 0; k < 4; ++k) {
            auto it = sums.find({k, values[k]});
            pred += it == sums.end() ? -kOptimism : it->second.first / it->second.second - mean;
          }
          double steps = Steps(best->variant, v);
          if (refine) pred = steps;  // the last third of the budget polishes around the best
          if (pred < best_pred - 1e-12 || (std::abs(pred - best_pred) <= 1e-12 && steps < best_steps)) {
            best_pred = pred;
            best_steps = steps;
            next = &v;
          }
        }
      }
      Variant chosen = *next;
      FT_RETURN_IF_ERROR(measure(chosen));
    }
    return Status::Ok();
  }

 private:
  double fraction_;
};

}  // namespace

std::unique_ptr<Strategy> MakeExhaustiveStrategy() { return std::make_unique<Exhaustive>(); }
std::unique_ptr<Strategy> MakeBudgetedStrategy(double default_fraction) {
  return std::make_unique<Budgeted>(default_fraction);
}

Result<std::unique_ptr<Strategy>> MakeStrategy(std::string_view name) {
  if (name == "exhaustive") return MakeExhaustiveStrategy();
  if (name == "budgeted") return MakeBudgetedStrategy();
  return Status(Code::kInvalidArgument, "--strategy '" + std::string(name) + "': allowed exhaustive, budgeted");
}

Result<Budget> ParseBudget(std::string_view text, std::string_view what) {
  Budget b;
  if (text.empty() || text == "none") return b;
  auto bad = [&] {
    return Status(Code::kInvalidArgument, std::string(what) + " '" + std::string(text) +
                                              "': allowed N (measurements), P% (of the space), Ns or Nm (time), none");
  };
  char unit = text.back();
  std::string_view num = text;
  if (unit == '%' || unit == 's' || unit == 'm') num.remove_suffix(1);
  double value = 0;
  auto r = std::from_chars(num.data(), num.data() + num.size(), value);
  if (r.ec != std::errc() || r.ptr != num.data() + num.size() || !(value > 0)) return bad();
  if (unit == '%') {
    if (value > 100) return bad();
    b.fraction = value / 100;
  } else if (unit == 's') {
    b.seconds = value;
  } else if (unit == 'm') {
    b.seconds = value * 60;
  } else {
    if (value != std::floor(value)) return bad();
    b.measurements = int64_t(value);
  }
  return b;
}

}  // namespace flashtune
