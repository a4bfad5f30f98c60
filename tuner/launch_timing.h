// Launch timing: how the GPU worker turns timed launches into a median and an IQR per launch.
//
// Contract: launches run back to back in groups of LaunchesPerGroup(max_reps), with ONE event
// recorded between consecutive groups (lead e0 L L L e1 L L L e2 ...; the untimed lead launch
// keeps the GPU busy while the host queues) and no host synchronisation inside a batch of groups. A sample is a group's event time divided by its launches (the
// per-launch mean); median and IQR are over those samples. This is how an engine's stream or
// CUDA graph runs kernels: consecutive launches may overlap (programmatic dependent launch:
// the decode kernels' griddepcontrol) and each kernel's tail is paid as users pay it. Bracketing
// every launch with its own event pair (the measure before round 5) forbade that overlap and
// timed kernels in isolation, and the tuner then ranked decode variants against the runtime's
// experience (docs/perf-notes.md, "Decode round 5"). `reps` counts launches, as
// GpuMeasurerOptions says: at least min_reps, at most max_reps, rounded to whole groups.
//
// Several kernels timed against each other (TimeInterleavedGroups: a problem's finalists) take
// their groups in turn — A B C C B A A B C ... between the same single events — so each sees
// the same mix of the card's clock and temperature over the run. Timed one after another, a
// later kernel runs on a card its predecessors heated: on an H100 under back-to-back load the
// SM clock falls by up to 18% within about a second (the 700 W cap), and a finalist timed last
// read 6-13% slow, which decided picks (docs/perf-notes.md, "Interleaved re-timing").
//
// Thread safety: free functions over the caller's LaunchClock; no state of their own.
#pragma once

#include <cstddef>
#include <vector>

#include "flashtune/status.h"

namespace flashtune::detail {

// What timing needs from the GPU: the worker's stream and events, or a test's recorder.
class LaunchClock {
 public:
  virtual ~LaunchClock() = default;
  virtual int EventCount() const = 0;             // events usable as 0..EventCount()-1
  virtual Status Record(int event) = 0;           // record `event` on the stream
  virtual Status Launch(size_t kernel, size_t input) = 0;  // queue one launch of `kernel` on input set `input`
  virtual Status Synchronize() = 0;               // wait for the stream
  virtual Result<double> ElapsedMs(int from, int to) = 0;  // both recorded and complete
};

struct LaunchTiming {
  double median_us = 0;  // per launch, median over groups of the group's mean
  double iqr_us = 0;     // of the same per-group means
  int reps = 0;          // launches timed
};

// Input sets a timed problem rotates through (a launch per set, in turn): enough that one pass
// over them reads at least 3x the L2, so each launch finds its inputs in DRAM, as an engine's
// call finds a layer's K/V after the other layers ran; at most kMaxTimedInputSets (sets under
// 3x L2 / 128, ~1.2 MB on a 50 MB L2, stay partly cached: calls that small are bound by their
// latency, not their reads); at least one. (The cap was 8 before session 40: sets under ~19 MB,
// such as d64 decode at B1 x 2k, 4 MB, were timed from the L2.)
constexpr int kMaxTimedInputSets = 128;
int TimedInputSets(double set_bytes, long long l2_bytes);

// Launches per group: 10 (9 of 10 boundaries overlap as in a stream; decode_bench's graphs
// chain >= 20) but at most max_reps / 4, so a run of max_reps launches still gives >= 4 samples.
int LaunchesPerGroup(int max_reps);

// Times kernel 0's launches on input, input+1, ... (the caller warmed up already). Stops once
// `min_reps` launches are timed and their time reaches timing_ms, or at `max_reps` launches.
Result<LaunchTiming> TimeLaunchGroups(LaunchClock& clock, size_t first_input, int min_reps, int max_reps,
                                      double timing_ms);

// Times kernels 0 .. kernels-1 in interleaved groups, each as TimeLaunchGroups times one: the
// same group size, and min_reps, max_reps and timing_ms for each kernel (every kernel gets the
// same number of groups: the run goes on until each has run timing_ms). One timing per kernel.
Result<std::vector<LaunchTiming>> TimeInterleavedGroups(LaunchClock& clock, size_t kernels, size_t first_input,
                                                        int min_reps, int max_reps, double timing_ms);

}  // namespace flashtune::detail
