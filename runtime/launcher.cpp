// forward()'s contexts, loaded kernels and launch cache.
#include "runtime/launcher.h"

#include <vector>

namespace flashtune {

namespace {
// A dense call with per-sequence key counts has its own launch-table entry (bit 39 of the
// BucketCode is free): on sm_90a the bucket's hopper_fwd kernel cannot read the lengths, and
// finding the kernel that can on every call (the fallback) cost 2.5 us of host time.
constexpr uint64_t kLengthsBit = uint64_t(1) << 39;
}  // namespace

Result<std::pair<Driver*, CUcontext>> Launcher::Current() {
  Driver* driver = driver_.load(std::memory_order_acquire);
  if (driver == nullptr) {
    auto loaded = Driver::Load();
    if (!loaded.ok()) return loaded.status();
    driver = *loaded;
    driver_.store(driver, std::memory_order_release);
  }
  auto current = driver->CurrentContext();
  if (!current.ok()) return current.status();
  return std::make_pair(driver, *current);
}

Result<Launcher::Call> Launcher::KernelForCall(const Problem& problem, bool deterministic, bool lengths,
                                               uint64_t code, int64_t workspace_bytes) {
  auto current = Current();
  if (!current.ok()) return current.status();
  auto [driver, context] = *current;
  if (context != nullptr) {
    if (const ForwardKernel* kernel = launch_table_.Find(context, code)) return Call{driver, context, kernel};
  }
  std::lock_guard lock(load_mutex_);
  auto prepared = Prepare(*driver, context, problem, deterministic, lengths, code, workspace_bytes);
  if (!prepared.ok()) return prepared.status();
  return Call{driver, context, *prepared};
}

template <typename Pick>
Result<const ForwardKernel*> Launcher::Fallback(Driver* driver, CUcontext context, const Problem& problem,
                                                const Status& why, Pick pick) {
  if (context == nullptr) {  // Prepare made the primary current
    auto made = driver->CurrentContext();
    if (made.ok()) context = *made;
  }
  std::lock_guard lock(load_mutex_);
  auto cs = contexts_.find(context);
  if (cs == contexts_.end() || cs->second.device == nullptr) return why;
  Result<Variant> variant = pick(*cs->second.device);
  if (!variant.ok()) return variant.status();
  if (!kernels_.count({context, variant->Uri()}))
    log_->Log(LogLevel::kWarning,
              "falling back to " + variant->Uri() + " for " + problem.ToString() + ": " + why.message());
  return KernelFor(context, cs->second, *variant);
}

Status Launcher::Backward(const BackwardArgs& args, CUstream stream) {
  // The deterministic variant is another kernel: its own launch-cache entry.
  const uint64_t code = BucketCode(BucketOf(args.problem()), Layout::kDense) ^ (uint64_t(args.deterministic) << 40);
  auto call = KernelForCall(args.problem(), args.deterministic, false, code, args.forward.workspace_bytes);
  if (!call.ok()) return call.status();
  auto [driver, context, kernel] = *call;
  Status launched = kernel->LaunchBackwardValidated(args, stream);
  if (launched.code() != Code::kUnsupported) return launched;
  // The planned family cannot run this call (e.g. strides TMA cannot describe; nothing launched).
  auto fallback = Fallback(driver, context, args.problem(), launched, [&](const DeviceState& device) {
    return Planner::FallbackBackwardVariant(device, args, launched);
  });
  if (!fallback.ok()) return fallback.status();
  return (*fallback)->LaunchBackwardValidated(args, stream);
}

Status Launcher::Forward(const ForwardArgs& args, CUstream stream) {
  const bool lengths = DenseWithLengths(args);
  const uint64_t code = BucketCode(BucketOf(args.problem), args.problem.layout) | (lengths ? kLengthsBit : 0);
  auto call = KernelForCall(args.problem, false, lengths, code, args.workspace_bytes);
  if (!call.ok()) return call.status();
  auto [driver, context, kernel] = *call;
  Status launched = kernel->LaunchValidated(args, stream);
  if (launched.code() != Code::kUnsupported) return launched;
  // The planned family cannot run this call (its CanRun said why; nothing was launched).
  auto fallback = Fallback(driver, context, args.problem, launched, [&](const DeviceState& device) {
    return Planner::FallbackVariant(device, args, launched, &kernel->variant());
  });
  if (!fallback.ok()) return fallback.status();
  return (*fallback)->LaunchValidated(args, stream);
}

Result<Launcher::ContextState*> Launcher::ContextFor(const Driver& driver, CUcontext current) {
  CUcontext context = current;
  if (context == nullptr) {
    // No current context: use device 0's primary context (and leave it current).
    auto primary = Context::Primary(driver, 0);
    if (!primary.ok()) return primary.status();
    context = primary->get();
    if (!contexts_.count(context)) {
      ContextState state;
      state.retained = std::make_unique<Context>(std::move(*primary));
      contexts_.emplace(context, std::move(state));
    }
  }
  auto cs = contexts_.find(context);
  if (cs == contexts_.end()) {
    auto found = driver.CurrentDeviceOrdinal();
    if (!found.ok()) return Status(found.status().code(), "forward: " + found.status().message());
    const int ordinal = *found;
    auto primary = Context::Primary(driver, ordinal);  // makes the primary current
    if (!primary.ok()) return primary.status();
    if (primary->get() != context) {
      (void)driver.SetCurrentContext(context);  // give the caller back its context
      return Status(Code::kUnsupported,
                    "forward: the current CUDA context is not the primary context of device " +
                        std::to_string(ordinal) +
                        "; flashtune launches in primary contexts (those the CUDA runtime and PyTorch use)");
    }
    ContextState state;
    state.retained = std::make_unique<Context>(std::move(*primary));
    cs = contexts_.emplace(context, std::move(state)).first;
  }
  if (cs->second.device == nullptr) {
    const int ordinal = cs->second.retained->ordinal();
    auto& slot = by_ordinal_[ordinal];
    if (!slot) {
      auto info = driver.Device(ordinal);
      if (!info.ok()) return info.status();
      slot = std::make_unique<DeviceState>(DeviceState::FromDevice(*info, driver));
    }
    cs->second.device = slot.get();
  }
  return &cs->second;
}

Result<const ForwardKernel*> Launcher::KernelFor(CUcontext context, ContextState& state, const Variant& variant) {
  auto key = std::make_pair(context, variant.Uri());
  auto k = kernels_.find(key);
  if (k != kernels_.end()) return k->second.get();
  LogBatch logs;
  auto cubin = db_->CubinFor(variant, state.device->arch, &logs);
  log_->Emit(logs);
  if (!cubin.ok()) return cubin.status();
  auto kernel = ForwardKernel::Load(*state.retained, *cubin, variant);
  if (!kernel.ok()) return kernel.status();
  return kernels_.emplace(key, std::make_unique<ForwardKernel>(std::move(*kernel))).first->second.get();
}

Result<const ForwardKernel*> Launcher::Prepare(const Driver& driver, CUcontext current, const Problem& problem,
                                               bool deterministic, bool lengths, uint64_t code,
                                               int64_t workspace_bytes) {
  auto state = ContextFor(driver, current);
  if (!state.ok()) return state.status();
  CUcontext context = (*state)->retained->get();
  auto planned = PlannedVariant(*(*state)->device, problem, lengths);
  if (!planned.ok()) return planned.status();
  Variant variant = std::move(*planned);
  if (problem.operation == Operation::kBackward) {
    // The planned family's policy for det (and its other deterministic parameters); a family
    // without a deterministic mode: another family's default serves.
    if (!SetDeterminism(variant, problem, deterministic)) {
      auto det = Planner::DeterministicVariant(*(*state)->device, problem, variant);
      if (!det.ok()) return det.status();
      if (!kernels_.count({context, det->Uri()}))
        log_->Log(LogLevel::kInfo, "deterministic backward of " + problem.ToString() + ": " + variant.Uri() +
                                       " has no deterministic mode; " + det->Uri() + " serves it");
      variant = *det;
    }
  }
  FT_RETURN_IF_ERROR(CheckCallWorkspace(variant, problem, workspace_bytes, (*state)->device->record.sm_count));
  auto kernel = KernelFor(context, **state, variant);
  if (!kernel.ok()) return kernel.status();
  launch_table_.Publish(context, code, *kernel);
  return *kernel;
}

Result<Variant> Launcher::PlannedVariant(DeviceState& device, const Problem& problem, bool lengths) {
  auto plan = planner_->PlanOn(device, problem);
  if (!plan.ok()) return plan.status();
  if (!lengths) return std::move(plan->variant);
  return Planner::LengthsVariant(device, problem, plan->variant);
}

void Launcher::Refresh(const Problem& problem) {
  const uint64_t code = BucketCode(BucketOf(problem), problem.layout);
  std::lock_guard lock(load_mutex_);
  for (auto& [ordinal, device] : by_ordinal_) planner_->Forget(*device, problem);
  std::vector<std::pair<CUcontext, uint64_t>> launching;  // the bucket's entries, with lengths or not
  launch_table_.ForEach([&](const void* context, uint64_t c, const ForwardKernel*) {
    if ((c & ~kLengthsBit) == code) launching.emplace_back(static_cast<CUcontext>(const_cast<void*>(context)), c);
  });
  for (auto [context, c] : launching) {
    auto cs = contexts_.find(context);
    if (cs == contexts_.end() || cs->second.device == nullptr) continue;
    auto planned = PlannedVariant(*cs->second.device, problem, c != code);
    Result<const ForwardKernel*> kernel = planned.ok() ? KernelFor(context, cs->second, *planned)
                                                       : Result<const ForwardKernel*>(planned.status());
    if (!kernel.ok()) {
      log_->Log(LogLevel::kWarning, "online tuning: cannot load the new plan of " + problem.ToString() + ": " +
                                        kernel.status().ToString() + "; the old kernel stays");
      continue;
    }
    launch_table_.Publish(context, c, *kernel);  // the swap: callers see the old or the new kernel
  }
}

}  // namespace flashtune
