// flashtune/gpu_measurer.h — the tuner's real Measurer: compiles a variant with NVRTC (through
// the cubin cache), then verifies and times it on one GPU inside a supervised worker process.
// The first candidate of a problem queues the problem's candidates (the class's space of each
// family that serves the problem, tuner/prefetch.h) for compilation on background threads
// (lower CPU priority), so NVRTC works while the GPU measures; a candidate needed before its
// turn is compiled at once. Prefetch(problem) queues another problem's candidates early: the
// tuner announces the next class while the current one measures.
//
// Per candidate, in the worker: load the cubin; run it on two ragged verification shapes of
// the problem's class (GQA, Nq != Nk, rows that see no key when causal) and compare with the
// float64 CPU reference (‖o−ref‖/‖ref‖ ≤ 1e-2 bf16, 2e-3 fp16; lse within 1e-3); run it on the
// timed shape and compare with the trusted variant's output (DefaultVariant of the class,
// itself checked against the reference); then time it: warm-up by time (longer before a
// problem's re-timing: retime_warmup_ms), at least 20 launches
// queued back to back in groups of up to 10 with one CUDA event between groups (so consecutive
// launches overlap as in a user's stream or graph: programmatic dependent launch), inputs rotated
// across enough copies to exceed the L2 three times, median and IQR of the groups' per-launch
// means. Outputs are poisoned (NaN) before every checked run. A problem's finalists are re-timed
// together in one request: their groups of launches interleaved (A B C C B A ...), so each is
// timed at the same mix of the card's clock and temperature (interleave_retime).
// A compile error, an out-of-resources launch, a wrong result, a fault and a timeout each
// come back as a Measurement whose status says so; after a fault or a timeout the worker is
// restarted, so the run goes on.
//
// The parent process never initialises CUDA. The worker is a fresh program: the flashtune CLI
// run as `flashtune __gpu-worker ...` (fork, then exec), found as GpuMeasurerOptions says.
// Without one the worker is a plain fork of this process, which CUDA allows only while this
// process has not initialised the driver, and NVRTC 13 initialises it whenever it compiles:
// such a worker works until its first restart (after a fault) and then fails with a message
// saying so.
//
// Thread safety: one GpuMeasurer per thread; several may run at once on different GPUs.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "flashtune/export.h"
#include "flashtune/tuner.h"

FLASHTUNE_API_BEGIN
namespace flashtune {

struct GpuMeasurerOptions {
  std::string cache_dir;      // cubin cache ("" = default, "-" = off)
  int compile_threads = 0;    // background compile threads; 0 = all cores
  int min_reps = 20;          // timed launches, at least (rounded up to whole groups)
  int max_reps = 100;         // and at most (and at most 128)
  double warmup_ms = 25;      // warm-up by time before timing
  // Warm-up before a problem's re-timing (its first Remeasure round: the finalists in turn when
  // interleaved, else the first finalist; later rounds follow back to back): the GPU held under
  // load this long first, so finalists are timed at the clock a sustained workload runs at. An H100 under
  // back-to-back load reaches its power cap and drops its clock by up to 18%, and tiles lose
  // unequally to that (d64's 64-row tiles 12%, its 192-row ones 7%), so a near-tie timed after
  // the search's idle gaps can rank the other way (docs/perf-notes.md, session 29). At most
  // warmup_ms means no extra load: the default, since d64 and d128 grids tuned both ways with
  // 1000 ms ran at the same geomeans, the changed picks faster by up to 4% either way (session 30).
  double retime_warmup_ms = 25;
  double timing_ms = 150;     // stop adding reps past this much kernel time (after min_reps)
  // Re-time a problem's finalists interleaved in one worker request (true), or one after another,
  // each warmed up and timed alone (false: the tuner before session 37). Timed one after another
  // on an H100, a finalist read up to 13% slower than in its search when the ones before it had
  // heated the card, and that decided picks (docs/perf-notes.md, "Interleaved re-timing").
  bool interleave_retime = true;
  double timeout_s = 60;      // per candidate, in the worker; then it is killed: kTimeout
  // Variant URI -> the full .cu text to compile instead of the generated source: tunes a
  // hand-edited kernel (same extern "C" name and parameter block), or plants a broken one.
  std::map<std::string, std::string> source_overrides;
  // The flashtune CLI that runs the worker. Empty: $FLASHTUNE_WORKER, else the CLI of this
  // build tree, else the installed one (bin/flashtune); a plain fork when none exists.
  std::string worker_executable;
};

// The hidden CLI command that runs the GPU worker (argv: ORDINAL REQUEST_FD REPLY_FD).
inline constexpr const char* kGpuWorkerCommand = "__gpu-worker";

// One measurer per requested device ordinal; an empty list means every GPU.
// kNoDriver / kNoDevice when there is none; kInvalidArgument naming `devices` for an ordinal
// that does not exist.
Result<std::vector<std::unique_ptr<Measurer>>> MakeGpuMeasurers(const std::vector<int>& devices,
                                                                const GpuMeasurerOptions& options = {});

}  // namespace flashtune
FLASHTUNE_API_END
