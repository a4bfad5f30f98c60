// The runtime's planner: exact → nearest → neighbour → heuristic, cached per (device, bucket).
#include "runtime/planner.h"

#include <cstdio>
#include <mutex>
#include <optional>
#include <utility>

#include "cache/gpu_model.h"
#include "flashtune/arch.h"
#include "flashtune/driver.h"
#include "flashtune/problem_set.h"
#include "flashtune/space.h"
#include "runtime/online_tuner.h"

namespace flashtune {
namespace {

std::string DescribeDevice(const DeviceRecord& d) {
  return d.name + " (cc " + std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor) + ", " +
         std::to_string(d.sm_count) + " SMs, driver " + d.driver_version + ")";
}

std::string FormatUs(double us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", us);
  return buf;
}

}  // namespace

uint64_t BucketCode(const BucketKey& b, Layout layout) {
  return static_cast<uint64_t>(b.dtype == DType::kBF16) | (static_cast<uint64_t>(b.causal) << 1) |
         (static_cast<uint64_t>(b.head_dim & 0x3ff) << 2) | (static_cast<uint64_t>(b.seqlen_q_bucket & 0xff) << 12) |
         (static_cast<uint64_t>(b.seqlen_k_bucket & 0xff) << 20) |
         (static_cast<uint64_t>(b.batch_heads_bucket & 0xff) << 28) | (static_cast<uint64_t>(layout) << 36) |
         (static_cast<uint64_t>(b.operation == Operation::kBackward) << 38) |
         (static_cast<uint64_t>(b.kv_group_bucket & 0xff) << 41);  // bit 40: the launcher's backward det flag
}

DeviceState DeviceState::FromDevice(const DeviceInfo& info, const Driver& driver) {
  DeviceState s;
  s.record = DeviceRecordOf(info, driver.VersionString());
  s.arch = info.Arch();
  s.max_smem_bytes = info.max_smem_per_block_optin > 0 ? info.max_smem_per_block_optin : kDefaultMaxSmemBytes;
  s.ordinal = info.ordinal;
  return s;
}

DeviceState DeviceState::FromOverride(const DeviceRecord& record, int64_t max_smem_bytes) {
  DeviceState s;
  s.record = record;
  if (!record.name.empty()) s.arch = ArchFor(record.cc_major, record.cc_minor);
  if (max_smem_bytes <= 0 && !s.arch.empty()) max_smem_bytes = MaxSharedMemoryForArch(s.arch);
  s.max_smem_bytes = max_smem_bytes > 0 ? max_smem_bytes : kDefaultMaxSmemBytes;
  if (record.name.empty()) s.absent_reason = "an empty device was given";
  return s;
}

DeviceState DeviceState::Absent(std::string reason) {
  DeviceState s;
  s.absent_reason = std::move(reason);
  return s;
}

Result<Plan> Planner::PlanOn(DeviceState& device, const Problem& problem) {
  const BucketKey bucket = BucketOf(problem);
  const uint64_t code = BucketCode(bucket, problem.layout);
  uint64_t generation = 0;
  {
    std::shared_lock lock(mutex_);
    auto it = device.plans.find(code);
    if (it != device.plans.end()) {
      Plan plan = it->second;
      plan.problem = problem;
      return plan;
    }
    generation = generation_;
  }
  LogBatch logs;
  Result<Plan> computed = Compute(device, problem, bucket, &logs);
  log_->Emit(logs);
  if (!computed.ok()) return computed;
  if (auto family = FamilyOf(computed->variant); family.ok()) {
    std::string why;
    Variant twin = (*family)->TwinFor(computed->variant, problem, &why);
    if (!why.empty() && (*family)->Check(twin, device.target().max_smem_bytes).ok()) {
      computed->variant = std::move(twin);
      computed->why += "; " + why;
    }
  }
  // Tuned or not, a plan on a family other than the most preferred says why those before it
  // have no kernels for the call (the tuner searched only the families that have).
  const std::string passed = PassedOver(problem, device.target(), computed->variant.family);
  if (!passed.empty()) computed->why += "; not " + passed;
  if (online_ != nullptr && computed->source != PlanSource::kExact)
    online_->Request(device.record, device.ordinal, problem);
  std::unique_lock lock(mutex_);
  // Not cached when a Forget() came in meanwhile: this plan may predate the winner it announced.
  if (generation_ == generation) device.plans.emplace(code, *computed);
  return computed;
}

void Planner::Forget(DeviceState& device, const Problem& problem) {
  std::unique_lock lock(mutex_);
  device.plans.erase(BucketCode(BucketOf(problem), problem.layout));
  ++generation_;
}

Result<Plan> Planner::Compute(DeviceState& device, const Problem& problem, const BucketKey& bucket, LogBatch* logs) {
  Plan plan;
  plan.problem = problem;
  plan.bucket = bucket;
  plan.bucket_name = BucketString(bucket);
  plan.device_name = device.record.name;
  const bool have_device = !device.record.name.empty();
  bool check_tuned = false;
  {
    std::unique_lock lock(mutex_);
    check_tuned = !device.untuned_checked;
    device.untuned_checked = true;
  }
  const Target target = device.target();
  auto found = db_->FindWinner(device.record, bucket, target, check_tuned, logs);
  if (!found.ok()) return found.status();
  if (check_tuned) {
    std::string gap;
    if (!have_device) {
      gap = "no CUDA GPU to plan for (" + device.absent_reason + ")";
    } else if (found->database_unreadable) {
      gap = DescribeDevice(device.record) + " is not tuned: the tuning database at " + db_->path() +
            " cannot be read";
    } else if (!found->database_open) {
      gap = DescribeDevice(device.record) + " is not tuned: no tuning database at " + db_->path();
    } else if (!found->device_has_winners) {
      gap = DescribeDevice(device.record) + " is not tuned with this toolchain (nvrtc " +
            db_->toolchain().nvrtc_version + ", flashtune " + db_->toolchain().generator_version + ") in " +
            db_->path();
    }
    if (!gap.empty())
      logs->push_back({LogLevel::kWarning, gap + "; using built-in default kernels (run `flashtune tune`)"});
  }
  const std::string who = have_device ? device.record.name : std::string("no GPU");
  // A bucket whose own winner was tuned by another build says so: "not tuned" would send the
  // user looking for a tune that did run.
  const std::string stale_winner =
      found->stale_toolchain.empty() ? std::string()
                                     : "winner was tuned with " + found->stale_toolchain + "; `flashtune tune` re-tunes it";
  const std::string stale = stale_winner.empty() ? std::string() : " with this build (its " + stale_winner + ")";
  std::string unfit;  // why a tuned winner cannot serve this problem's layout
  if (const std::optional<WinnerRow>& winner = found->winner) {
    if (!VariantServes(winner->variant, problem)) {
      unfit = "the tuned winner " + winner->variant.Uri() + " of bucket " + BucketString(winner->bucket) +
              " cannot serve " + std::string(LayoutName(problem.layout)) + " calls; ";
      found->winner.reset();
    }
  }
  if (const std::optional<WinnerRow>& winner = found->winner) {
    const bool exact = found->exact;
    plan.variant = winner->variant;
    plan.source = exact ? PlanSource::kExact : PlanSource::kNearest;
    plan.tuned_problem = winner->problem;
    plan.tuned_bucket = BucketString(winner->bucket);
    plan.tuned_median_us = winner->median_us;
    plan.tuned_tflops = winner->tflops;
    plan.distance = exact ? 0 : winner->distance;
    if (exact) {
      plan.why = "tuned winner of bucket " + plan.bucket_name + " on " + who + " (tuned on " +
                 winner->problem.ToString() + ": " + FormatUs(winner->median_us) + " us)";
    } else {
      plan.why = "bucket " + plan.bucket_name + " is not tuned on " + who + stale + "; nearest tuned bucket " +
                 plan.tuned_bucket + " (distance " + std::to_string(plan.distance) + ", tuned on " +
                 winner->problem.ToString() + ": " + FormatUs(winner->median_us) + " us)";
    }
    return plan;
  }
  const ProblemClass cls = ClassOf(problem);
  // A paged call is never planned on a dense winner (problem_set.h): say where paged ones come from.
  const std::string kind = bucket.paged ? "paged " : "";
  // Where this bucket's tune comes from: the decode set makes paged problems of up to 16 queries;
  // prefill over pages (more) only a problem-set file does.
  const bool paged_decode = problem.seqlen_q <= kDecodeMaxQueries;
  const std::string paged_hint =
      !bucket.paged ? ""
                    : " (paged calls are tuned on pages, apart from dense ones: " +
                          (paged_decode ? std::string("`flashtune tune --decode only --decode-layouts paged`, or "
                                                      "layout=paged in a problem-set file")
                                        : "prefill over pages by a problem-set file, `flashtune tune --problem-set "
                                          "FILE` with a line like `" + FormatProblemLine(problem) + "`") +
                          ")";
  const std::optional<NeighbourGuess>& guess = found->guess;
  if (guess && VariantServes(guess->variant, problem)) {
    plan.variant = guess->variant;
    plan.source = PlanSource::kNeighbour;
    plan.tuned_problem = guess->from.problem;
    plan.tuned_bucket = BucketString(guess->from.bucket);
    plan.why = "no tuned " + kind + "bucket of class " + cls.ToString() + " on " + who + stale + paged_hint +
               "; the neighbouring class's " +
               guess->from.variant_uri + " (" + guess->reason + ", tuned on " + guess->from.problem.ToString() +
               ": " + FormatUs(guess->from.median_us) + " us) as " + plan.variant.Uri();
    return plan;
  }
  auto chosen = DefaultVariantFor(problem, target.max_smem_bytes, target.arch);
  if (!chosen.ok()) return chosen.status();
  plan.variant = *chosen;
  plan.source = PlanSource::kHeuristic;
  FT_RETURN_IF_ERROR(CheckVariant(plan.variant, target.max_smem_bytes));
  auto family = FamilyOf(plan.variant);
  plan.why = unfit + "no tuned " + kind + "bucket of class " + cls.ToString() + " on " + who + " with this toolchain" +
             (have_device ? "" : " (no device to match tuned rows)") +
             (stale_winner.empty() ? "" : " (this bucket's " + stale_winner + ")") + paged_hint +
             "; " + plan.variant.family +
             "'s default tile " + (family.ok() ? (*family)->Describe(plan.variant) : std::string()) + " for " +
             target.arch + ", fitted to " + std::to_string(target.max_smem_bytes) + " bytes of shared memory";
  const std::string reason = family.ok() ? (*family)->DefaultReason(problem, target) : std::string();
  if (!reason.empty()) plan.why += " (" + reason + ")";
  return plan;
}

namespace {
// The default of the most preferred family serving `problem` on `device` (FamiliesFor) that
// passes its own rules and `fits` (which may set the variant's parameters), else nothing.
// With `planned`: a family compiled from the planned variant's template (hopper_fwd and
// hopper_paged, fa2_fwd and fa2_paged) first tries the planned tile, which a tune picked.
template <typename Fits>
std::optional<Variant> FirstFittingDefault(const DeviceState& device, const Problem& problem, Fits fits,
                                           const Variant* planned = nullptr) {
  const Target target = device.target();
  const ProblemClass cls = ClassOf(problem);
  const Family* planned_family = planned != nullptr ? FindFamily(planned->family) : nullptr;
  for (const Family* family : FamiliesFor(problem)) {
    if (!family->Serves(cls, target)) continue;
    if (planned_family != nullptr && family != planned_family &&
        family->template_name() == planned_family->template_name()) {
      Variant twin = *planned;
      twin.family = std::string(family->name());
      if (family->Check(twin, target.max_smem_bytes).ok() && fits(twin)) return twin;
    }
    Variant v = family->DefaultFor(problem, target);
    if (fits(v) && family->Check(v, target.max_smem_bytes).ok()) return v;
  }
  return std::nullopt;
}
}  // namespace

Result<Plan> Planner::PlanCall(DeviceState& device, const ForwardArgs& args) {
  auto plan = PlanOn(device, args.problem);
  if (!plan.ok()) return plan;
  // Packing assumes valid args. The tensors' addresses are not the plan's business (it may be
  // asked before they exist): placeholders stand in for null ones. Args that are still invalid
  // (forward() would refuse them) get the problem's plan.
  ForwardArgs call = args;
  alignas(256) static const char placeholder[16] = {};
  for (const void** p : {&call.q, &call.k, &call.v})
    if (*p == nullptr) *p = placeholder;
  if (call.o == nullptr) call.o = const_cast<char*>(placeholder);  // never written: nothing is launched
  if (!ValidateForwardArgs(call).ok()) return plan;
  LaunchPacket trial;  // as the launcher packs the planned kernel; launches nothing
  trial.sm_count = device.record.sm_count;
  const Status can = PackValidatedForward(plan->variant, call, &trial);
  if (can.code() != Code::kUnsupported) return plan;
  auto fallback = FallbackVariant(device, call, can, &plan->variant);
  if (!fallback.ok()) return fallback.status();
  const bool same_tile = fallback->params == plan->variant.params;
  plan->why = plan->variant.Uri() + " (" + std::string(PlanSourceName(plan->source)) + ") cannot run this call: " +
              can.message() + "; forward() falls back to " +
              (same_tile ? "the same tile in " + std::string(fallback->family) + ", " + fallback->Uri()
                         : std::string(fallback->family) + "'s default") +
              ", the first family that can";
  plan->variant = std::move(*fallback);
  plan->source = PlanSource::kHeuristic;
  plan->tuned_problem.reset();
  plan->tuned_bucket.clear();
  plan->tuned_median_us = 0;
  plan->tuned_tflops = 0;
  plan->distance = 0;
  return plan;
}

Result<Variant> Planner::FallbackVariant(const DeviceState& device, const ForwardArgs& args, const Status& why,
                                         const Variant* planned) {
  auto v = FirstFittingDefault(
      device, args.problem,
      [&](const Variant& v) {
        LaunchPacket trial;  // packing checks layout, seqlens_k, workspace and CanRun; launches nothing
        trial.sm_count = device.record.sm_count;
        return PackValidatedForward(v, args, &trial).ok();
      },
      planned);
  return v ? Result<Variant>(std::move(*v)) : Result<Variant>(why);
}

Result<Variant> Planner::LengthsVariant(const DeviceState& device, const Problem& problem, const Variant& planned) {
  const Family* f = FindFamily(planned.family);
  if (f != nullptr && f->reads_seqlens_k()) return planned;
  auto v = FirstFittingDefault(
      device, problem, [](const Variant& v) { return FindFamily(v.family)->reads_seqlens_k(); }, &planned);
  if (v) return std::move(*v);
  return Status(Code::kUnsupported, "no family serving " + problem.ToString() + " on this device reads per-sequence "
                                    "key counts (seqlens_k)");
}

Result<Variant> Planner::FallbackBackwardVariant(const DeviceState& device, const BackwardArgs& args,
                                                 const Status& why) {
  auto v = FirstFittingDefault(device, args.problem(), [&](Variant& v) {
    LaunchPacket trial;  // packing checks the workspace and CanRunBackward; launches nothing
    trial.sm_count = device.record.sm_count;
    return SetDeterminism(v, args.problem(), args.deterministic) && PackValidatedBackward(v, args, &trial).ok();
  });
  return v ? Result<Variant>(std::move(*v)) : Result<Variant>(why);
}

Result<Variant> Planner::DeterministicVariant(const DeviceState& device, const Problem& problem,
                                              const Variant& planned) {
  auto v = FirstFittingDefault(device, problem, [&](Variant& v) { return SetDeterminism(v, problem, true); });
  if (v) return std::move(*v);
  return Status(Code::kUnsupported, "deterministic backward: " + planned.Uri() +
                                        " has no deterministic mode and no family serving " + problem.ToString() +
                                        " on this device has one");
}

}  // namespace flashtune
