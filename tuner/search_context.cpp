// The engine's side of one problem's search; see tuner/search_context.h.
#include "tuner/search_context.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "flashtune/occupancy.h"
#include "flashtune/problem_set.h"
#include "flashtune/space.h"
#include "generator/family.h"

namespace flashtune {

namespace {
// An ok search-phase measurement of an `operation` variant: what the rankings learn from (a
// problems row is a shape, and its trials hold the forward and the backward variants measured
// on it).
bool SearchTrialOf(const TrialRow& t, Operation operation) {
  return t.trial.phase == "search" && t.trial.status == Code::kOk && t.trial.median_us > 0 &&
         ClassOf(t.trial.variant).operation == operation;
}
}  // namespace

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

ProblemSearch::ProblemSearch(EngineState& shared, Database& db, Measurer& measurer, int64_t device_id,
                             int64_t toolchain_id, int64_t run_id, size_t index, const Problem& problem,
                             std::vector<Variant> unmeasured, std::vector<CandidateResult> results, size_t space,
                             std::optional<Variant> untuned, ProblemSummary& summary)
    : shared_(shared), db_(db), measurer_(measurer), device_id_(device_id), toolchain_id_(toolchain_id),
      run_id_(run_id), index_(index), problem_(problem), unmeasured_(std::move(unmeasured)),
      results_(std::move(results)), space_(space), untuned_(std::move(untuned)), summary_(summary) {
  const Budget& pp = shared.options->per_problem;
  if (pp.measurements >= 0) per_problem_ = pp.measurements;
  if (pp.fraction >= 0) {
    int64_t f = std::max<int64_t>(1, int64_t(std::ceil(pp.fraction * double(space))));
    per_problem_ = per_problem_ < 0 ? f : std::min(per_problem_, f);
  }
  start_ = Clock::now();
}

Result<CandidateResult> ProblemSearch::Measure(const Variant& v) {
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

std::vector<Variant> ProblemSearch::PriorRanking() const {
  auto problems = db_.ListProblems();
  if (!problems.ok()) return {};
  std::map<std::string, std::pair<double, double>> score;  // uri -> (sum w*log(t / best), sum w)
  std::map<std::string, Variant> by_uri;
  auto octaves = [](double a, double b) { return std::abs(std::log2(a / b)); };
  auto same_pass = [this](const TrialRow& t) { return SearchTrialOf(t, problem_.operation); };
  for (const ProblemRow& row : *problems) {
    Problem p = row.problem;
    p.operation = problem_.operation;
    // Same class and kind of call: BucketDistance is -1 between decode and prefill buckets
    // (decode's winners are another family), whose trials would make a class's first problem
    // look tuned; GQA groups count as the same class.
    if (p == problem_ || BucketDistance(BucketOf(p), BucketOf(problem_)) < 0) continue;
    auto trials = db_.TrialsForProblem(row.id, device_id_, toolchain_id_);
    if (!trials.ok()) continue;
    double best = 0;
    for (const TrialRow& t : *trials)
      if (same_pass(t) && (best == 0 || t.trial.median_us < best)) best = t.trial.median_us;
    if (best == 0) continue;
    const double distance = octaves(p.seqlen_q, problem_.seqlen_q) + octaves(p.seqlen_k, problem_.seqlen_k) +
                            octaves(double(p.batch) * p.heads_q, double(problem_.batch) * problem_.heads_q);
    const double weight = std::exp2(-distance);
    for (const TrialRow& t : *trials) {
      if (!same_pass(t)) continue;
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

std::vector<Variant> ProblemSearch::SiblingRanking() const {
  if (problem_.dtype != DType::kBF16 && problem_.dtype != DType::kF16) return {};
  Problem sibling = problem_;
  sibling.dtype = problem_.dtype == DType::kBF16 ? DType::kF16 : DType::kBF16;
  auto id = db_.FindProblem(sibling);
  if (!id.ok()) return {};
  auto trials = db_.TrialsForProblem(*id, device_id_, toolchain_id_);
  if (!trials.ok()) return {};
  std::vector<std::pair<double, Variant>> ranked;
  for (const TrialRow& t : *trials) {
    // Once each: a resumed search may hold a variant twice.
    if (!SearchTrialOf(t, problem_.operation)) continue;
    Variant v = t.trial.variant;
    v.dtype = problem_.dtype;
    auto same = [&v](const auto& e) { return e.second == v; };
    auto it = std::find_if(ranked.begin(), ranked.end(), same);
    if (it == ranked.end()) ranked.push_back({t.trial.median_us, std::move(v)});
    else it->first = std::min(it->first, t.trial.median_us);
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Variant> out;
  for (auto& r : ranked) out.push_back(std::move(r.second));
  return out;
}

int ProblemSearch::ResidentWarpsPerSm(const Variant& v) {
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

}  // namespace flashtune
