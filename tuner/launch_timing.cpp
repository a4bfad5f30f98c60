// Grouped launch timing (see launch_timing.h for the measure and why).
#include "tuner/launch_timing.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace flashtune::detail {

int LaunchesPerGroup(int max_reps) { return std::clamp(max_reps / 4, 1, 10); }

int TimedInputSets(double set_bytes, long long l2_bytes) {
  if (l2_bytes <= 0) return 1;
  if (!(set_bytes > 0)) return kMaxTimedInputSets;
  const double sets = std::ceil(3.0 * double(l2_bytes) / set_bytes);
  return int(std::clamp(sets, 1.0, double(kMaxTimedInputSets)));
}

Result<std::vector<LaunchTiming>> TimeInterleavedGroups(LaunchClock& clock, size_t kernels, size_t first_input,
                                                        int min_reps, int max_reps, double timing_ms) {
  if (kernels == 0) return Status(Code::kInternal, "launch timing needs at least one kernel");
  max_reps = std::max(max_reps, 1);
  min_reps = std::clamp(min_reps, 1, max_reps);
  const int per_group = LaunchesPerGroup(max_reps);
  const int max_groups = std::max(1, max_reps / per_group);  // per kernel, as are the others
  const int min_groups = std::clamp((min_reps + per_group - 1) / per_group, 1, max_groups);
  // Groups per batch (between host synchronisations): one event more than groups, and whole
  // sweeps (a group of every kernel) only, so no kernel is timed more often than another.
  const int k = int(kernels);
  if (clock.EventCount() < k + 1)
    return Status(Code::kInternal, "launch timing of " + std::to_string(k) + " kernel(s) needs at least " +
                                       std::to_string(k + 1) + " events");
  const int sweeps_per_batch = (clock.EventCount() - 1) / k;
  size_t input = first_input;
  std::vector<std::vector<double>> samples(kernels);
  std::vector<double> total_ms(kernels, 0.0);
  int sweeps = 0;
  auto done = [&] {
    if (sweeps >= max_groups) return true;
    if (sweeps < min_groups) return false;
    return *std::min_element(total_ms.begin(), total_ms.end()) >= timing_ms;
  };
  // Sweep s runs the kernels forwards when s is even and backwards when odd (A B C C B A ...):
  // over any two sweeps each kernel's groups sit at the same mean position in time.
  auto kernel_at = [&](int sweep, int slot) { return sweep % 2 == 0 ? slot : k - 1 - slot; };
  while (!done()) {
    const int batch = std::min({min_groups, max_groups - sweeps, sweeps_per_batch});
    // An untimed lead launch: the GPU is busy with it while the host queues the first group, so
    // group 0 holds no host launch latency, and its first launch follows a kernel as in a stream.
    FT_RETURN_IF_ERROR(clock.Launch(size_t(kernel_at(sweeps, 0)), input++));
    FT_RETURN_IF_ERROR(clock.Record(0));
    int event = 0;
    for (int s = sweeps; s < sweeps + batch; ++s)
      for (int slot = 0; slot < k; ++slot) {
        for (int l = 0; l < per_group; ++l) FT_RETURN_IF_ERROR(clock.Launch(size_t(kernel_at(s, slot)), input++));
        FT_RETURN_IF_ERROR(clock.Record(++event));
      }
    FT_RETURN_IF_ERROR(clock.Synchronize());
    event = 0;
    for (int s = sweeps; s < sweeps + batch; ++s)
      for (int slot = 0; slot < k; ++slot, ++event) {
        auto ms = clock.ElapsedMs(event, event + 1);
        if (!ms.ok()) return ms.status();
        const size_t which = size_t(kernel_at(s, slot));
        samples[which].push_back(*ms * 1000.0 / per_group);
        total_ms[which] += *ms;
      }
    sweeps += batch;
  }
  std::vector<LaunchTiming> out(kernels);
  for (size_t i = 0; i < kernels; ++i) {
    std::vector<double>& x = samples[i];
    std::sort(x.begin(), x.end());
    auto quantile = [&](double f) { return x[std::min(x.size() - 1, size_t(f * double(x.size() - 1) + 0.5))]; };
    out[i].median_us = quantile(0.5);
    out[i].iqr_us = quantile(0.75) - quantile(0.25);
    out[i].reps = int(x.size()) * per_group;
  }
  return out;
}

Result<LaunchTiming> TimeLaunchGroups(LaunchClock& clock, size_t first_input, int min_reps, int max_reps,
                                      double timing_ms) {
  auto timings = TimeInterleavedGroups(clock, 1, first_input, min_reps, max_reps, timing_ms);
  if (!timings.ok()) return timings.status();
  return timings->front();
}

}  // namespace flashtune::detail
