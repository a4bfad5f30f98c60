// The runtime over a tuning database on the recording fake GPU (tests/fixtures/fake_gpu.h): the
// path a tuned user's forward() takes, which the plan()-only runtime tests (device_override, no
// launch) do not reach. A winner's kernel is compiled on first use and stored in the database,
// and a later process loads it from there; a database that turns up damaged is reported once,
// served around and left as it is; and online tuning swaps the launched kernel for the winner
// its worker records (Launcher::Refresh). Databases are tuned from replayed timings as the
// fake's own device, so the runtime's device and toolchain match them.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "flashtune/compiler.h"
#include "flashtune/database.h"
#include "flashtune/runtime.h"
#include "flashtune/source.h"
#include "tests/support/fake_gpu_record.h"
#include "tests/runtime/tuned_db.h"
#include "tests/support/log_lines.h"

namespace flashtune {
namespace {

using namespace flashtune::testing;
using namespace std::chrono_literals;

// bf16 d128 non-causal, small enough for host buffers: the tuned bucket (N 512) and an untuned
// one of the same class (N 1024), whose nearest winner is the tuned one's.
Problem Tuned() { return Problem{DType::kBF16, 128, false, 2, 512, 512, 4, 4}; }
Problem Untuned() { return Problem{DType::kBF16, 128, false, 2, 1024, 1024, 4, 4}; }

class FakeGpuRuntimeDatabase : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(UseFakeDevice(0));
    dir_ = TempDir(std::string("rtdb_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    db_ = dir_ + "/t.db";
  }

  // A runtime on db_ with its own (empty) cubin cache folder `cache`; every log line is kept.
  std::unique_ptr<Runtime> Open(const std::string& cache, const std::string& online_cli = "") {
    RuntimeOptions o;
    o.db_path = db_;
    o.cache_dir = dir_ + "/" + cache;
    o.online_tuning = !online_cli.empty();
    o.online_tuning_cli = online_cli;
    o.log = logs_.Sink();
    auto rt = Runtime::Open(o);
    EXPECT_TRUE(rt.ok()) << rt.status().ToString();
    return rt.ok() ? std::move(*rt) : nullptr;
  }

  int Logged(const std::string& text) const { return logs_.Count(text); }
  std::string AllLog() const { return logs_.All(); }

  // One forward() of `p` on fresh buffers; the kernel it launched ("" when it failed or launched
  // nothing).
  std::string LaunchedBy(Runtime& rt, const Problem& p) {
    HostBuffers b;
    ForwardArgs a = FakeCallArgs(p, b, 0);
    fake.Reset();
    Status s = rt.forward(a, nullptr);
    EXPECT_TRUE(s.ok()) << s.ToString();
    const auto launches = fake.Launches();
    return s.ok() && launches.size() == 1 ? std::string(launches[0].kernel) : "";
  }

  FakeGpuRecord fake;
  std::string dir_, db_;
  LogLines logs_;
};

// A tuned user's first call compiles the winner (the replayed tune stored no cubin) and keeps
// the cubin in the database; the next process loads that cubin and compiles nothing, though
// its cubin cache folder is empty.
TEST_F(FakeGpuRuntimeDatabase, AWinnerCompiledOnFirstUseIsStoredAndLoadedFromTheDatabaseAfter) {
  TuneSyntheticInto(db_, {Tuned()}, 7, FakeDeviceRecord());
  std::string winner;
  {
    auto rt = Open("cache-a");
    ASSERT_TRUE(rt);
    auto plan = rt->plan(Tuned());
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    ASSERT_EQ(plan->source, PlanSource::kExact) << plan->why;
    winner = plan->variant.Uri();
    EXPECT_EQ(LaunchedBy(*rt, Tuned()), winner);
    EXPECT_EQ(fake.ModuleLoads(), 1);
    EXPECT_EQ(Logged("compiling " + winner + " for sm_90a on first use"), 1) << AllLog();
  }
  auto source = GenerateSource(*Variant::FromUri(winner));
  ASSERT_TRUE(source.ok());
  {
    Database::OpenOptions ro;
    ro.read_only = true;
    auto db = Database::Open(db_, ro);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    auto stored = (*db)->GetCubin(source->sha256, "sm_90a", "", Compiler::NvrtcVersion());
    ASSERT_TRUE(stored.ok()) << stored.status().ToString();
    EXPECT_GT(stored->image.size(), 1000u);
    EXPECT_GT(stored->registers, 0);
  }
  logs_.Clear();
  auto again = Open("cache-b");
  ASSERT_TRUE(again);
  EXPECT_EQ(LaunchedBy(*again, Tuned()), winner);
  EXPECT_EQ(fake.ModuleLoads(), 1);
  EXPECT_EQ(Logged("compiling"), 0) << AllLog();
}

// A database that appears at the runtime's path after it opened (a tune writing it, a copy
// gone wrong) and cannot be read: said once, as an error, while calls go on on heuristic
// plans and compile their kernels; what the warnings say names that file as unreadable, never as
// missing; the file is never written.
TEST_F(FakeGpuRuntimeDatabase, ADamagedDatabaseIsReportedOnceServedAroundAndLeftAsItIs) {
  auto rt = Open("cache");
  ASSERT_TRUE(rt);
  const std::string junk(64 * 1024, 'x');
  std::ofstream(db_, std::ios::binary) << junk;
  for (const Problem& p : {Tuned(), Untuned()}) {
    auto plan = rt->plan(p);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_EQ(plan->source, PlanSource::kHeuristic) << plan->why;
    EXPECT_EQ(LaunchedBy(*rt, p), plan->variant.Uri());
  }
  EXPECT_EQ(Logged("error: cannot read the tuning database"), 1) << AllLog();
  // Neither "no tuning database" nor "no cubin in it": the file is there and unreadable.
  EXPECT_EQ(Logged("is not tuned: the tuning database at " + db_ + " cannot be read"), 2) << AllLog();  // plan(), forward()
  EXPECT_EQ(Logged("no tuning database"), 0) << AllLog();
  EXPECT_EQ(Logged("on first use (the tuning database cannot be read)"), 1) << AllLog();
  EXPECT_EQ(Logged("warning: cannot store compiled kernels in " + db_), 1) << AllLog();
  // A second kernel: compiled, not stored, and not said again.
  Problem causal = Tuned();
  causal.causal = true;
  EXPECT_FALSE(LaunchedBy(*rt, causal).empty());
  EXPECT_EQ(Logged("on first use (the tuning database cannot be read)"), 2) << AllLog();
  EXPECT_EQ(Logged("cannot store compiled kernels"), 1) << AllLog();
  EXPECT_EQ(ReadTextFile(db_), junk) << "the damaged database was modified";
}

// Online tuning on a device that launches: the untuned bucket runs its nearest winner at once;
// when the worker (a stand-in CLI that merges a prepared winner into the database) is done, the
// runtime loads the bucket's winner and later calls launch it. Every call in between launches
// one or the other.
TEST_F(FakeGpuRuntimeDatabase, OnlineTuningSwapsTheLaunchedKernelForTheRecordedWinner) {
  const DeviceRecord device = FakeDeviceRecord();
  TuneSyntheticInto(db_, {Tuned()}, 7, device);
  const std::string source = dir_ + "/source.db";
  TuneSyntheticInto(source, {Untuned()}, 30, device);  // another optimum: bn 64, 4 warps, 2 stages
  std::string recorded;
  {
    Database::OpenOptions ro;
    ro.read_only = true;
    auto db = Database::Open(source, ro);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    auto w = (*db)->FindWinner(device, CurrentToolchain(), BucketOf(Untuned()));
    ASSERT_TRUE(w.ok() && w->has_value());
    recorded = (*w)->variant.Uri();
  }
  const std::string cli = dir_ + "/fake-flashtune";
  std::ofstream(cli) << "#!/bin/sh\nsleep 0.3\nexec '" FLASHTUNE_CLI_PATH "' db merge '" << source
                     << "' --db \"$3\" --no-verify-cubins\n";
  ::chmod(cli.c_str(), 0755);

  auto rt = Open("cache", cli);
  ASSERT_TRUE(rt);
  auto plan = rt->plan(Untuned());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->source, PlanSource::kNearest) << plan->why;
  const std::string nearest = plan->variant.Uri();
  ASSERT_NE(nearest, recorded) << "the test needs two different kernels";

  std::vector<std::string> seen;
  const auto end = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < end) {
    seen.push_back(LaunchedBy(*rt, Untuned()));
    if (seen.back() == recorded) break;
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_EQ(seen.back(), recorded) << AllLog();
  EXPECT_EQ(seen.front(), nearest);
  for (const std::string& k : seen) EXPECT_TRUE(k == nearest || k == recorded) << k;
  EXPECT_EQ(Logged("cannot load the new plan"), 0) << AllLog();
  EXPECT_EQ(Logged("is tuned; its winner now serves it"), 1) << AllLog();
  // The tuned bucket's calls were not disturbed by the swap.
  EXPECT_EQ(LaunchedBy(*rt, Tuned()), nearest);
}

}  // namespace
}  // namespace flashtune
