// The tuning engine; see include/flashtune/tuner.h.
// Over 600 lines for now: its split (per-problem tuner, occupancy, replay) comes with the
// kernel-family work in issue 12, which restructures this file.
#include "flashtune/tuner.h"
#include "generator/family.h"
#include "flashtune/arch.h"
#include "flashtune/compiler.h"
#include "flashtune/cubin_store.h"

#include <algorithm>
#include <set>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "flashtune/arch.h"
#include "flashtune/space.h"

namespace flashtune {

Result<std::vector<Measurement>> Measurer::Remeasure(const Problem& problem, const std::vector<Variant>& variants) {
  std::vector<Measurement> out;
  for (const Variant& v : variants) {
    auto m = Measure(problem, v);
    if (!m.ok()) return m.status();
    out.push_back(std::move(*m));
  }
  return out;
}

Result<int> Measurer::CompiledRegisters(const Variant& variant) {
  return Status(Code::kUnsupported, "this measurer cannot tell " + variant.Uri() + "'s registers before measuring");
}

SmLimits SmLimitsFor(int cc_major, int cc_minor) {
  // The arch table's row (arch.h); an unknown arch gets the smallest of every known limit.
  auto limits = [](const GpuArch& a) {
    return SmLimits{a.registers_per_sm, a.smem_per_sm, SmLimits{}.smem_reserved_per_cta, a.threads_per_sm, a.ctas_per_sm};
  };
  if (const GpuArch* a = FindGpuArch(cc_major, cc_minor)) return limits(*a);
  SmLimits l = limits(KnownGpuArchs().front());
  for (const GpuArch& a : KnownGpuArchs()) {
    const SmLimits k = limits(a);
    l = {std::min(l.registers, k.registers), std::min(l.smem_bytes, k.smem_bytes), l.smem_reserved_per_cta,
         std::min(l.threads, k.threads), std::min(l.ctas, k.ctas)};
  }
  return l;
}

int ResidentCtasPerSm(const SmLimits& limits, int registers, int threads, int64_t smem_bytes) {
  if (registers <= 0 || threads <= 0) return 0;
  const int warps = (threads + 31) / 32;
  const int regs_per_warp = (registers * 32 + 255) / 256 * 256;
  int ctas = std::min(limits.ctas, limits.threads / (warps * 32));
  ctas = std::min(ctas, limits.registers / regs_per_warp / warps);
  ctas = int(std::min<int64_t>(ctas, limits.smem_bytes / (smem_bytes + limits.smem_reserved_per_cta)));
  return std::max(ctas, 0);
}

std::string_view ProblemOutcomeName(ProblemOutcome o) {
  switch (o) {
    case ProblemOutcome::kTuned: return "tuned";
    case ProblemOutcome::kSkipped: return "skipped";
    case ProblemOutcome::kNoWinner: return "no_winner";
    case ProblemOutcome::kError: return "error";
  }
  return "unknown";
}

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

double Tflops(const Problem& p, double median_us) { return median_us > 0 ? p.Flops() / (median_us * 1e6) : 0; }

TrialRecord ToTrial(const Problem& p, const Variant& v, const Measurement& m, const char* phase, int64_t run_id) {
  TrialRecord t;
  t.problem = p;
  t.variant = v;
  t.source_hash = m.source_hash;
  t.status = m.status.code();
  t.message = m.status.ok() ? "" : m.status.ToString();
  t.median_us = m.median_us;
  t.iqr_us = m.iqr_us;
  t.tflops = m.status.ok() ? Tflops(p, m.median_us) : 0;
  t.reps = m.reps;
  t.registers = m.registers;
  t.smem_bytes = m.smem_bytes;
  t.spill_bytes = m.spill_bytes;
  t.compile_ms = m.compile_ms;
  t.phase = phase;
  t.run_id = run_id;
  return t;
}

struct Shared {
  const TuneOptions* options;
  std::mutex mu;  // guards progress calls and summaries
  std::atomic<int64_t> total_spent{0};
  Clock::time_point start = Clock::now();
};

class Context final : public SearchContext {
 public:
  Context(Shared& shared, Database& db, Measurer& measurer, int64_t device_id, int64_t toolchain_id, int64_t run_id,
          size_t index, const Problem& problem, std::vector<Variant> unmeasured, std::vector<CandidateResult> results,
          size_t space, ProblemSummary& summary)
      : shared_(shared), db_(db), measurer_(measurer), device_id_(device_id), toolchain_id_(toolchain_id),
        run_id_(run_id), index_(index), problem_(problem), unmeasured_(std::move(unmeasured)),
        results_(std::move(results)), space_(space), summary_(summary) {
    const Budget& pp = shared.options->per_problem;
    if (pp.measurements >= 0) per_problem_ = pp.measurements;
    if (pp.fraction >= 0) {
      int64_t f = std::max<int64_t>(1, int64_t(std::ceil(pp.fraction * double(space))));
      per_problem_ = per_problem_ < 0 ? f : std::min(per_problem_, f);
    }
    start_ = Clock::now();
  }

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

  Result<CandidateResult> Measure(const Variant& v) override {
    auto it = std::find(unmeasured_.begin(), unmeasured_.end(), v);
    if (it == unmeasured_.end())
      return Status(Code::kInvalidArgument, "variant " + v.Uri() + " is not an unmeasured candidate");
    if (budget_left() == 0) return Status(Code::kOutOfResources, "measurement budget spent");
    unmeasured_.erase(it);
    ++spent_;
    shared_.total_spent.fetch_add(1);
    const auto t0 = std::chrono::steady_clock::now();
    auto m = measurer_.Measure(problem_, v);
    if (!m.ok()) return m.status();
    const auto t1 = std::chrono::steady_clock::now();
    auto id = db_.RecordTrial(device_id_, toolchain_id_, ToTrial(problem_, v, *m, "search", run_id_));
    if (!id.ok()) return id.status();
    if (trace_)
      std::fprintf(stderr, "trace tuner %s measure %.1f ms, record %.1f ms\n", v.Uri().c_str(),
                   std::chrono::duration<double, std::milli>(t1 - t0).count(),
                   std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count());
    CandidateResult r{v, std::move(*m)};
    ++summary_.measured;
    if (!r.ok()) ++summary_.failed;
    if (r.ok() && (best_us_ == 0 || r.measurement.median_us < best_us_)) best_us_ = r.measurement.median_us;
    results_.push_back(r);
    if (shared_.options->progress) {
      std::lock_guard<std::mutex> lock(shared_.mu);
      shared_.options->progress->OnCandidate(index_, results_.size(), space_, r, best_us_);
    }
    return r;
  }

  // Variants of this class measured on other problems, best first: each variant's mean of
  // log(time / that problem's best), weighted 2^-distance, where the distance counts the
  // octaves between the two problems' Nq, Nk and batch*heads. The nearest sizes dominate, so a
  // ranking learnt at N = 512 does not decide N = 16k once N = 8k has been tuned.
  std::vector<Variant> PriorRanking() const override {
    auto problems = db_.ListProblems();
    if (!problems.ok()) return {};
    std::map<std::string, std::pair<double, double>> score;  // uri -> (sum w*log(t / best), sum w)
    std::map<std::string, Variant> by_uri;
    auto octaves = [](double a, double b) { return std::abs(std::log2(a / b)); };
    for (const ProblemRow& row : *problems) {
      const Problem& p = row.problem;
      if (p == problem_ || p.dtype != problem_.dtype || p.head_dim != problem_.head_dim || p.causal != problem_.causal)
        continue;
      auto trials = db_.TrialsForProblem(row.id, device_id_, toolchain_id_);
      if (!trials.ok()) continue;
      double best = 0;
      for (const TrialRow& t : *trials)
        if (t.trial.phase == "search" && t.trial.status == Code::kOk && t.trial.median_us > 0 &&
            (best == 0 || t.trial.median_us < best))
          best = t.trial.median_us;
      if (best == 0) continue;
      const double distance = octaves(p.seqlen_q, problem_.seqlen_q) + octaves(p.seqlen_k, problem_.seqlen_k) +
                              octaves(double(p.batch) * p.heads_q, double(problem_.batch) * problem_.heads_q);
      const double weight = std::exp2(-distance);
      for (const TrialRow& t : *trials) {
        if (t.trial.phase != "search" || t.trial.status != Code::kOk || !(t.trial.median_us > 0)) continue;
        auto& e = score[t.variant_uri];
        e.first += weight * std::log(t.trial.median_us / best);
        e.second += weight;
        by_uri.emplace(t.variant_uri, t.trial.variant);
      }
    }
    std::vector<std::pair<double, Variant>> ranked;
    for (const auto& [uri, e] : score) ranked.push_back({e.first / e.second, by_uri.at(uri)});
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<Variant> out;
    for (const auto& r : ranked) out.push_back(r.second);
    return out;
  }

  int ResidentWarpsPerSm(const Variant& v) override {
    auto [it, inserted] = residency_.try_emplace(v.Uri(), 0);
    if (inserted) {
      auto regs = measurer_.CompiledRegisters(v);
      const DeviceRecord d = measurer_.Device();
      if (regs.ok())
        it->second = ResidentCtasPerSm(SmLimitsFor(d.cc_major, d.cc_minor), *regs, ThreadsPerBlock(v), SharedMemoryBytes(v)) *
                     (ThreadsPerBlock(v) / 32);
    }
    return it->second;
  }

  void SeedBest() {
    for (const auto& r : results_)
      if (r.ok() && (best_us_ == 0 || r.measurement.median_us < best_us_)) best_us_ = r.measurement.median_us;
  }

 private:
  Shared& shared_;
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
  ProblemSummary& summary_;
  int64_t per_problem_ = -1;
  int64_t spent_ = 0;
  double best_us_ = 0;
  Clock::time_point start_;
};

constexpr double kDecidedGap = 0.03;

// A finalist's re-timing that decides for it: its median round (the lower one of an even count).
Measurement MedianRound(std::vector<Measurement> rounds) {
  std::sort(rounds.begin(), rounds.end(),
            [](const Measurement& a, const Measurement& b) { return a.median_us < b.median_us; });
  return rounds[(rounds.size() - 1) / 2];
}

// Whether the leader by median round is ahead of every other finalist by more than `gap`.
bool Decided(const std::vector<std::vector<Measurement>>& rounds, const std::vector<bool>& out, double gap) {
  std::vector<double> medians;
  for (size_t i = 0; i < rounds.size(); ++i)
    if (!out[i] && !rounds[i].empty()) medians.push_back(MedianRound(rounds[i]).median_us);
  if (medians.size() < 2) return true;
  std::sort(medians.begin(), medians.end());
  return medians[1] > medians[0] * (1 + gap);
}

// Whether an exhaustive run still finds candidates of `p`'s space that no GPU of this model
// measured with this toolchain: a winner of a budget-starved search must not end a richer one.
Result<bool> SearchIncomplete(Database& db, const TuneOptions& o, const Problem& p, const std::string& device_name,
                              int64_t toolchain_id) {
  if (!SearchesExhaustively(o.strategy, p)) return false;
  auto pid = db.FindProblem(p);
  if (!pid.ok()) return pid.status().code() == Code::kNotFound ? Result<bool>(true) : Result<bool>(pid.status());
  auto rows = db.TrialsForProblem(*pid, 0, toolchain_id);
  if (!rows.ok()) return rows.status();
  auto space = o.enumerate(p);
  if (!space.ok()) return false;  // the measuring path reports it
  for (const Variant& v : *space)
    if (std::none_of(rows->begin(), rows->end(), [&](const TrialRow& r) {
          return r.trial.phase == "search" && r.device_name == device_name && r.trial.variant == v;
        }))
      return true;
  return false;
}

// Tunes one problem on one device; fills `s`. Returns an error only when the device's run
// cannot continue (measurer or database failure). `next_class`, when given, is the next problem
// of another class in the list: its compiles are queued while this one measures.
Status TuneOne(Shared& shared, Database& db, Measurer& measurer, Strategy& strategy, int64_t device_id,
               int64_t toolchain_id, int64_t run_id, size_t index, const Problem& problem,
               const Problem* next_class, ProblemSummary& s) {
  const TuneOptions& o = *shared.options;
  const DeviceRecord device = measurer.Device();
  const ToolchainInfo toolchain = measurer.Toolchain();
  s.problem = problem;
  s.device = device.name + " " + device.uuid;
  Status valid = ValidateProblem(problem);
  if (!valid.ok()) {
    s.outcome = ProblemOutcome::kError;
    s.message = valid.message();
    return Status::Ok();
  }
  const BucketKey bucket = BucketOf(problem);
  s.bucket = BucketString(bucket);
  auto pid = db.UpsertProblem(problem);
  if (!pid.ok()) return pid.status();
  // Winners are shared by every GPU of the model: one found by a sibling GPU counts.
  auto existing = db.FindWinner(device, toolchain, bucket);
  if (!existing.ok()) return existing.status();
  auto incomplete = *existing && !o.retune ? SearchIncomplete(db, o, problem, device.name, toolchain_id)
                                           : Result<bool>(false);
  if (!incomplete.ok()) return incomplete.status();
  if (*existing && !o.retune && !*incomplete) {
    s.outcome = ProblemOutcome::kSkipped;
    s.winner_uri = (*existing)->variant_uri;
    s.median_us = (*existing)->median_us;
    s.tflops = (*existing)->tflops;
    return Status::Ok();
  }
  if (next_class) measurer.Prefetch(*next_class);  // only when this one is measured: a rerun compiles nothing
  auto space = o.enumerate(problem);
  if (!space.ok()) {
    s.outcome = ProblemOutcome::kError;
    s.message = "enumerate: " + space.status().ToString();
    return Status::Ok();
  }
  std::vector<Variant> unmeasured;
  for (const Variant& v : *space)
    if (std::find(unmeasured.begin(), unmeasured.end(), v) == unmeasured.end()) unmeasured.push_back(v);
  const size_t space_size = unmeasured.size();
  s.space = int64_t(space_size);
  std::vector<CandidateResult> results;
  if (!o.retune) {
    // Resume: reuse this device's recorded first measurements.
    auto rows = db.TrialsForProblem(*pid, device_id, toolchain_id);
    if (!rows.ok()) return rows.status();
    for (const TrialRow& row : *rows) {
      if (row.trial.phase != "search") continue;
      auto it = std::find(unmeasured.begin(), unmeasured.end(), row.trial.variant);
      if (it == unmeasured.end()) continue;
      Measurement m;
      m.status = row.trial.status == Code::kOk ? Status::Ok() : Status(row.trial.status, row.trial.message);
      m.median_us = row.trial.median_us;
      m.iqr_us = row.trial.iqr_us;
      m.reps = row.trial.reps;
      m.registers = row.trial.registers;
      m.smem_bytes = row.trial.smem_bytes;
      m.spill_bytes = row.trial.spill_bytes;
      m.compile_ms = row.trial.compile_ms;
      m.source_hash = row.trial.source_hash;
      results.push_back({*it, m});
      unmeasured.erase(it);
    }
  }
  s.resumed = int64_t(results.size());
  if (o.progress) {
    std::lock_guard<std::mutex> lock(shared.mu);
    o.progress->OnProblemStart(index, problem, s.device, space_size);
  }
  Context ctx(shared, db, measurer, device_id, toolchain_id, run_id, index, problem, std::move(unmeasured),
              std::move(results), space_size, s);
  ctx.SeedBest();
  Status searched = strategy.Search(ctx);
  if (!searched.ok()) {
    s.outcome = ProblemOutcome::kError;
    s.message = searched.ToString();
    // A failing measurer or database stops this device; anything else is this problem's error.
    return searched.code() == Code::kDatabaseError || searched.code() == Code::kNoDriver ||
                   searched.code() == Code::kNoDevice
               ? searched
               : Status::Ok();
  }

  std::vector<CandidateResult> ok;
  for (const auto& r : ctx.results())
    if (r.ok() && r.measurement.median_us > 0) ok.push_back(r);
  if (ok.empty()) {
    s.outcome = ProblemOutcome::kNoWinner;
    s.message = ctx.results().empty() ? "nothing measured (budget spent or empty space)"
                                      : "no candidate passed (" + std::to_string(ctx.results().size()) + " failed)";
    return Status::Ok();
  }
  std::stable_sort(ok.begin(), ok.end(), [](const CandidateResult& a, const CandidateResult& b) {
    return a.measurement.median_us < b.measurement.median_us;
  });
  // The incumbent: the stored winner when it is still a passing candidate, else the leader.
  size_t incumbent = 0;
  if (*existing)
    for (size_t i = 0; i < ok.size(); ++i)
      if (ok[i].variant.Uri() == (*existing)->variant_uri) incumbent = i;
  // Finalists: the top k, less those too far behind the leader for a re-timing to change the
  // order (two always stay, so the leader is re-timed against its closest rival).
  std::vector<CandidateResult> finalists;
  for (const CandidateResult& r : ok) {
    if (finalists.size() >= size_t(std::max(1, o.retime_top_k))) break;
    const bool within_reach = r.measurement.median_us <= ok.front().measurement.median_us * (1 + o.retime_reach);
    if (finalists.size() >= 2 && !within_reach) break;
    finalists.push_back(r);
  }
  if (incumbent >= finalists.size()) finalists.push_back(ok[incumbent]);
  const Variant incumbent_variant = ok[incumbent].variant;

  if (o.retime_top_k >= 2 && finalists.size() >= 2) {
    // Each round re-times the finalists still standing in a new shuffled order; a finalist's
    // time is then the median of its rounds. Rounds stop once the leader is ahead by more than
    // kDecidedGap: only near-ties pay for more (with 1.5% noise, a second and third round for
    // them halve how often two tuning runs pick winners more than 2% apart; docs/perf-notes.md).
    std::mt19937_64 rng(o.seed ^ std::hash<std::string>()(problem.ToString()));
    const int max_rounds = o.retime_rounds > 0 ? o.retime_rounds : SearchesExhaustively(o.strategy, problem) ? 3 : 1;
    std::vector<std::vector<Measurement>> rounds(finalists.size());
    std::vector<bool> out(finalists.size(), false);  // failed a re-timing: out of contention
    for (int round = 0; round < max_rounds; ++round) {
      std::vector<size_t> order;
      for (size_t i = 0; i < finalists.size(); ++i)
        if (!out[i]) order.push_back(i);
      if (order.empty()) break;
      std::shuffle(order.begin(), order.end(), rng);
      std::vector<Variant> shuffled;
      for (size_t i : order) shuffled.push_back(finalists[i].variant);
      auto again = measurer.Remeasure(problem, shuffled);
      if (!again.ok()) {
        s.outcome = ProblemOutcome::kError;
        s.message = "re-timing: " + again.status().ToString();
        return Status::Ok();
      }
      if (again->size() != shuffled.size())
        return Status(Code::kInternal, "Remeasure returned " + std::to_string(again->size()) + " results for " +
                                           std::to_string(shuffled.size()) + " variants");
      for (size_t k = 0; k < order.size(); ++k) {
        Measurement m = (*again)[k];
        if (m.source_hash.empty()) m.source_hash = finalists[order[k]].measurement.source_hash;
        auto id = db.RecordTrial(device_id, toolchain_id, ToTrial(problem, shuffled[k], m, "retime", run_id));
        if (!id.ok()) return id.status();
        ++s.measured;
        if (!m.status.ok()) {
          ++s.failed;
          out[order[k]] = true;
          continue;
        }
        rounds[order[k]].push_back(m);
      }
      if (Decided(rounds, out, kDecidedGap)) break;  // more rounds only for near-ties
    }
    std::vector<CandidateResult> retimed;
    for (size_t i = 0; i < finalists.size(); ++i)
      if (!out[i] && !rounds[i].empty()) retimed.push_back({finalists[i].variant, MedianRound(rounds[i])});
    if (retimed.empty()) {
      s.outcome = ProblemOutcome::kNoWinner;
      s.message = "every finalist failed re-timing";
      return Status::Ok();
    }
    finalists = std::move(retimed);
  }

  // Noise rule: the challenger must beat the incumbent by more than the noise to displace it.
  auto inc = std::find_if(finalists.begin(), finalists.end(),
                          [&](const CandidateResult& r) { return r.variant == incumbent_variant; });
  const CandidateResult* winner = nullptr;
  const CandidateResult* challenger = nullptr;
  for (const auto& r : finalists)
    if (!(r.variant == incumbent_variant) &&
        (!challenger || r.measurement.median_us < challenger->measurement.median_us))
      challenger = &r;
  if (inc == finalists.end()) {
    winner = challenger;
  } else if (!challenger) {
    winner = &*inc;
  } else {
    const Measurement& a = inc->measurement;
    const Measurement& b = challenger->measurement;
    double noise = std::max({o.min_noise, a.iqr_us / a.median_us, b.iqr_us / b.median_us});
    winner = b.median_us < a.median_us * (1 - noise) ? challenger : &*inc;
  }
  const Measurement& m = winner->measurement;
  Status set = db.SetWinner(device_id, toolchain_id, problem, winner->variant, m.source_hash, m.median_us,
                            Tflops(problem, m.median_us));
  if (!set.ok()) return set;
  s.outcome = ProblemOutcome::kTuned;
  s.winner_uri = winner->variant.Uri();
  s.median_us = m.median_us;
  s.tflops = Tflops(problem, m.median_us);
  return Status::Ok();
}

}  // namespace

Status ValidateTuneOptions(const TuneOptions& options) {
  auto strategy = MakeStrategy(options.strategy);
  if (!strategy.ok()) return strategy.status();
  if (options.retime_rounds < 0 || options.retime_rounds > 10)
    return Status(Code::kInvalidArgument, "--retime-rounds " + std::to_string(options.retime_rounds) +
                                              ": allowed 1 to 10, or 0 for the strategy's default");
  return Status::Ok();
}

namespace {

// The winners' cubins go into the database, so the runtime never needs NVRTC for them.
Status StoreWinnerCubins(const std::string& db_path, const TuneSummary& summary, const std::set<std::string>& archs) {
  auto db = Database::Open(db_path);
  if (!db.ok()) return db.status();
  Compiler compiler(Compiler::Options{});
  std::set<std::string> done;
  for (const ProblemSummary& p : summary.problems) {
    if (p.winner_uri.empty() || !done.insert(p.winner_uri).second) continue;
    auto variant = Variant::FromUri(p.winner_uri);
    if (!variant.ok()) return variant.status();
    for (const std::string& arch : archs) {
      auto record = LoadOrCompileCubin(**db, compiler, *variant, arch);
      if (!record.ok()) return record.status();
    }
  }
  return Status::Ok();
}

}  // namespace

Result<TuneSummary> Tune(const TuneOptions& options, std::vector<std::unique_ptr<Measurer>> measurers) {
  if (measurers.empty()) return Status(Code::kInvalidArgument, "Tune: no measurers (devices) given");
  if (!options.enumerate) return Status(Code::kInvalidArgument, "Tune: options.enumerate is not set");
  if (options.db_path.empty()) return Status(Code::kInvalidArgument, "Tune: options.db_path is empty");
  FT_RETURN_IF_ERROR(ValidateTuneOptions(options));
  // Open (create/migrate) once up front so a bad file is one clear error before threads start.
  {
    auto db = Database::Open(options.db_path);
    if (!db.ok()) return db.status();
  }
  Shared shared;
  shared.options = &options;

  // Group devices by model (SameGpuModel): one work queue per model over the whole problem list.
  std::vector<DeviceRecord> models;
  std::vector<size_t> group(measurers.size());
  for (size_t i = 0; i < measurers.size(); ++i) {
    const DeviceRecord d = measurers[i]->Device();
    group[i] = std::find_if(models.begin(), models.end(), [&](const DeviceRecord& m) { return SameGpuModel(m, d); }) -
               models.begin();
    if (group[i] == models.size()) models.push_back(d);
  }
  const size_t groups = models.size();
  const size_t n = options.problems.size();
  std::vector<std::atomic<size_t>> next(groups);
  for (auto& x : next) x.store(0);
  std::vector<ProblemSummary> summaries(n * groups);
  std::vector<Status> errors(measurers.size());
  if (options.progress) options.progress->OnStart(n * groups, measurers.size());

  auto worker = [&](size_t w) {
    Measurer& measurer = *measurers[w];
    auto strategy = MakeStrategy(options.strategy);
    auto db = Database::Open(options.db_path);
    if (!db.ok()) {
      errors[w] = db.status();
      return;
    }
    auto dev = (*db)->UpsertDevice(measurer.Device());
    auto tc = (*db)->UpsertToolchain(measurer.Toolchain());
    if (!dev.ok() || !tc.ok()) {
      errors[w] = dev.ok() ? tc.status() : dev.status();
      return;
    }
    auto run = (*db)->BeginRun(*dev, *tc, options.strategy);
    if (!run.ok()) {
      errors[w] = run.status();
      return;
    }
    RunCounts counts;
    const size_t g = group[w];
    for (size_t i; (i = next[g].fetch_add(1)) < n;) {
      const size_t index = g * n + i;
      ProblemSummary& s = summaries[index];
      auto t0 = Clock::now();
      const Problem* next_class = nullptr;
      for (size_t j = next[g].load(); j < n && !next_class; ++j)
        if (ClassOf(options.problems[j]) != ClassOf(options.problems[i])) next_class = &options.problems[j];
      Status st =
          TuneOne(shared, **db, measurer, **strategy, *dev, *tc, *run, index, options.problems[i], next_class, s);
      s.seconds = Seconds(t0);
      ++counts.problems;
      counts.measured += s.measured;
      counts.failed += s.failed;
      counts.skipped += s.outcome == ProblemOutcome::kSkipped;
      counts.winners += s.outcome == ProblemOutcome::kTuned;
      if (options.progress) {
        std::lock_guard<std::mutex> lock(shared.mu);
        options.progress->OnProblemEnd(index, s);
      }
      if (!st.ok()) {
        s.outcome = ProblemOutcome::kError;
        s.message = st.ToString();
        errors[w] = st;
        break;
      }
    }
    (void)(*db)->EndRun(*run, counts);
  };
  if (measurers.size() == 1) {
    worker(0);
  } else {
    std::vector<std::thread> threads;
    for (size_t w = 0; w < measurers.size(); ++w) threads.emplace_back(worker, w);
    for (auto& t : threads) t.join();
  }
  TuneSummary summary;
  for (auto& s : summaries) {
    if (s.bucket.empty() && s.device.empty()) continue;  // never reached (a worker stopped)
    summary.measured += s.measured;
    summary.failed += s.failed;
    summary.winners += s.outcome == ProblemOutcome::kTuned;
    summary.skipped += s.outcome == ProblemOutcome::kSkipped;
    summary.errors += s.outcome == ProblemOutcome::kError;
    summary.problems.push_back(std::move(s));
  }
  for (const Status& e : errors)
    if (!e.ok()) return e;
  if (options.store_winner_cubins) {
    std::set<std::string> archs;
    for (const auto& m : measurers) archs.insert(ArchFor(m->Device().cc_major, m->Device().cc_minor));
    FT_RETURN_IF_ERROR(StoreWinnerCubins(options.db_path, summary, archs));
  }
  summary.seconds = Seconds(shared.start);
  if (options.progress) options.progress->OnFinish(summary);
  return summary;
}

Result<std::vector<DryRunProblem>> PlanTuning(const TuneOptions& options, const DeviceRecord& device,
                                              const ToolchainInfo& toolchain) {
  if (!options.enumerate) return Status(Code::kInvalidArgument, "PlanTuning: options.enumerate is not set");
  std::unique_ptr<Database> db;
  std::error_code ec;
  if (!options.db_path.empty() && std::filesystem::exists(options.db_path, ec)) {
    auto opened = Database::Open(options.db_path, Database::OpenOptions{true, 10000});
    if (!opened.ok()) return opened.status();
    db = std::move(*opened);
  }
  int64_t device_id = 0, toolchain_id = 0;
  if (db) {
    auto d = db->FindDevice(device);
    auto t = db->FindToolchain(toolchain);
    device_id = d.ok() ? *d : -1;
    toolchain_id = t.ok() ? *t : -1;
  }
  std::vector<DryRunProblem> out;
  for (const Problem& p : options.problems) {
    FT_RETURN_IF_ERROR(ValidateProblem(p));
    DryRunProblem d;
    d.problem = p;
    d.bucket = BucketString(BucketOf(p));
    if (db && !options.retune) {
      auto w = db->FindWinner(device, toolchain, BucketOf(p));
      if (!w.ok()) return w.status();
      d.skipped = w->has_value();
      if (d.skipped && toolchain_id > 0) {
        auto incomplete = SearchIncomplete(*db, options, p, device.name, toolchain_id);
        if (!incomplete.ok()) return incomplete.status();
        d.skipped = !*incomplete;
      }
    }
    if (!d.skipped) {
      auto space = options.enumerate(p);
      if (!space.ok()) return space.status();
      std::vector<Variant> recorded;
      if (db && !options.retune && device_id > 0 && toolchain_id > 0) {
        auto pid = db->FindProblem(p);
        if (pid.ok()) {
          auto rows = db->TrialsForProblem(*pid, device_id, toolchain_id);
          if (!rows.ok()) return rows.status();
          for (const auto& r : *rows)
            if (r.trial.phase == "search") recorded.push_back(r.trial.variant);
        }
      }
      for (const Variant& v : *space) {
        if (std::find(recorded.begin(), recorded.end(), v) != recorded.end()) {
          ++d.recorded;
          continue;
        }
        if (std::find(d.to_measure.begin(), d.to_measure.end(), v) == d.to_measure.end()) d.to_measure.push_back(v);
      }
    }
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace flashtune
