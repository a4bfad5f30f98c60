// launcher.h — forward()'s half of the runtime: the CUDA contexts it launches in, the kernel
// loaded for each (context, variant), and a launch cache from (context, bucket) to kernel so
// that a warm call costs a shared lock and a hash lookup before the launch.
//
// The cold path (first call of a bucket in a context) retains the context's primary context,
// plans through the Planner, and loads the variant's cubin (the database's, else compiled on
// first use). When the planned family cannot run a particular call (its CanRun says
// kUnsupported, e.g. strides TMA cannot describe) the call goes to the planner's fallback
// variant, said once per variant.
//
// Thread safety: Forward may be called from many threads; the warm path takes only a shared
// lock, the cold path one mutex.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "flashtune/driver.h"
#include "flashtune/kernel.h"
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

 private:
  struct ContextState {
    std::unique_ptr<Context> retained;  // the primary context, retained for the runtime's life
    DeviceState* device = nullptr;
  };
  struct PairHash {
    size_t operator()(const std::pair<CUcontext, uint64_t>& k) const {
      return std::hash<const void*>()(k.first) ^ (std::hash<uint64_t>()(k.second) * 0x9e3779b97f4a7c15ull);
    }
  };

  // The loaded driver (cached after the first success) and the calling thread's context.
  Result<std::pair<Driver*, CUcontext>> Current();
  struct Call {
    Driver* driver;
    CUcontext context;  // the calling thread's (null when it had none: Prepare made one current)
    const ForwardKernel* kernel;
  };
  // The kernel for a call of `problem` cached under `code`: the warm lookup, else Prepare.
  Result<Call> KernelForCall(const Problem& problem, bool deterministic, uint64_t code);
  // Cold path: context, plan of `problem` (its variant's `det` set to `deterministic` when the
  // plan is a backward one), kernel; caches it under `code`. Caller holds load_mutex_.
  Result<const ForwardKernel*> Prepare(const Driver& driver, CUcontext current, const Problem& problem,
                                       bool deterministic, uint64_t code);
  Result<ContextState*> ContextFor(const Driver& driver, CUcontext current);
  // The kernel of `variant` loaded in `context`, loading it on a miss. Caller holds load_mutex_.
  Result<const ForwardKernel*> KernelFor(CUcontext context, ContextState& state, const Variant& variant);
  Result<const ForwardKernel*> Fallback(CUcontext context, const ForwardArgs& args, const Status& why);

  Planner* planner_;
  RuntimeDatabase* db_;
  const LogSink* log_;

  std::atomic<Driver*> driver_{nullptr};  // cached after the first successful Driver::Load
  std::mutex load_mutex_;                 // one cold path at a time
  // Declared before the kernels so that contexts outlive the modules loaded into them.
  std::map<int, std::unique_ptr<DeviceState>> by_ordinal_;
  std::map<CUcontext, ContextState> contexts_;
  std::map<std::pair<CUcontext, std::string>, std::unique_ptr<ForwardKernel>> kernels_;
  std::shared_mutex launch_mutex_;
  std::unordered_map<std::pair<CUcontext, uint64_t>, const ForwardKernel*, PairHash> launch_cache_;
};

}  // namespace flashtune
