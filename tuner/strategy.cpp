// Search strategies and budgets; see include/flashtune/tuner.h.
#include <algorithm>
#include <charconv>
#include <cmath>
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

// One parameter changed by one step (block_m, block_n, warps, stages).
bool Neighbours(const Variant& a, const Variant& b) {
  auto step = [](int x, int y) { return x == y ? 0 : (x == 2 * y || y == 2 * x) ? 1 : 2; };
  int d = step(a.block_m, b.block_m) + step(a.block_n, b.block_n) + step(a.warps, b.warps) +
          (a.stages == b.stages ? 0 : std::abs(a.stages - b.stages) == 1 ? 1 : 2);
  return d == 1;
}

class Budgeted final : public Strategy {
 public:
  explicit Budgeted(double fraction) : fraction_(fraction) {}
  std::string name() const override { return "budgeted"; }
  Status Search(SearchContext& ctx) override {
    const int64_t own = ctx.per_problem_budget() >= 0
                            ? ctx.per_problem_budget()
                            : std::max<int64_t>(4, int64_t(std::ceil(fraction_ * double(ctx.space_size()))));
    int64_t spent = 0;
    std::vector<Variant> pending = RankByCost(ctx.problem(), ctx.unmeasured());
    auto allowed = [&] { return spent < own && ctx.budget_left() != 0 && !pending.empty(); };
    auto measure = [&](const Variant& v) -> Status {
      pending.erase(std::find(pending.begin(), pending.end(), v));
      ++spent;
      auto r = ctx.Measure(v);
      if (!r.ok() && r.status().code() != Code::kOutOfResources) return r.status();
      return Status::Ok();
    };
    // Seed: the cost model's top picks (a third of the budget, at least 2).
    const int64_t seeds = std::max<int64_t>(2, own / 3);
    while (allowed() && spent < seeds) FT_RETURN_IF_ERROR(measure(pending.front()));
    // Local search: the best-ranked untried neighbour of the fastest ok results, best first.
    while (allowed()) {
      std::vector<CandidateResult> ok;
      for (const auto& r : ctx.results())
        if (r.ok()) ok.push_back(r);
      std::sort(ok.begin(), ok.end(), [](const CandidateResult& a, const CandidateResult& b) {
        return a.measurement.median_us < b.measurement.median_us;
      });
      const Variant* next = nullptr;
      for (const auto& best : ok) {
        for (const Variant& v : pending)
          if (Neighbours(best.variant, v)) {
            next = &v;
            break;
          }
        if (next) break;
      }
      if (!next) next = &pending.front();  // no neighbour left: fall back to the model's order
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
