// launcher.h — forward()'s half of the runtime: the CUDA contexts it launches in, the kernel
// loaded for each (context, variant), and a launch cache from (context, bucket) to kernel so
// that a warm call costs a lock-free hash lookup before the launch (runtime/launch_table.h).
//
// The cold path (first call of a bucket in a context) retains the context's primary context,
// plans through the Planner, and loads the variant's cubin (the database's, else compiled on
// first use). When the planned family cannot run a particular call (its CanRun says
// kUnsupported, e.g. strides TMA cannot describe) the call goes to the planner's fallback
// variant, said once per variant. A dense call with per-sequence key counts has its own launch
// entry, holding the kernel that reads them (Planner::LengthsVariant: on sm_90a the bucket's
// hopper_fwd tile as hopper_paged), so such calls do not take the fallback path each time.
//
// Online tuning: Refresh() (called on the online tuner's thread once a bucket is tuned) replans
// the bucket in every context that launches it, loads the winner there and swaps the launch
// entry; kernels are never unloaded before the runtime dies, so a call still launching the old
// kernel is safe.
//
// Thread safety: Forward may be called from many threads; the warm path takes no lock, the cold
// path and Refresh one mutex.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "flashtune/driver.h"
#include "flashtune/kernel.h"
#include "runtime/launch_table.h"
#include "runtime/planner.h"

namespace flashtune {

class Launcher {
 public:
  Launcher(Planner* planner, RuntimeDatabase* db, const LogSink* log) : planner_(planner), db_(db), log_(log) {}

  // Launches `args` (already validated) on `stream` in the calling thread's current context.
  Status Forward(const ForwardArgs& args, CUstream stream);
  // The same for a backward call: the plan of its backward bucket, with the variant's `det`
  // parameter set from args.deterministic.
  Status Backward(const BackwardArgs& args, CUstream stream);

  // Replans `problem`'s bucket in every context that has launched it and publishes the new plan's
  // kernel there. Failures are logged; the old kernel then stays.
  void Refresh(const Problem& problem);

 private:
  struct ContextState {
    std::unique_ptr<Context> retained;  // the primary context, retained for the runtime's life
    DeviceState* device = nullptr;
  };

  // The loaded driver (cached after the first success) and the calling thread's context.
  Result<std::pair<Driver*, CUcontext>> Current();
  struct Call {
    Driver* driver;
    CUcontext context;  // the calling thread's (null when it had none: Prepare made one current)
    const ForwardKernel* kernel;
  };
  // The kernel for a call of `problem` cached under `code`: the warm lookup, else Prepare.
  Result<Call> KernelForCall(const Problem& problem, bool deterministic, bool lengths, uint64_t code,
                             int64_t workspace_bytes);
  // Cold path: context, plan of `problem` (its variant's `det` set to `deterministic` when the
  // plan is a backward one; a deterministic call whose planned family has none gets another
  // family's default, Planner::DeterministicVariant; a dense call with per-sequence key counts,
  // `lengths`, gets Planner::LengthsVariant), the call's workspace (CheckCallWorkspace:
  // one too small for the family is refused before anything is compiled or loaded),
  // kernel; caches it under `code`. Caller holds load_mutex_.
  Result<const ForwardKernel*> Prepare(const Driver& driver, CUcontext current, const Problem& problem,
                                       bool deterministic, bool lengths, uint64_t code, int64_t workspace_bytes);
  // The variant `problem`'s plan on `device` gives (a lengths call's: Planner::LengthsVariant).
  Result<Variant> PlannedVariant(DeviceState& device, const Problem& problem, bool lengths);
  Result<ContextState*> ContextFor(const Driver& driver, CUcontext current);
  // The kernel of `variant` loaded in `context`, loading it on a miss. Caller holds load_mutex_.
  Result<const ForwardKernel*> KernelFor(CUcontext context, ContextState& state, const Variant& variant);
  // A call the planned family refused (`why`, kUnsupported: nothing launched): the kernel of the
  // variant `pick(device)` chooses (Planner::FallbackVariant / FallbackBackwardVariant), loaded
  // on a miss and logged once. Takes load_mutex_.
  template <typename Pick>
  Result<const ForwardKernel*> Fallback(Driver* driver, CUcontext context, const Problem& problem, const Status& why,
                                       Pick pick);

  Planner* planner_;
  RuntimeDatabase* db_;
  const LogSink* log_;

  std::atomic<Driver*> driver_{nullptr};  // cached after the first successful Driver::Load
  std::mutex load_mutex_;                 // one cold path at a time
  // Declared before the kernels so that contexts outlive the modules loaded into them.
  std::map<int, std::unique_ptr<DeviceState>> by_ordinal_;
  std::map<CUcontext, ContextState> contexts_;
  std::map<std::pair<CUcontext, std::string>, std::unique_ptr<ForwardKernel>> kernels_;
  // (context, BucketCode, with kLengthsBit for a dense call with seqlens_k) → kernel; writes under load_mutex_
  LaunchTable<ForwardKernel> launch_table_;
};

}  // namespace flashtune
