// Search strategies and budgets; see include/flashtune/tuner.h.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "flashtune/problem_set.h"
#include "flashtune/tuner.h"
#include "generator/family.h"

namespace flashtune {

double CostModelScore(const Problem& p, const Variant& v) {
  const Family* family = FindFamily(v.family);
  return family ? family->PriorScore(p, v) : 0.0;
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
  // With 1.5% noise, a second and third round for near-ties halve how often two runs pick
  // winners more than 2% apart (docs/perf-notes.md).
  int RetimeRounds(const Problem& /*problem*/) const override { return 3; }
  bool MeasuresEverything(const Problem& /*problem*/) const override { return true; }
  Status Search(SearchContext& ctx) override {
    for (const Variant& v : RankByCost(ctx.problem(), ctx.unmeasured())) {
      if (ctx.budget_left() == 0) break;
      auto r = ctx.Measure(v);
      if (!r.ok()) return r.status().code() == Code::kOutOfResources ? Status::Ok() : r.status();
    }
    return Status::Ok();
  }
};

// Steps between two variants: their family's distance; variants of different families are
// far apart (a polish around the best stays in its family).
double Steps(const Variant& a, const Variant& b) {
  if (a.family != b.family) return 1e6;
  const Family* family = FindFamily(a.family);
  return family ? family->Distance(a, b) : 1e6;
}

// The search model's factors of a variant: its family, each (family, parameter) value, and the
// warps an SM holds at once (0 = unknown, skipped).
struct Factor {
  std::string name;
  int value;
  bool operator<(const Factor& o) const { return std::tie(name, value) < std::tie(o.name, o.value); }
};
std::vector<Factor> FactorsOf(const Variant& v, int resident_warps) {
  std::vector<Factor> f;
  f.push_back({"family:" + v.family, 0});
  for (const VariantParam& p : v.params) f.push_back({v.family + "." + p.name, p.value});
  if (resident_warps != 0) f.push_back({"resident_warps", resident_warps});
  return f;
}
// The first parameter of every family is its query tile, the second its key tile (family.h).
int QueryTile(const Variant& v) { return v.params.empty() ? 0 : v.params[0].value; }
int KeyTile(const Variant& v) { return v.params.size() < 2 ? 0 : v.params[1].value; }

class Budgeted final : public Strategy {
 public:
  static constexpr double kOptimism = 0.05;  // assumed gain of an untried parameter value (5%)
  // The model's factors (FactorsOf): the family, each parameter, and the warps an SM holds at
  // once, which no parameter decides alone (4 more registers can cost a CTA per SM).
  explicit Budgeted(double fraction) : fraction_(fraction) {}
  std::string name() const override { return "budgeted"; }
  // Its time goes into the search; one round still checks the leader against its rival.
  int RetimeRounds(const Problem& /*problem*/) const override { return 1; }
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
      return MeasureCounted(ctx, v, &spent);
    };
    for (const Variant& v : SiblingBest(ctx))
      if (allowed()) FT_RETURN_IF_ERROR(measure(v));
    // The untuned plan (SearchContext::UntunedPlan): the cost model may rank it anywhere, and a
    // winner slower than it would make the tune a loss (decode B64 x 2k, H100: the budgeted
    // search never measured the untuned bn64 s3 tile, 2.4% faster than the one it crowned).
    if (auto untuned = ctx.UntunedPlan(); untuned && Unmeasured(ctx, *untuned) && allowed())
      FT_RETURN_IF_ERROR(measure(*untuned));
    // Seed: the cost model's best variant of each query tile of each family (which tile wins
    // turns on the shape's parallelism, and an additive model cannot reach a tile it never saw:
    // H200 bf16 d64 causal N 512 never timed hopper_fwd's 64-row tiles, 29% faster, when the
    // seeds were the cost model's top picks alone), then its top picks, a third of the budget
    // (at least 2) in all.
    std::vector<Variant> tiles;
    for (const Variant& v : pending)
      if (std::none_of(tiles.begin(), tiles.end(),
                       [&](const Variant& t) { return t.family == v.family && QueryTile(t) == QueryTile(v); }))
        tiles.push_back(v);
    for (const Variant& v : tiles)
      if (allowed()) FT_RETURN_IF_ERROR(measure(v));
    const int64_t seeds = std::max<int64_t>(2, own / 3);
    while (allowed() && spent < seeds) FT_RETURN_IF_ERROR(measure(pending.front()));
    // Model-guided search: an additive model of log(time) with one effect per parameter value
    // (mean over ok results having that value), optimistic for values not tried yet so each
    // parameter's untried values get explored. Measure the pending candidate it predicts fastest;
    // ties go to the closest to the best result, then to the cost model. The last third of the
    // budget measures the closest neighbours of the best instead (a local polish).
    while (allowed()) {
      std::map<Factor, std::pair<double, int>> sums;  // factor -> (sum log t, n)
      double total = 0;
      int n = 0;
      const CandidateResult* best = nullptr;
      for (const auto& r : ctx.results()) {
        if (!r.ok() || !(r.measurement.median_us > 0)) continue;
        double lt = std::log(r.measurement.median_us);
        total += lt;
        ++n;
        for (const Factor& f : FactorsOf(r.variant, ctx.ResidentWarpsPerSm(r.variant))) {
          auto& e = sums[f];
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
          double pred = 0;
          for (const Factor& f : FactorsOf(v, ctx.ResidentWarpsPerSm(v))) {
            auto it = sums.find(f);
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
  // Measures v and counts it against the budget; a variant out of resources is a result (recorded
  // by Measure), not a reason to stop the search.
  static Status MeasureCounted(SearchContext& ctx, const Variant& v, int64_t* spent) {
    ++*spent;
    auto r = ctx.Measure(v);
    if (!r.ok() && r.status().code() != Code::kOutOfResources) return r.status();
    return Status::Ok();
  }

  static bool Unmeasured(const SearchContext& ctx, const Variant& v) {
    return std::find(ctx.unmeasured().begin(), ctx.unmeasured().end(), v) != ctx.unmeasured().end();
  }

  // The two best of SiblingRanking() that are candidates here and not measured yet.
  static std::vector<Variant> SiblingBest(const SearchContext& ctx) {
    std::vector<Variant> out;
    for (const Variant& v : ctx.SiblingRanking()) {
      if (out.size() == kSiblings) break;
      if (Unmeasured(ctx, v)) out.push_back(v);
    }
    return out;
  }

  // The fastest ok result whose B_r differs from `best`'s, when within `within` times its time.
  static const CandidateResult* BestWithOtherBlockM(const SearchContext& ctx, const CandidateResult& best,
                                                    double within) {
    const CandidateResult* other = nullptr;
    for (const auto& r : ctx.results())
      if (r.ok() && r.measurement.median_us > 0 && QueryTile(r.variant) != QueryTile(best.variant) &&
          (!other || r.measurement.median_us < other->measurement.median_us))
        other = &r;
    return other && other->measurement.median_us <= within * best.measurement.median_us ? other : nullptr;
  }

  // The class has been tuned at other sizes: its best variants there are measured first.
  Status FollowPrior(SearchContext& ctx, const std::vector<Variant>& prior) {
    int64_t own = ctx.per_problem_budget() >= 0
                            ? ctx.per_problem_budget()
                            : std::max<int64_t>(kFollowerMinimum,
                                                int64_t(std::ceil(kPriorFraction * double(ctx.space_size()))));
    int64_t spent = 0;
    // A family that every earlier problem of the class ranked wholly behind another one gets
    // none of the budget: at d192 and d256 every fa2_fwd candidate is 2-3x slower than every
    // hopper_fwd one, and the followers' B_r and B_c probes of fa2_fwd took half of their four
    // measurements, leaving hopper_fwd's best tile unmeasured (H200, bf16 d192 causal N 8k: 19%
    // slower; bench/data/h200-2026-12-02-s17). A family that overlaps another in the ranking
    // keeps its probes (fa2_fwd at d64 is 1.4-1.6x behind, its best ahead of hopper_fwd's worst).
    const std::set<std::string> dominated = DominatedFamilies(prior);
    auto viable = [&dominated](const Variant& v) { return dominated.count(v.family) == 0; };
    std::vector<Variant> ranked;
    for (const Variant& v : prior)
      if (Unmeasured(ctx, v) && viable(v)) ranked.push_back(v);
    // When what is left is small (d192: 6 hopper_fwd candidates, d256: 4), all of it is measured:
    // its tiles trade places with the length (d192 causal: bn80 at N 4k, bn112 from N 8k).
    int64_t left = 0;
    for (const Variant& v : ctx.unmeasured()) left += viable(v);
    if (!dominated.empty() && left <= kWholeSpaceUpTo && ctx.per_problem_budget() < 0) own = std::max(own, left);
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
    auto covers = [](const std::vector<Variant>& vs, int (*field)(const Variant&), const Variant& v) {
      return std::any_of(vs.begin(), vs.end(),
                         [&](const Variant& o) { return o.family == v.family && field(o) == field(v); });
    };
    // The same problem's best in the other 16-bit type, the untuned plan (as in Search: a prior
    // learnt at other sizes may rank it low where it wins), then the prior's.
    for (const Variant& v : SiblingBest(ctx))
      if (viable(v)) add_if_new(v);
    if (auto untuned = ctx.UntunedPlan(); untuned && viable(*untuned) && Unmeasured(ctx, *untuned)) add_if_new(*untuned);
    for (size_t i = 0; i < ranked.size() && i < 2; ++i) add_if_new(ranked[i]);
    // The prior's best tile with each other value of its switches (stages, warps, the tile
    // scheduler: every parameter after the two tiles), best ranked first: a GQA group or another
    // length can move the winner to the persistent scheduler of the same tile (H200, d128 causal
    // GQA-8 N 4k: 5% faster), which the ranking learnt elsewhere puts far down.
    if (!ranked.empty() && own >= kFlipsFrom) {
      const Variant& lead = ranked[0];
      for (size_t i = 2; i < lead.params.size(); ++i)
        for (const Variant& v : ranked)
          if (v.family == lead.family && v.params.size() == lead.params.size() && QueryTile(v) == QueryTile(lead) &&
              KeyTile(v) == KeyTile(lead) && v.params[i].value != lead.params[i].value &&
              std::none_of(order.begin(), order.end(), [&](const Variant& o) {
                return o.family == v.family && o.params.size() > i && QueryTile(o) == QueryTile(v) &&
                       KeyTile(o) == KeyTile(v) && o.params[i].value == v.params[i].value;
              })) {
            add_if_new(v);
            break;
          }
    }
    for (const Variant& v : ranked)
      if (!covers(order, QueryTile, v)) add_if_new(v);
    for (const Variant& v : ranked)
      if (!covers(order, KeyTile, v)) add_if_new(v);
    std::vector<Variant> by_cost;
    for (const Variant& v : RankByCost(ctx.problem(), ctx.unmeasured()))
      if (viable(v)) by_cost.push_back(v);
    for (const Variant& v : by_cost)
      if (!covers(prior, KeyTile, v) && !covers(order, KeyTile, v)) add_if_new(v);
    for (const Variant& v : ranked) add_if_new(v);
    // Candidates the prior problems never measured come after, in cost-model order.
    for (const Variant& v : by_cost) add_if_new(v);
    // The last kFollowerPolish measurements go to the nearest unmeasured neighbours of the best
    // so far (Steps; ties in the order above): the best key tile drifts with the length (d128:
    // 128 keys at N 1k, 176-192 from N 2k on), one step at a time.
    const int64_t ordered = own >= kPolishFrom ? own - kFollowerPolish : own;
    for (const Variant& v : order) {
      if (spent >= ordered || ctx.budget_left() == 0) break;
      if (Unmeasured(ctx, v)) FT_RETURN_IF_ERROR(MeasureCounted(ctx, v, &spent));
    }
    while (spent < own && ctx.budget_left() != 0) {
      const CandidateResult* best = nullptr;
      for (const auto& r : ctx.results())
        if (r.ok() && r.measurement.median_us > 0 && (!best || r.measurement.median_us < best->measurement.median_us))
          best = &r;
      const Variant* next = nullptr;
      double next_steps = 1e30;
      for (const Variant& v : order)
        if (Unmeasured(ctx, v)) {
          const double steps = best ? Steps(best->variant, v) : 0;
          if (steps < next_steps - 1e-12) next_steps = steps, next = &v;
        }
      if (!next) break;
      const Variant chosen = *next;  // Measure erases it from the unmeasured list
      FT_RETURN_IF_ERROR(MeasureCounted(ctx, chosen, &spent));
    }
    // A query tile other than the best's that came within 5% of it gets its nearest neighbour
    // measured too, past the budget: where the winning tile changes with the length, the
    // probe of the other tile is the prior's best there, whose switches were learnt at other
    // lengths (H200, f16 d64 causal N 4k: the probe 192x128 p1 was 3.6% behind the 64-row
    // tile, its p0 5.5% ahead).
    if (own >= kPolishFrom) {
      std::vector<const CandidateResult*> rivals;  // the best result of each query tile
      const CandidateResult* best = nullptr;
      for (const auto& r : ctx.results()) {
        if (!r.ok() || !(r.measurement.median_us > 0)) continue;
        if (!best || r.measurement.median_us < best->measurement.median_us) best = &r;
        auto same_tile = [&](const CandidateResult* o) {
          return o->variant.family == r.variant.family && QueryTile(o->variant) == QueryTile(r.variant);
        };
        auto it = std::find_if(rivals.begin(), rivals.end(), same_tile);
        if (it == rivals.end()) rivals.push_back(&r);
        else if (r.measurement.median_us < (*it)->measurement.median_us) *it = &r;
      }
      std::vector<Variant> anchors;  // copied: measuring appends to the results
      for (const CandidateResult* r : rivals)
        if (best && r != best &&
            !(r->variant.family == best->variant.family && QueryTile(r->variant) == QueryTile(best->variant)) &&
            r->measurement.median_us <= kRivalWithin * best->measurement.median_us)
          anchors.push_back(r->variant);
      for (const Variant& anchor : anchors) {
        if (ctx.budget_left() == 0) break;
        const Variant* next = nullptr;
        double next_steps = 1e30;
        for (const Variant& v : order)
          if (Unmeasured(ctx, v)) {
            const double steps = Steps(anchor, v);
            if (steps < next_steps - 1e-12) next_steps = steps, next = &v;
          }
        if (!next || next_steps >= 1e6) continue;  // nothing of its family left
        const Variant chosen = *next;
        FT_RETURN_IF_ERROR(MeasureCounted(ctx, chosen, &spent));
      }
    }
    return Status::Ok();
  }

  // The families of `prior` (best first) whose best variant ranks behind the worst variant of
  // another family.
  static std::set<std::string> DominatedFamilies(const std::vector<Variant>& prior) {
    std::map<std::string, std::pair<size_t, size_t>> span;  // family -> (first, last) rank
    for (size_t i = 0; i < prior.size(); ++i) {
      auto [it, inserted] = span.try_emplace(prior[i].family, i, i);
      it->second.second = i;
    }
    std::set<std::string> out;
    for (const auto& [family, s] : span)
      for (const auto& [other, o] : span)
        if (other != family && o.second < s.first) out.insert(family);
    return out;
  }

  // A follower measures 14% of the space, at least 4: fa2_fwd's spaces and d96-d256 (22-28
  // candidates) keep the four measurements that sufficed there (two best, B_r and B_c probes);
  // the larger ones (d128 41, d64 59) add the switch flips from 6 measurements on and the polish
  // around the best from 8 (bench/data/h200-2026-12-01-online2: without them, d64 causal N
  // 8k-16k kept the 64-row tile, 11-14% slower). A d128 decode bucket (46 candidates, decode_fwd
  // alone) gets 7: the flips, no polish.
  static constexpr size_t kSiblings = 2;
  static constexpr double kPriorFraction = 0.14;
  static constexpr int64_t kFollowerMinimum = 4;
  static constexpr int64_t kFlipsFrom = 6;
  static constexpr int64_t kPolishFrom = 8;
  static constexpr int64_t kFollowerPolish = 2;
  // A follower's families left after dropping the dominated ones are measured whole up to this
  // many candidates (two more measurements at d192, none at d256).
  static constexpr int64_t kWholeSpaceUpTo = 8;
  // How close another query tile's best must come to the best for its neighbour to be measured.
  static constexpr double kRivalWithin = 1.05;
  double fraction_;
};

}  // namespace

std::unique_ptr<Strategy> MakeExhaustiveStrategy() { return std::make_unique<Exhaustive>(); }
std::unique_ptr<Strategy> MakeBudgetedStrategy(double default_fraction) {
  return std::make_unique<Budgeted>(default_fraction);
}

namespace {

// The calls most models make (Llama, Mistral, Qwen: d128 prefill), searched exhaustively under
// "auto". d64's space (59 candidates a problem on sm_90a), the GQA and decode buckets' (41 and 46
// at d128) and the backward pass's would take the default set past ten minutes.
bool AutoSearchesExhaustively(const Problem& p) {
  return p.head_dim == 128 && p.operation == Operation::kForward && p.heads_q == p.heads_kv &&
         Log2Ceil(p.seqlen_q) > kDecodeQueryBucket;
}

// Exhaustive or budgeted, problem by problem. Each keeps its own state.
class Auto final : public Strategy {
 public:
  std::string name() const override { return "auto"; }
  Status Search(SearchContext& ctx) override { return For(ctx.problem()).Search(ctx); }
  int RetimeRounds(const Problem& problem) const override { return For(problem).RetimeRounds(problem); }
  bool MeasuresEverything(const Problem& problem) const override { return For(problem).MeasuresEverything(problem); }

 private:
  Strategy& For(const Problem& problem) const {
    if (AutoSearchesExhaustively(problem)) return *exhaustive_;
    return problem.operation == Operation::kBackward ? *backward_ : *budgeted_;
  }
  std::unique_ptr<Strategy> exhaustive_ = MakeExhaustiveStrategy();
  std::unique_ptr<Strategy> budgeted_ = MakeBudgetedStrategy();
  std::unique_ptr<Strategy> backward_ = MakeBudgetedStrategy(0.25);
};

}  // namespace

std::unique_ptr<Strategy> MakeAutoStrategy() { return std::make_unique<Auto>(); }

Result<std::unique_ptr<Strategy>> MakeStrategy(std::string_view name) {
  if (name == "exhaustive") return MakeExhaustiveStrategy();
  if (name == "budgeted") return MakeBudgetedStrategy();
  if (name == "auto") return MakeAutoStrategy();
  return Status(Code::kInvalidArgument, "--strategy '" + std::string(name) + "': allowed auto, exhaustive, budgeted");
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
