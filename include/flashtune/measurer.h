// flashtune/measurer.h — what the tuning engine asks of a device: compile, verify and time one
// variant on one problem (Measurer), and what comes back (Measurement, CandidateResult).
// The GPU measurer is in flashtune/gpu_measurer.h, the replay one in flashtune/replay_measurer.h.
//
// Thread safety: a Measurer is used by one thread at a time.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "flashtune/database.h"
#include "flashtune/export.h"
#include "flashtune/status.h"
#include "flashtune/toolchain.h"  // CurrentToolchain, which measurers report
#include "flashtune/variant.h"

FLASHTUNE_API_BEGIN
namespace flashtune {

// One candidate's outcome. status is the candidate's result (ok, compile_error,
// out_of_resources, wrong_result, fault, timeout ...); timings are meaningful when ok.
struct Measurement {
  Status status;
  double median_us = 0;
  double iqr_us = 0;
  int reps = 0;
  int registers = 0;    // per thread, the most any kernel of the module uses
  int smem_bytes = 0;
  int spill_bytes = 0;  // spill stores + loads, the most of any kernel of the module
  double compile_ms = 0;
  std::string source_hash;  // sha256 of the emitted source, "" when unknown
};

class Measurer {
 public:
  virtual ~Measurer() = default;
  virtual DeviceRecord Device() const = 0;
  virtual ToolchainInfo Toolchain() const = 0;
  // Compiles, verifies and times `variant` on `problem`. A failing candidate is an OK Result
  // whose Measurement.status says why; an error Result means the measurer itself cannot go on
  // (no driver, replay data missing), which stops this device's run.
  virtual Result<Measurement> Measure(const Problem& problem, const Variant& variant) = 0;
  // Re-times already verified candidates, in the given (shuffled) order; one Measurement each,
  // same order. The default calls Measure for each.
  virtual Result<std::vector<Measurement>> Remeasure(const Problem& problem, const std::vector<Variant>& variants);
  // Registers per thread of `variant`'s compiled kernel, compiling it (or reading the cubin
  // cache) without launching it: what a strategy needs to predict occupancy before measuring.
  // The compile error's status when it does not compile; kUnsupported (the default) when this
  // measurer cannot tell.
  virtual Result<int> CompiledRegisters(const Variant& variant);
  // A hint that `problem` comes next: the GPU measurer queues its class's compiles on its
  // background threads, so they are ready when its first candidate is. The default ignores it.
  virtual void Prefetch(const Problem& /*problem*/) {}
};

// The candidates of a problem (the search space) on `device`: the GPU they are measured on, whose
// arch and shared memory decide which families and tiles exist (a tune over GPUs of two
// architectures searches each GPU's own space). An empty record (name "": no GPU, as in a dry
// run or a compile-only run) means the enumerator's own target. The CLI passes
// EnumerateSpaceFor over the device's target (SpaceOptionsOn, tuner/device_space.h).
using EnumerateFn = std::function<Result<std::vector<Variant>>(const Problem&, const DeviceRecord&)>;


struct CandidateResult {
  Variant variant;
  Measurement measurement;
  bool ok() const { return measurement.status.ok(); }
};

}  // namespace flashtune
FLASHTUNE_API_END
