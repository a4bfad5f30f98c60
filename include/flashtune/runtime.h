// flashtune/runtime.h — what applications call: a Runtime picks the best known kernel for an
// attention forward call and launches it on the caller's stream.
//
// Choosing (plan): the exact bucket's tuned winner for this GPU model + driver and this
// toolchain (kExact), else the winner of the nearest tuned bucket of the same dtype, head dim
// and causal flag (kNearest), else a neighbouring class's winner re-specialised to this class
// when its family serves it and it fits the device (kNeighbour: the other dtype, then the next
// larger or smaller tuned head dim; flashtune/neighbour_guess.h), else the preferred family's
// default tile for the class, fitted to the device's shared memory (kHeuristic). A GPU with no
// tuned winners at all is reported once through the log callback. Plans are cached per bucket.
//
// Backward: backward() plans a problem with operation kBackward under its own buckets
// ("bwd/...") and launches the backward family's kernels; see flashtune/backward_args.h.
//
// Launching (forward): arguments are validated first (nothing is launched on bad input); the
// kernel comes from a per (CUDA context, variant) cache; on a miss its cubin is read from the
// database (no NVRTC call for a tuned problem), else compiled on first use (through the on-disk
// cubin cache) and stored in the database when the database file exists. forward() never
// allocates device memory and never synchronises, so it may be captured into a CUDA graph
// (warm the kernel up once before capturing: loading a module is not capturable).
//
// Contexts: forward() runs in the calling thread's current CUDA context, which must be a
// device's primary context (the one the CUDA runtime and PyTorch use). With no current
// context it retains device 0's primary context and makes it current on the calling thread.
//
// Database: opened read-only, so a tuner may write to the same file concurrently. A missing
// file is not an error: the runtime plans heuristically until the file appears.
//
// Online tuning (opt-in: RuntimeOptions::online_tuning or FLASHTUNE_ONLINE_TUNE=1): a bucket
// without its own tuned winner is served at once by the plan above, while a background
// `flashtune tune` process tunes that one bucket with a small budget and records it in the
// database; then the runtime swaps the bucket's kernel for the winner, atomically, under running
// forward() calls. forward() never waits, allocates or synchronises for it; a failed, crashed or
// hung worker is logged once and the bucket keeps its guess; processes sharing a database tune a
// bucket once (claim files in <db>.online/). Needs a database this process can write
// (runtime/online_tuner.h has the details).
//
// Thread safety: a Runtime is thread-safe; many threads may share one and call plan() and
// forward() concurrently. The warm forward() path takes only a shared lock.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "flashtune/backward_args.h"
#include "flashtune/database.h"
#include "flashtune/export.h"
#include "flashtune/forward_args.h"
#include "flashtune/problem_set.h"
#include "flashtune/status.h"
#include "flashtune/variant.h"

typedef struct CUstream_st* CUstream;

FLASHTUNE_API_BEGIN
namespace flashtune {

enum class LogLevel { kDebug, kInfo, kWarning, kError };
// "debug" / "info" / "warning" / "error".
std::string_view LogLevelName(LogLevel level);

// Where a plan's variant came from.
// (kNeighbour is last so that the C ABI's numbers of the others stay what they were.)
enum class PlanSource { kExact, kNearest, kHeuristic, kNeighbour };
// "exact" / "nearest" / "heuristic" / "neighbour".
std::string_view PlanSourceName(PlanSource source);

struct RuntimeOptions {
  // The tuning database; "" means $FLASHTUNE_DB, else ./flashtune.db (DefaultDatabasePath()).
  std::string db_path;
  // Receives the runtime's reports (untuned GPU, compiles on first use, database problems).
  // Null: warnings and errors go to stderr prefixed "flashtune: ".
  std::function<void(LogLevel, const std::string&)> log;
  // Plan for this device instead of asking the driver (no GPU needed for plan(); forward()
  // still uses the real device of the current context). Useful for tests, the CLI and for
  // planning for another machine's GPU.
  std::optional<DeviceRecord> device_override;
  // Shared-memory opt-in limit for heuristic plans with device_override; 0 derives it from the
  // override's compute capability (MaxSharedMemoryForArch), else the sm_90 limit.
  int64_t max_smem_bytes = 0;
  // The compiler's on-disk cubin cache for first-use compiles ("" default, "-" disabled).
  std::string cache_dir;
  // Online tuning of untuned buckets in a background process (see above). nullopt: on when
  // $FLASHTUNE_ONLINE_TUNE is 1 (or true/on/yes), else off.
  std::optional<bool> online_tuning;
  // The flashtune CLI the worker runs; "": $FLASHTUNE_CLI, else bin/flashtune beside the
  // library's folder (an install, the Python package), else flashtune there (a build tree),
  // else flashtune on $PATH.
  std::string online_tuning_cli;
  // Measurements per bucket (the tune's --budget-per-problem); 0 means 16.
  int online_tuning_budget = 0;
  // Seconds a worker may run before it is killed; 0 means 300.
  int online_tuning_timeout_s = 0;
};

// Whether online tuning is on for `options` (its field, else $FLASHTUNE_ONLINE_TUNE).
bool OnlineTuningEnabled(const RuntimeOptions& options);

// What the runtime launches for a problem, and why.
struct Plan {
  Problem problem;                    // the problem asked about
  Variant variant;                    // what forward() launches
  PlanSource source = PlanSource::kHeuristic;
  BucketKey bucket;                   // the problem's bucket
  std::string bucket_name;            // BucketString(bucket)
  std::optional<Problem> tuned_problem;  // the problem the winner was tuned on (exact/nearest/neighbour)
  std::string tuned_bucket;           // its bucket ("" for heuristic)
  double tuned_median_us = 0;         // the winner's measured median, 0 when unknown (and for neighbour:
                                      // that time was of another class)
  double tuned_tflops = 0;            // 0 when unknown
  int distance = 0;                   // BucketDistance to the tuned bucket (0 for exact)
  std::string device_name;            // the GPU planned for ("" when none is known)
  std::string why;                    // one human sentence
};

class Runtime {
 public:
  // Opens a runtime. Never fails for a missing database file or a machine without a GPU
  // (plans are then heuristic; forward() then returns kNoDriver/kNoDevice). Errors:
  // kCorrupt / kUnsupported when the database file exists but cannot be used.
  static Result<std::unique_ptr<Runtime>> Open(const RuntimeOptions& options);
  static Result<std::unique_ptr<Runtime>> Open() { return Open(RuntimeOptions{}); }
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // The plan for `problem` on the planning device (device_override, else device 0, else none).
  // kInvalidArgument naming the field for an invalid problem; kDatabaseError when the lookup
  // fails.
  Result<Plan> plan(const Problem& problem);
  // The plan for one call, what forward(args) launches: plan(args.problem), or, where the
  // planned family cannot run these args (e.g. per-sequence key counts, strides TMA cannot
  // describe), the variant forward() falls back to, with why. Only the problem is validated;
  // the pointers are not read (a plan may be asked before the tensors exist; null ones stand
  // for tensors to come), and args forward() would refuse get the problem's plan.
  Result<Plan> plan(const ForwardArgs& args);

  // Runs attention on `stream` (a CUstream of the current context; nullptr = legacy default
  // stream). OK when the launch was queued; kInvalidArgument naming the argument (nothing is
  // launched); kNoDriver / kNoDevice; kUnsupported when the current context is not a primary
  // context; kCompileError / kOutOfResources / kDriverError otherwise. A mixed varlen batch
  // (args.varlen.decode_seqs) is two launches, each planned under its own bucket: the decode
  // sequences on decode_fwd, then the others on a prefill family (MixedVarlenParts).
  Status forward(const ForwardArgs& args, CUstream stream);

  // The backward pass (flashtune/backward_args.h) on `stream`: dq, dk, dv. Planned like
  // forward() under the problem's backward bucket; args.deterministic picks the variant that
  // accumulates dq in a fixed order. Allocates nothing (the caller's workspace,
  // args.forward.workspace, sized by workspace_size of args.problem()) and never synchronises, so it may be captured into a CUDA graph
  // once warmed up. Errors as forward(); kInvalidArgument also for a missing lse, d_o, dq, dk,
  // dv or a workspace that is too small.
  Status backward(const BackwardArgs& args, CUstream stream);
  // Workspace bytes forward() (or backward(), for a problem of operation kBackward) needs for
  // `problem` (its layout included) on the planning device: WorkspaceBytes(problem, its SM count). Stable per problem, so allocate once.
  // kInvalidArgument naming the field for an invalid problem.
  Result<int64_t> workspace_size(const Problem& problem) const;

  // The database path in use and whether a database file was opened.
  const std::string& db_path() const;
  bool has_database() const;
  // The planning device ("" name when none).
  const DeviceRecord& device() const;

 private:
  struct Impl;
  explicit Runtime(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace flashtune
FLASHTUNE_API_END
