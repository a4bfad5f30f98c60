// The GPU worker's launch timing (tuner/launch_timing.h) against a recording clock: a simulated
// stream where a launch that directly follows another overlaps with it (as programmatic
// dependent launches do) and one after an event record or a synchronisation does not.
#include "tuner/launch_timing.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace flashtune::detail {
namespace {

// Launch costs kIsolatedUs after an event or sync, kChainedUs right after another launch.
constexpr double kIsolatedUs = 12.0, kChainedUs = 10.0;

class RecordingClock final : public LaunchClock {
 public:
  explicit RecordingClock(int events) : stamps_(events, -1.0) {}
  int EventCount() const override { return int(stamps_.size()); }
  Status Record(int event) override {
    ops_ += 'E';
    stamps_[event] = now_us_;
    last_was_launch_ = false;
    return Status::Ok();
  }
  Status Launch(size_t kernel, size_t input) override {
    ops_ += 'L';
    inputs_.push_back(input);
    kernels_.push_back(kernel);
    const double base = (last_was_launch_ ? kChainedUs : kIsolatedUs) + jitter_us_ * double(inputs_.size() % 3);
    // A card that heats under load: every launch slower by `drift_` per microsecond run so far.
    now_us_ += base * (kernel < scale_.size() ? scale_[kernel] : 1.0) * (1.0 + drift_ * now_us_);
    last_was_launch_ = true;
    return Status::Ok();
  }
  Status Synchronize() override {
    ops_ += 'S';
    last_was_launch_ = false;
    return Status::Ok();
  }
  Result<double> ElapsedMs(int from, int to) override {
    if (stamps_[from] < 0 || stamps_[to] < 0) return Status(Code::kInternal, "event not recorded");
    return (stamps_[to] - stamps_[from]) / 1000.0;
  }

  std::string ops_;  // E record, L launch, S synchronise, in order
  std::vector<size_t> inputs_, kernels_;
  double jitter_us_ = 0;
  double drift_ = 0;
  std::vector<double> scale_;  // kernel k's launches cost scale_[k] times the base (default 1)

 private:
  std::vector<double> stamps_;
  double now_us_ = 0;
  bool last_was_launch_ = false;
};

TEST(LaunchTiming, LaunchesOfAGroupRunBackToBackBetweenSingleEvents) {
  RecordingClock clock(129);
  auto t = TimeLaunchGroups(clock, 7, /*min_reps=*/20, /*max_reps=*/100, /*timing_ms=*/1e9);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const int k = LaunchesPerGroup(100);
  ASSERT_EQ(k, 10);
  EXPECT_EQ(t->reps, 100);
  // Every batch: a lead launch, then E followed by groups of exactly k launches each closed by E.
  const std::string group = std::string(size_t(k), 'L') + "E";
  size_t pos = 0, groups = 0;
  while (pos < clock.ops_.size()) {
    ASSERT_EQ(clock.ops_.substr(pos, 2), "LE") << "at " << pos << " in " << clock.ops_;
    pos += 2;
    while (clock.ops_.compare(pos, group.size(), group) == 0) {
      pos += group.size();
      ++groups;
    }
    ASSERT_EQ(clock.ops_[pos], 'S') << "at " << pos << " in " << clock.ops_;
    ++pos;
  }
  EXPECT_EQ(groups, 10u);
  // The group's time over its launches: one unoverlapped launch (after the event) and k-1
  // chained ones. Per-launch event pairs would have measured kIsolatedUs.
  EXPECT_DOUBLE_EQ(t->median_us, (kIsolatedUs + (k - 1) * kChainedUs) / k);
  EXPECT_DOUBLE_EQ(t->iqr_us, 0.0);
  // Input sets rotate from the caller's next index, lead launches included.
  ASSERT_FALSE(clock.inputs_.empty());
  for (size_t i = 0; i < clock.inputs_.size(); ++i) EXPECT_EQ(clock.inputs_[i], 7 + i);
}

TEST(LaunchTiming, RepsCountLaunchesWithinMinAndMaxInWholeGroups) {
  RecordingClock quick(129);  // timing_ms reached at once: stops after min_reps, rounded up
  auto t = TimeLaunchGroups(quick, 0, 25, 100, 0.0);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->reps, 30);
  RecordingClock small(129);  // few reps: smaller groups so that max_reps still gives 4 samples
  t = TimeLaunchGroups(small, 0, 4, 8, 1e9);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(LaunchesPerGroup(8), 2);
  EXPECT_EQ(t->reps, 8);
  RecordingClock one(129);
  t = TimeLaunchGroups(one, 0, 1, 1, 1e9);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->reps, 1);
  EXPECT_DOUBLE_EQ(t->median_us, kIsolatedUs);
}

TEST(LaunchTiming, IqrSpreadsOverGroupMeans) {
  RecordingClock clock(129);
  clock.jitter_us_ = 3.0;  // launches cost 0, 3 or 6 us extra in turn: group means differ
  auto t = TimeLaunchGroups(clock, 0, 40, 40, 1e9);  // groups of 10, 4 samples
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->reps, 40);
  EXPECT_GT(t->iqr_us, 0.0);
  EXPECT_GT(t->median_us, kChainedUs);
  EXPECT_LT(t->median_us, kIsolatedUs + 6.0);
}

// Groups of the kernels alternate A B C C B A ... between single events, each kernel timed as
// often as the others, and inputs rotate across all launches.
TEST(LaunchTiming, InterleavedKernelsTakeTheirGroupsInSerpentineTurns) {
  RecordingClock clock(129);
  auto t = TimeInterleavedGroups(clock, 3, 0, /*min_reps=*/40, /*max_reps=*/40, /*timing_ms=*/1e9);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->size(), 3u);
  for (const LaunchTiming& one : *t) EXPECT_EQ(one.reps, 40);
  // Kernel of each launch after the batch's lead, one letter per group of 10.
  ASSERT_EQ(clock.kernels_.size(), 1u + 3 * 40);
  std::string order;
  for (size_t i = 1; i < clock.kernels_.size(); i += 10) {
    for (size_t j = i; j < i + 10; ++j) ASSERT_EQ(clock.kernels_[j], clock.kernels_[i]) << "launch " << j;
    order += char('A' + clock.kernels_[i]);
  }
  EXPECT_EQ(order, "ABCCBAABCCBA");
  EXPECT_EQ(clock.kernels_[0], 0u);  // the lead launch is the first group's kernel
  for (size_t i = 0; i < clock.inputs_.size(); ++i) EXPECT_EQ(clock.inputs_[i], i);
}

// The reason for interleaving: on a card that slows as it heats, two equal kernels timed one
// after the other read differently (the second slower), and interleaved they read the same,
// while a kernel that is truly 10% slower still reads so.
TEST(LaunchTiming, InterleavingCancelsACardThatSlowsUnderLoad) {
  constexpr double kDrift = 2e-5;  // +2% per millisecond of load
  RecordingClock one_by_one(129);
  one_by_one.drift_ = kDrift;
  auto first = TimeLaunchGroups(one_by_one, 0, 80, 80, 1e9);
  auto second = TimeLaunchGroups(one_by_one, 0, 80, 80, 1e9);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_GT(second->median_us, first->median_us * 1.01);
  RecordingClock together(129);
  together.drift_ = kDrift;
  auto t = TimeInterleavedGroups(together, 2, 0, 80, 80, 1e9);
  ASSERT_TRUE(t.ok());
  EXPECT_NEAR((*t)[1].median_us / (*t)[0].median_us, 1.0, 0.005);
  RecordingClock unequal(129);
  unequal.drift_ = kDrift;
  unequal.scale_ = {1.0, 1.1};
  t = TimeInterleavedGroups(unequal, 2, 0, 80, 80, 1e9);
  ASSERT_TRUE(t.ok());
  EXPECT_NEAR((*t)[1].median_us / (*t)[0].median_us, 1.1, 0.01);
}

// Every kernel gets as many groups as the fastest needs to reach timing_ms of kernel time
// (kernel 1, twice as slow, gets past it on the way).
TEST(LaunchTiming, InterleavedKernelsStopTogether) {
  RecordingClock clock(129);
  clock.scale_ = {1.0, 2.0};
  auto t = TimeInterleavedGroups(clock, 2, 0, 20, 1000, /*timing_ms=*/1.0);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ((*t)[0].reps, (*t)[1].reps);
  // Groups of 10 launches: kernel 0's take ~102 us, kernel 1's ~204 us: 1 ms needs 10 of kernel 0's.
  EXPECT_GE((*t)[0].reps * (*t)[0].median_us, 1000.0);
  EXPECT_LT((*t)[0].reps, 160);
}

// One pass over the input sets reads at least 3x the L2 wherever the cap allows: d64 decode at
// B1 x 2k (4 MB a set on an H100's 50 MB L2) took 8 sets, 32 MB, before session 40.
TEST(LaunchTiming, TimedInputSetsReadThreeL2sPerPass) {
  const long long l2 = 50LL << 20;
  for (double mb : {1.5, 4.0, 8.0, 19.0, 64.0, 149.0, 151.0, 2048.0}) {
    const double bytes = mb * (1 << 20);
    const int sets = TimedInputSets(bytes, l2);
    SCOPED_TRACE(mb);
    EXPECT_GE(sets * bytes, 3.0 * l2);
    EXPECT_LT((sets - 1) * bytes, 3.0 * l2);  // no more than that takes
  }
  EXPECT_EQ(TimedInputSets(4.0 * (1 << 20), l2), 38);
  EXPECT_EQ(TimedInputSets(2048.0 * (1 << 20), l2), 1);
  // Tiny sets stop at the cap; no L2 size known, or an empty set: the bounds.
  EXPECT_EQ(TimedInputSets(4096.0, l2), kMaxTimedInputSets);
  EXPECT_EQ(TimedInputSets(0.0, l2), kMaxTimedInputSets);
  EXPECT_EQ(TimedInputSets(4.0 * (1 << 20), 0), 1);
}

TEST(LaunchTiming, TooFewEventsIsAnError) {
  RecordingClock clock(1);
  auto t = TimeLaunchGroups(clock, 0, 10, 10, 1e9);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("2 events"), std::string::npos);
  EXPECT_TRUE(clock.ops_.empty());
  RecordingClock three(3);  // three kernels need a group each per batch: four events
  auto many = TimeInterleavedGroups(three, 3, 0, 10, 10, 1e9);
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.status().message().find("3 kernel(s) needs at least 4 events"), std::string::npos)
      << many.status().message();
  EXPECT_TRUE(three.ops_.empty());
}

}  // namespace
}  // namespace flashtune::detail
