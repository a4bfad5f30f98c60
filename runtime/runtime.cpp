// The Runtime: glue between its planner (runtime/planner.h), its launcher (runtime/launcher.h)
// and its database (runtime/runtime_database.h); the public API's validation lives here.
#include "flashtune/runtime.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <utility>

#include "flashtune/driver.h"
#include "flashtune/toolchain.h"
#include "runtime/launcher.h"
#include "runtime/online_tuner.h"
#include "runtime/planner.h"
#include "runtime/runtime_database.h"
#include "runtime/runtime_log.h"

namespace flashtune {

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarning: return "warning";
    case LogLevel::kError: return "error";
  }
  return "unknown";
}

std::string_view PlanSourceName(PlanSource source) {
  switch (source) {
    case PlanSource::kExact: return "exact";
    case PlanSource::kNearest: return "nearest";
    case PlanSource::kHeuristic: return "heuristic";
    case PlanSource::kNeighbour: return "neighbour";
  }
  return "unknown";
}

void LogSink::Log(LogLevel level, const std::string& message) const {
  if (callback_) {
    callback_(level, message);
  } else if (level >= LogLevel::kWarning) {
    std::fprintf(stderr, "flashtune: %s\n", message.c_str());
  }
}

struct Runtime::Impl {
  LogSink log;
  RuntimeDatabase db;
  DeviceState planning;  // plan()'s device
  Planner planner;
  Launcher launcher;

  std::unique_ptr<OnlineTuner> online;  // last: its thread uses the members above

  Impl(const RuntimeOptions& o, std::string path)
      : log(o.log),
        db(std::move(path), CurrentToolchain(), o.cache_dir),
        planner(&db, &log),
        launcher(&planner, &db, &log) {}

  ~Impl() { online.reset(); }  // stop its thread before the planner and launcher go

  // A bucket was tuned in the background: plan it again, and swap forward()'s kernel.
  void Refresh(const Problem& problem) {
    planner.Forget(planning, problem);
    launcher.Refresh(problem);
  }

  void StartOnlineTuning(const RuntimeOptions& o) {
    auto cli = FindFlashtuneCli(o.online_tuning_cli);
    if (!cli.ok()) {
      log.Log(LogLevel::kWarning, "online tuning is off: " + cli.status().message());
      return;
    }
    OnlineTuner::Settings settings;
    settings.db_path = db.path();
    settings.cli = *cli;
    if (o.online_tuning_budget > 0) settings.budget = o.online_tuning_budget;
    if (o.online_tuning_timeout_s > 0) settings.time_limit = std::chrono::seconds(o.online_tuning_timeout_s);
    online = std::make_unique<OnlineTuner>(settings, &db, &log, [this](const Problem& p) { Refresh(p); });
    planner.SetOnlineTuner(online.get());
  }
};

bool OnlineTuningEnabled(const RuntimeOptions& options) {
  if (options.online_tuning) return *options.online_tuning;
  const char* env = std::getenv("FLASHTUNE_ONLINE_TUNE");
  if (env == nullptr) return false;
  const std::string v = env;
  return v == "1" || v == "true" || v == "on" || v == "yes";
}

Runtime::Runtime(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Runtime::~Runtime() = default;

Result<std::unique_ptr<Runtime>> Runtime::Open(const RuntimeOptions& options) {
  auto impl = std::make_unique<Impl>(options, options.db_path.empty() ? DefaultDatabasePath() : options.db_path);
  FT_RETURN_IF_ERROR(impl->db.OpenIfPresent());
  if (options.online_tuning_budget < 0)
    return Status(Code::kInvalidArgument, "online_tuning_budget (" + std::to_string(options.online_tuning_budget) +
                                              "): allowed 0 (the default, 16) or more measurements");
  if (options.online_tuning_timeout_s < 0)
    return Status(Code::kInvalidArgument, "online_tuning_timeout_s (" +
                                              std::to_string(options.online_tuning_timeout_s) +
                                              "): allowed 0 (the default, 300 s) or more seconds");
  if (options.device_override) {
    impl->planning = DeviceState::FromOverride(*options.device_override, options.max_smem_bytes);
  } else if (auto driver = Driver::Load(); driver.ok()) {
    auto info = (*driver)->Device(0);
    impl->planning = info.ok() ? DeviceState::FromDevice(*info, **driver) : DeviceState::Absent(info.status().message());
  } else {
    impl->planning = DeviceState::Absent(driver.status().message());
  }
  if (OnlineTuningEnabled(options)) impl->StartOnlineTuning(options);
  return std::unique_ptr<Runtime>(new Runtime(std::move(impl)));
}

Result<Plan> Runtime::plan(const Problem& problem) {
  FT_RETURN_IF_ERROR(ValidateProblem(problem));
  return impl_->planner.PlanOn(impl_->planning, problem);
}

Result<Plan> Runtime::plan(const ForwardArgs& args) {
  FT_RETURN_IF_ERROR(ValidateProblem(args.problem));
  return impl_->planner.PlanCall(impl_->planning, args);
}

Status Runtime::forward(const ForwardArgs& args, CUstream stream) {
  FT_RETURN_IF_ERROR(ValidateForwardArgs(args));
  if (!IsMixedVarlen(args)) return impl_->launcher.Forward(args, stream);  // one launch: no copy of args
  const CallParts parts = MixedVarlenParts(args);  // a mixed varlen batch: decode part, then prefill
  for (int i = 0; i < parts.count; ++i) FT_RETURN_IF_ERROR(impl_->launcher.Forward(parts.part[i], stream));
  return Status::Ok();
}

Status Runtime::backward(const BackwardArgs& args, CUstream stream) {
  FT_RETURN_IF_ERROR(ValidateBackwardArgs(args));
  return impl_->launcher.Backward(args, stream);
}

const std::string& Runtime::db_path() const { return impl_->db.path(); }

bool Runtime::has_database() const { return impl_->db.is_open(); }

const DeviceRecord& Runtime::device() const { return impl_->planning.record; }

Result<int64_t> Runtime::workspace_size(const Problem& problem) const {
  FT_RETURN_IF_ERROR(ValidateProblem(problem));
  return WorkspaceBytes(problem, impl_->planning.record.sm_count);
}

}  // namespace flashtune
