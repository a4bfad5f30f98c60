// Search strategies and budgets; see include/flashtune/tuner.h.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>

#include "flashtune/tuner.h"

namespace flashtune {

double CostModelScore(const Problem& p, const Variant& v) {
  // Registers per thread the template needs, estimated: the O and S accumulators of the warp's
  // 16-row MMA tiles, Q's fragments when it keeps them in registers, and ~64 for addressing and
  // softmax state. Past 255 the kernel spills, which costs more than any tile choice gains.
  const int rows_per_warp = v.block_m / v.warps;
  const int m_tiles = std::max(1, rows_per_warp / 16);
  const int q_regs = m_tiles * v.head_dim <= 128 ? m_tiles * v.head_dim / 4 : 0;
  const int regs = m_tiles * (v.head_dim / 8) * 4 + m_tiles * (v.block_n / 8) * 4 + q_regs + 64;
  double score = regs > 255 ? 2.0 + (regs - 255) / 64.0 : 0.0;
  // More rows per warp reuse each K/V fragment read from shared memory for more MMAs; longer
  // K/V steps amortise the per-step softmax bookkeeping and barriers.
  score -= 0.5 * std::log2(rows_per_warp / 16.0);
  score -= 0.25 * std::log2(v.block_n / 32.0);
  if (v.stages == 1) score += 0.3;  // no prefetch: loads are exposed
  // Short query sequences leave SMs idle with 128-row tiles.
  if (p.seqlen_q * p.batch * p.heads_q < 128LL * 132 * 2 && v.block_m == 128) score += 0.25;
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
  // The model's factors: B_r, B_c, warps, stages, and the warps an SM holds at once, which no
  // parameter decides alone (4 more registers can cost a CTA per SM).
  static constexpr int kFactors = 5;
  explicit Budgeted(double fraction) : fraction_(fraction) {}
  std::string name() const override { return "budgeted"; }
  Status Search(SearchContext& ctx) override {
    const std::vector<Variant> prior = ctx.PriorRanking();
    if (!prior.empty()) return FollowPrior(ctx, prior);
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
        const int values[kFactors] = {r.variant.block_m, r.variant.block_n, r.variant.warps, r.variant.stages,
                                      ctx.ResidentWarpsPerSm(r.variant)};
        for (int k = 0; k < kFactors; ++k) {
          if (values[k] == 0) continue;  // residency unknown
          auto& e = sums[{k, values[k]}];
          e.first += lt;
          ++e.second;
        }
        if (!best || r.measurement.median_us < best->measurement.median_us) best = &r;
      }
      const Variant* next = &pending.front();  // nothing ok yet: the model's order
      const bool refine = spent >= own - own / 3;
      // The polish alternates between the neighbours of the best and those of the best with the
      // other B_r when that one is close (within 5%): which B_r wins turns on the parallelism of
      // the shape, and its best stage count is found only by looking there.
      const CandidateResult* other_rows = best ? BestWithOtherBlockM(ctx, *best, 1.05) : nullptr;
      const CandidateResult* anchor = (refine && other_rows && (spent - (own - own / 3)) % 2 == 1) ? other_rows : best;
      if (best) {
        const double mean = total / n;
        double best_pred = 1e30, best_steps = 1e30;
        for (const Variant& v : pending) {  // pending is in cost order: first minimum wins ties
          const int values[kFactors] = {v.block_m, v.block_n, v.warps, v.stages, ctx.ResidentWarpsPerSm(v)};
          double pred = 0;
          for (int k = 0; k < kFactors; ++k) {
            if (values[k] == 0) continue;
            auto it = sums.find({k, values[k]});
            pred += it == sums.end() ? -kOptimism : it->second.first / it->second.second - mean;
          }
          double steps = Steps(anchor->variant, v);
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
  // The fastest ok result whose B_r differs from `best`'s, when within `within` times its time.
  static const CandidateResult* BestWithOtherBlockM(const SearchContext& ctx, const CandidateResult& best,
                                                    double within) {
    const CandidateResult* other = nullptr;
    for (const auto& r : ctx.results())
      if (r.ok() && r.measurement.median_us > 0 && r.variant.block_m != best.variant.block_m &&
          (!other || r.measurement.median_us < other->measurement.median_us))
        other = &r;
    return other && other->measurement.median_us <= within * best.measurement.median_us ? other : nullptr;
  }

  // The class has been tuned at other sizes: its best variants there are measured first.
  Status FollowPrior(SearchContext& ctx, const std::vector<Variant>& prior) {
    const int64_t own = ctx.per_problem_budget() >= 0
                            ? ctx.per_problem_budget()
                            : std::max<int64_t>(kFollowerMinimum,
                                                int64_t(std::ceil(kPriorFraction * double(ctx.space_size()))));
    int64_t spent = 0;
    std::vector<Variant> ranked;
    for (const Variant& v : prior)
      if (std::find(ctx.unmeasured().begin(), ctx.unmeasured().end(), v) != ctx.unmeasured().end()) ranked.push_back(v);
    // The prior's two best first (winners of one class are often near-ties between stage counts
    // or B_c 32/64 at d64, whose order flips with the length and with noise), then its best
    // variant for each B_r and each B_c not yet covered: which tile wins moves with the sequence
    // length (parallelism against per-block efficiency), and a prior learnt at other sizes must
    // not lock one in. Then, for each B_c the prior never measured at all, the cost model's pick
    // with it: exploration, so a value the first problem's search skipped still gets a chance.
    std::vector<Variant> order;
    auto add_if_new = [&order](const Variant& v) {
      if (std::find(order.begin(), order.end(), v) == order.end()) order.push_back(v);
    };
    auto covers = [](const std::vector<Variant>& vs, auto field, int value) {
      return std::any_of(vs.begin(), vs.end(), [&](const Variant& o) { return o.*field == value; });
    };
    for (size_t i = 0; i < ranked.size() && i < 2; ++i) order.push_back(ranked[i]);
    for (const Variant& v : ranked)
      if (!covers(order, &Variant::block_m, v.block_m)) add_if_new(v);
    for (const Variant& v : ranked)
      if (!covers(order, &Variant::block_n, v.block_n)) add_if_new(v);
    const std::vector<Variant> by_cost = RankByCost(ctx.problem(), ctx.unmeasured());
    for (const Variant& v : by_cost)
      if (!covers(prior, &Variant::block_n, v.block_n) && !covers(order, &Variant::block_n, v.block_n)) add_if_new(v);
    for (const Variant& v : ranked) add_if_new(v);
    // Candidates the prior problems never measured come after, in cost-model order.
    for (const Variant& v : by_cost) add_if_new(v);
    for (const Variant& v : order) {
      if (spent >= own || ctx.budget_left() == 0) break;
      ++spent;
      auto r = ctx.Measure(v);
      if (!r.ok() && r.status().code() != Code::kOutOfResources) return r.status();
    }
    return Status::Ok();
  }

  static constexpr double kPriorFraction = 0.05;
  static constexpr int64_t kFollowerMinimum = 4;
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
