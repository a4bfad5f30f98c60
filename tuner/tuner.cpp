// The tuning engine's entry points: Tune() (device threads over per-model work queues, then the
// winners' cubins), PlanTuning() (the dry run) and the options' checks; see
// include/flashtune/tuner.h. One problem's steps are in tuner/problem_tuner.cpp.
#include "flashtune/tuner.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include "flashtune/arch.h"
#include "flashtune/compiler.h"
#include "flashtune/cubin_store.h"
#include "flashtune/space.h"
#include "tuner/problem_tuner.h"
#include "tuner/search_context.h"

namespace flashtune {

std::string_view ProblemOutcomeName(ProblemOutcome o) {
  switch (o) {
    case ProblemOutcome::kTuned: return "tuned";
    case ProblemOutcome::kSkipped: return "skipped";
    case ProblemOutcome::kNoWinner: return "no_winner";
    case ProblemOutcome::kError: return "error";
  }
  return "unknown";
}

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
  EngineState shared;
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
    ProblemTuner tuner(shared, **db, measurer, **strategy, *dev, *tc, *run);
    RunCounts counts;
    const size_t g = group[w];
    for (size_t i; (i = next[g].fetch_add(1)) < n;) {
      const size_t index = g * n + i;
      ProblemSummary& s = summaries[index];
      auto t0 = Clock::now();
      const Problem* next_class = nullptr;
      for (size_t j = next[g].load(); j < n && !next_class; ++j)
        if (ClassOf(options.problems[j]) != ClassOf(options.problems[i])) next_class = &options.problems[j];
      Status st = tuner.Tune(index, options.problems[i], next_class, s);
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
  auto strategy = MakeStrategy(options.strategy);  // which searches a rerun would complete
  if (!strategy.ok()) return strategy.status();
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
        auto incomplete = SearchIncomplete(*db, options, **strategy, p, device, toolchain_id);
        if (!incomplete.ok()) return incomplete.status();
        d.skipped = !*incomplete;
      }
    }
    if (!d.skipped) {
      auto space = options.enumerate(p, device);
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
