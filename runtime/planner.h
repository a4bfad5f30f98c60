// planner.h — the runtime's choice of kernel for a problem on a GPU, and its reason.
//
// The chain: the exact bucket's tuned winner for this GPU model + driver and this toolchain
// (kExact), else the winner of the nearest tuned bucket of the same class (kNearest), else a
// neighbouring class's winner that fits this class and GPU (kNeighbour; the policy is
// GuessFromNeighbours, flashtune/neighbour_guess.h), else the default variant of the most
// preferred family that serves the class on this GPU (kHeuristic).
// Plans are cached per (device, bucket). A GPU with no tuned winner at all is reported once.
// With online tuning on, a plan that is not the bucket's own winner asks the OnlineTuner to tune
// the bucket; once it has, Forget() drops the cached plan so the next one is the winner.
// The planner knows families only through the generator's registry: adding a family does not
// touch it.
//
// Thread safety: Plan() may be called from many threads; a DeviceState's plan cache is guarded by
// the planner's shared mutex.
#pragma once

#include <cstdint>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#include "flashtune/runtime.h"
#include "flashtune/space.h"
#include "generator/family.h"
#include "runtime/runtime_database.h"
#include "runtime/runtime_log.h"

namespace flashtune {

struct DeviceInfo;
class Driver;

// What the runtime knows about one GPU it plans for.
struct DeviceState {
  DeviceRecord record;        // name "" when no GPU is known
  std::string arch;           // NVRTC target, "" when none
  int64_t max_smem_bytes = kDefaultMaxSmemBytes;
  std::string absent_reason;  // why there is no GPU, when record.name is ""
  int ordinal = 0;            // the CUDA device index (0 for an override)

  // The family target planned for: the device's arch, or sm_90a when no GPU is known (plans for
  // the GPU the product is tuned on).
  Target target() const { return Target{arch.empty() ? std::string("sm_90a") : arch, max_smem_bytes}; }

  static DeviceState FromDevice(const DeviceInfo& info, const Driver& driver);
  // A device given by the application (RuntimeOptions::device_override); max_smem_bytes <= 0
  // derives the limit from the compute capability.
  static DeviceState FromOverride(const DeviceRecord& record, int64_t max_smem_bytes);
  static DeviceState Absent(std::string reason);

 private:
  friend class Planner;
  bool untuned_checked = false;
  std::unordered_map<uint64_t, Plan> plans;  // by BucketCode; guarded by Planner::mutex_
};

// A bucket and a layout packed into one integer: the plan and launch caches' hash key (a paged
// call of a dense bucket's shape may need another family).
uint64_t BucketCode(const BucketKey& bucket, Layout layout);

class OnlineTuner;

class Planner {
 public:
  Planner(RuntimeDatabase* db, const LogSink* log) : db_(db), log_(log) {}

  // Untuned buckets are sent to `online` (null: none). Set before the first plan.
  void SetOnlineTuner(OnlineTuner* online) { online_ = online; }

  // Drops `problem`'s cached plan on `device`, so that the next PlanOn looks it up again.
  void Forget(DeviceState& device, const Problem& problem);

  // The plan of `problem` (already validated) on `device`, cached per bucket.
  Result<Plan> PlanOn(DeviceState& device, const Problem& problem);
  // The plan of one call: PlanOn(args.problem), unless the planned family cannot run these args
  // (kUnsupported from packing: a layout it does not read, seqlens_k, strides TMA cannot
  // describe); then the variant forward() falls back to (FallbackVariant), a heuristic plan
  // whose `why` says what was planned and why it cannot run. Other packing errors (a workspace
  // too small, ...) are the call's to fix and leave the plan as it is.
  Result<Plan> PlanCall(DeviceState& device, const ForwardArgs& args);

  // The variant to launch when the planned variant cannot run a call (its CanRun said `why`): the
  // default of the family that fits the problem best (FamiliesFor), serves the class on
  // `device` and can run `args` (layout, seqlens_k, workspace, CanRun); the `planned` tile itself
  // in a family compiled from its template (hopper_paged for a tuned hopper_fwd tile on a dense
  // cache with lengths) where that family comes first and can run it.
  // The status `why` when none can.
  static Result<Variant> FallbackVariant(const DeviceState& device, const ForwardArgs& args, const Status& why,
                                         const Variant* planned = nullptr);
  // The variant for the calls of `problem` that pass per-sequence key counts on the dense
  // layout (a cache with lengths), given the problem's `planned` one: itself when its family
  // reads them, else the first family of FamiliesFor that does and serves the class on `device`,
  // with the planned tile where it is compiled from the same template (hopper_paged for a
  // hopper_fwd tile), else its default. What FallbackVariant picks for such a call whose only
  // obstacle is the lengths; forward() caches it, so such calls do not fall back each time.
  static Result<Variant> LengthsVariant(const DeviceState& device, const Problem& problem, const Variant& planned);
  // The same for a backward call (CanRunBackward): the fallback's `det` is the call's.
  static Result<Variant> FallbackBackwardVariant(const DeviceState& device, const BackwardArgs& args,
                                                 const Status& why);
  // A deterministic backward call whose planned family has no deterministic mode:
  // the default, with `det` 1, of the most preferred family serving `problem` on `device` that has
  // one. kUnsupported naming `planned` when none does.
  static Result<Variant> DeterministicVariant(const DeviceState& device, const Problem& problem,
                                              const Variant& planned);

 private:
  Result<Plan> Compute(DeviceState& device, const Problem& problem, const BucketKey& bucket, LogBatch* logs);

  RuntimeDatabase* db_;
  const LogSink* log_;
  OnlineTuner* online_ = nullptr;
  std::shared_mutex mutex_;
  uint64_t generation_ = 0;  // Forget() calls so far; guarded by mutex_
};

}  // namespace flashtune
