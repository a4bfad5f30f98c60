// Grouped launch timing (see launch_timing.h for the measure and why).
#include "tuner/launch_timing.h"

#include <algorithm>
#include <vector>

namespace flashtune::detail {

int LaunchesPerGroup(int max_reps) { return std::clamp(max_reps / 4, 1, 10); }

Result<LaunchTiming> TimeLaunchGroups(LaunchClock& clock, size_t first_input, int min_reps, int max_reps,
                                      double timing_ms) {
  max_reps = std::max(max_reps, 1);
  min_reps = std::clamp(min_reps, 1, max_reps);
  const int per_group = LaunchesPerGroup(max_reps);
  const int max_groups = std::max(1, max_reps / per_group);
  const int min_groups = std::clamp((min_reps + per_group - 1) / per_group, 1, max_groups);
  // Groups per batch (between host synchronisations): one event more than groups.
  if (clock.EventCount() < 2) return Status(Code::kInternal, "launch timing needs at least 2 events");
  const int batch_limit = clock.EventCount() - 1;
  size_t input = first_input;
  std::vector<double> samples;
  double total_ms = 0;
  while (int(samples.size()) < max_groups && (int(samples.size()) < min_groups || total_ms < timing_ms)) {
    const int groups = std::min({min_groups, max_groups - int(samples.size()), batch_limit});
    // An untimed lead launch: the GPU is busy with it while the host queues the first group, so
    // group 0 holds no host launch latency, and its first launch follows a kernel as in a stream.
    FT_RETURN_IF_ERROR(clock.Launch(input++));
    FT_RETURN_IF_ERROR(clock.Record(0));
    for (int g = 0; g < groups; ++g) {
      for (int l = 0; l < per_group; ++l) FT_RETURN_IF_ERROR(clock.Launch(input++));
      FT_RETURN_IF_ERROR(clock.Record(g + 1));
    }
    FT_RETURN_IF_ERROR(clock.Synchronize());
    for (int g = 0; g < groups; ++g) {
      auto ms = clock.ElapsedMs(g, g + 1);
      if (!ms.ok()) return ms.status();
      samples.push_back(*ms * 1000.0 / per_group);
      total_ms += *ms;
    }
  }
  std::sort(samples.begin(), samples.end());
  auto quantile = [&](double f) { return samples[std::min(samples.size() - 1, size_t(f * (samples.size() - 1) + 0.5))]; };
  LaunchTiming t;
  t.median_us = quantile(0.5);
  t.iqr_us = quantile(0.75) - quantile(0.25);
  t.reps = int(samples.size()) * per_group;
  return t;
}

}  // namespace flashtune::detail
