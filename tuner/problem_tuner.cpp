// The engine's steps on one problem; see tuner/problem_tuner.h.
#include "tuner/problem_tuner.h"

#include <algorithm>
#include <functional>
#include <mutex>
#include <random>
#include <string>

#include "flashtune/space.h"

namespace flashtune {
namespace {

// The runtime's plan for `problem` without a database on `device` (DefaultVariantForGpu), when
// it is among `candidates`. An unknown GPU, or a plan the space leaves out (a family the options
// exclude), gives nullopt.
std::optional<Variant> UntunedPlan(const Problem& problem, const DeviceRecord& device,
                                   const std::vector<Variant>& candidates) {
  auto plan = DefaultVariantForGpu(problem, device.cc_major, device.cc_minor);
  if (!plan.ok() || std::find(candidates.begin(), candidates.end(), *plan) == candidates.end()) return std::nullopt;
  return *plan;
}

// The untuned plan's time this run: its re-timing among the finalists, else its search time (0
// when it failed or was not measured).
double UntunedTime(const Variant& untuned, const std::vector<CandidateResult>& finalists,
                   const std::vector<CandidateResult>& passing) {
  for (const auto* list : {&finalists, &passing})
    for (const CandidateResult& r : *list)
      if (r.variant == untuned && r.ok()) return r.measurement.median_us;
  return 0;
}

// Re-timing stops once the leader is this far ahead of every other finalist.
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

Measurement FromTrial(const TrialRecord& t) {
  Measurement m;
  m.status = t.status == Code::kOk ? Status::Ok() : Status(t.status, t.message);
  m.median_us = t.median_us;
  m.iqr_us = t.iqr_us;
  m.reps = t.reps;
  m.registers = t.registers;
  m.smem_bytes = t.smem_bytes;
  m.spill_bytes = t.spill_bytes;
  m.compile_ms = t.compile_ms;
  m.source_hash = t.source_hash;
  return m;
}

}  // namespace

Result<bool> SearchIncomplete(Database& db, const TuneOptions& o, const Strategy& strategy, const Problem& p,
                              const DeviceRecord& device, int64_t toolchain_id) {
  if (!strategy.MeasuresEverything(p)) return false;
  auto pid = db.FindProblem(p);
  if (!pid.ok()) return pid.status().code() == Code::kNotFound ? Result<bool>(true) : Result<bool>(pid.status());
  auto rows = db.TrialsForProblem(*pid, 0, toolchain_id);
  if (!rows.ok()) return rows.status();
  auto space = o.enumerate(p, device);
  if (!space.ok()) return false;  // the measuring path reports it
  for (const Variant& v : *space)
    if (std::none_of(rows->begin(), rows->end(), [&](const TrialRow& r) {
          return r.trial.phase == "search" && r.device_name == device.name && r.trial.variant == v;
        }))
      return true;
  return false;
}

Status ProblemTuner::Tune(size_t index, const Problem& problem, const Problem* next_class, ProblemSummary& s) {
  const DeviceRecord device = measurer_.Device();
  s.problem = problem;
  s.device = device.name + " " + device.uuid;
  Work w;
  w.index = index;
  w.problem = problem;
  auto admitted = Admit(w, s);
  if (!admitted.ok() || !*admitted) return admitted.status();
  // Only when this one is measured (a rerun compiles nothing), and never a class Admit refuses.
  if (next_class) measurer_.Prefetch(*next_class);
  auto gathered = Gather(w, s);
  if (!gathered.ok() || !*gathered) return gathered.status();
  std::vector<CandidateResult> passing;
  auto searched = Search(w, s, &passing);
  if (!searched.ok() || !*searched) return searched.status();
  // The incumbent: the stored winner when it is still a passing candidate, else the leader.
  size_t incumbent = 0;
  if (w.existing)
    for (size_t i = 0; i < passing.size(); ++i)
      if (passing[i].variant.Uri() == w.existing->variant_uri) incumbent = i;
  std::vector<CandidateResult> finalists = Finalists(passing, incumbent);
  auto retimed = Retime(w, s, &finalists);
  if (!retimed.ok() || !*retimed) return retimed.status();
  if (w.untuned) {
    s.untuned_uri = w.untuned->Uri();
    s.untuned_us = UntunedTime(*w.untuned, finalists, passing);
  }
  return Crown(w, passing[incumbent].variant, finalists, s);
}

Result<bool> ProblemTuner::Admit(Work& w, ProblemSummary& s) {
  const TuneOptions& o = *shared_.options;
  Status valid = ValidateProblem(w.problem);
  if (!valid.ok()) {
    s.outcome = ProblemOutcome::kError;
    s.message = valid.message();
    return false;
  }
  const BucketKey bucket = BucketOf(w.problem);
  s.bucket = BucketString(bucket);
  auto pid = db_.UpsertProblem(w.problem);
  if (!pid.ok()) return pid.status();
  w.problem_id = *pid;
  // Winners are shared by every GPU of the model: one found by a sibling GPU counts.
  const DeviceRecord device = measurer_.Device();
  auto existing = db_.FindWinner(device, measurer_.Toolchain(), bucket);
  if (!existing.ok()) return existing.status();
  w.existing = std::move(*existing);
  if (!w.existing || o.retune) return true;
  auto incomplete = SearchIncomplete(db_, o, strategy_, w.problem, device, toolchain_id_);
  if (!incomplete.ok()) return incomplete.status();
  if (*incomplete) return true;
  s.outcome = ProblemOutcome::kSkipped;
  s.winner_uri = w.existing->variant_uri;
  s.median_us = w.existing->median_us;
  s.tflops = w.existing->tflops;
  return false;
}

Result<bool> ProblemTuner::Gather(Work& w, ProblemSummary& s) {
  const TuneOptions& o = *shared_.options;
  auto space = o.enumerate(w.problem, measurer_.Device());
  if (!space.ok()) {
    s.outcome = ProblemOutcome::kError;
    s.message = "enumerate: " + space.status().ToString();
    return false;
  }
  for (const Variant& v : *space)
    if (std::find(w.unmeasured.begin(), w.unmeasured.end(), v) == w.unmeasured.end()) w.unmeasured.push_back(v);
  w.space_size = w.unmeasured.size();
  s.space = int64_t(w.space_size);
  w.untuned = UntunedPlan(w.problem, measurer_.Device(), w.unmeasured);
  if (!o.retune) {
    // Resume: reuse this device's recorded first measurements.
    auto rows = db_.TrialsForProblem(w.problem_id, device_id_, toolchain_id_);
    if (!rows.ok()) return rows.status();
    for (const TrialRow& row : *rows) {
      if (row.trial.phase != "search") continue;
      auto it = std::find(w.unmeasured.begin(), w.unmeasured.end(), row.trial.variant);
      if (it == w.unmeasured.end()) continue;
      w.results.push_back({*it, FromTrial(row.trial)});
      w.unmeasured.erase(it);
    }
  }
  s.resumed = int64_t(w.results.size());
  if (o.progress) {
    std::lock_guard<std::mutex> lock(shared_.mu);
    o.progress->OnProblemStart(w.index, w.problem, s.device, w.space_size);
  }
  return true;
}

Result<bool> ProblemTuner::Search(Work& w, ProblemSummary& s, std::vector<CandidateResult>* passing) {
  ProblemSearch ctx(shared_, db_, measurer_, device_id_, toolchain_id_, run_id_, w.index, w.problem,
                    std::move(w.unmeasured), std::move(w.results), w.space_size, w.untuned, s);
  ctx.SeedBest();
  Status searched = strategy_.Search(ctx);
  if (!searched.ok()) {
    s.outcome = ProblemOutcome::kError;
    s.message = searched.ToString();
    // A failing measurer or database stops this device; anything else is this problem's error.
    if (searched.code() == Code::kDatabaseError || searched.code() == Code::kNoDriver ||
        searched.code() == Code::kNoDevice)
      return searched;
    return false;
  }
  for (const auto& r : ctx.results())
    if (r.ok() && r.measurement.median_us > 0) passing->push_back(r);
  if (passing->empty()) {
    s.outcome = ProblemOutcome::kNoWinner;
    s.message = ctx.results().empty() ? "nothing measured (budget spent or empty space)"
                                      : "no candidate passed (" + std::to_string(ctx.results().size()) + " failed)";
    return false;
  }
  std::stable_sort(passing->begin(), passing->end(), [](const CandidateResult& a, const CandidateResult& b) {
    return a.measurement.median_us < b.measurement.median_us;
  });
  return true;
}

std::vector<CandidateResult> ProblemTuner::Finalists(const std::vector<CandidateResult>& passing,
                                                     size_t incumbent) const {
  // The top k, less those too far behind the leader for a re-timing to change the order (two
  // always stay, so the leader is re-timed against its closest rival).
  const TuneOptions& o = *shared_.options;
  std::vector<CandidateResult> finalists;
  for (const CandidateResult& r : passing) {
    if (finalists.size() >= size_t(std::max(1, o.retime_top_k))) break;
    const bool within_reach = r.measurement.median_us <= passing.front().measurement.median_us * (1 + o.retime_reach);
    if (finalists.size() >= 2 && !within_reach) break;
    finalists.push_back(r);
  }
  if (incumbent >= finalists.size()) finalists.push_back(passing[incumbent]);
  return finalists;
}

Result<bool> ProblemTuner::Retime(const Work& w, ProblemSummary& s, std::vector<CandidateResult>* finalists) {
  const TuneOptions& o = *shared_.options;
  if (o.retime_top_k < 2 || finalists->size() < 2) return true;
  // Each round re-times the finalists still standing in a new shuffled order; a finalist's time
  // is then the median of its rounds. Rounds stop once the leader is ahead by more than
  // kDecidedGap: only near-ties pay for more.
  std::mt19937_64 rng(o.seed ^ std::hash<std::string>()(w.problem.ToString()));
  const int max_rounds = o.retime_rounds > 0 ? o.retime_rounds : strategy_.RetimeRounds(w.problem);
  std::vector<std::vector<Measurement>> rounds(finalists->size());
  std::vector<bool> out(finalists->size(), false);  // failed a re-timing: out of contention
  for (int round = 0; round < max_rounds; ++round) {
    std::vector<size_t> order;
    for (size_t i = 0; i < finalists->size(); ++i)
      if (!out[i]) order.push_back(i);
    if (order.empty()) break;
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<Variant> shuffled;
    for (size_t i : order) shuffled.push_back((*finalists)[i].variant);
    auto again = measurer_.Remeasure(w.problem, shuffled);
    if (!again.ok()) {
      s.outcome = ProblemOutcome::kError;
      s.message = "re-timing: " + again.status().ToString();
      return false;
    }
    if (again->size() != shuffled.size())
      return Status(Code::kInternal, "Remeasure returned " + std::to_string(again->size()) + " results for " +
                                         std::to_string(shuffled.size()) + " variants");
    std::vector<CandidateResult> timed;  // this round, for the progress sink
    for (size_t k = 0; k < order.size(); ++k) {
      Measurement m = (*again)[k];
      if (m.source_hash.empty()) m.source_hash = (*finalists)[order[k]].measurement.source_hash;
      auto id = db_.RecordTrial(device_id_, toolchain_id_, ToTrial(w.problem, shuffled[k], m, "retime", run_id_));
      if (!id.ok()) return id.status();
      ++s.measured;
      timed.push_back({shuffled[k], m});
      if (!m.status.ok()) {
        ++s.failed;
        out[order[k]] = true;
        continue;
      }
      rounds[order[k]].push_back(m);
    }
    if (o.progress) {
      std::lock_guard<std::mutex> lock(shared_.mu);
      o.progress->OnRetime(w.index, round + 1, max_rounds, timed);
    }
    if (Decided(rounds, out, kDecidedGap)) break;  // more rounds only for near-ties
  }
  std::vector<CandidateResult> retimed;
  for (size_t i = 0; i < finalists->size(); ++i)
    if (!out[i] && !rounds[i].empty()) retimed.push_back({(*finalists)[i].variant, MedianRound(rounds[i])});
  if (retimed.empty()) {
    s.outcome = ProblemOutcome::kNoWinner;
    s.message = "every finalist failed re-timing";
    return false;
  }
  *finalists = std::move(retimed);
  return true;
}

Status ProblemTuner::Crown(const Work& w, const Variant& incumbent, const std::vector<CandidateResult>& finalists,
                           ProblemSummary& s) {
  const TuneOptions& o = *shared_.options;
  auto inc = std::find_if(finalists.begin(), finalists.end(),
                          [&](const CandidateResult& r) { return r.variant == incumbent; });
  const CandidateResult* winner = nullptr;
  const CandidateResult* challenger = nullptr;
  for (const auto& r : finalists)
    if (!(r.variant == incumbent) && (!challenger || r.measurement.median_us < challenger->measurement.median_us))
      challenger = &r;
  if (inc == finalists.end()) {
    winner = challenger;
  } else if (!challenger) {
    winner = &*inc;
  } else {
    // The challenger must beat the incumbent by more than the noise to displace it.
    const Measurement& a = inc->measurement;
    const Measurement& b = challenger->measurement;
    double noise = std::max({o.min_noise, a.iqr_us / a.median_us, b.iqr_us / b.median_us});
    winner = b.median_us < a.median_us * (1 - noise) ? challenger : &*inc;
  }
  const Measurement& m = winner->measurement;
  Status set = db_.SetWinner(device_id_, toolchain_id_, w.problem, winner->variant, m.source_hash, m.median_us,
                             Tflops(w.problem, m.median_us));
  if (!set.ok()) return set;
  s.outcome = ProblemOutcome::kTuned;
  s.winner_uri = winner->variant.Uri();
  s.median_us = m.median_us;
  s.tflops = Tflops(w.problem, m.median_us);
  return Status::Ok();
}

}  // namespace flashtune
