// Online tuning without a GPU: the worker is a shell script standing in for the flashtune CLI
// (RuntimeOptions::online_tuning_cli, the seam). It logs each call and then either records the
// planted bucket's winner with the real CLI (`db merge` from a database tuned on replayed
// timings), fails, crashes, hangs or records nothing. Plans are made for TunedDevice() through
// device_override, so a bucket's switch from guess to winner is seen through plan().
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "flashtune/runtime.h"
#include "runtime/online_tuner.h"
#include "tests/runtime/tuned_db.h"
#include "tests/support/log_lines.h"

namespace flashtune {
namespace {

using namespace flashtune::testing;
using namespace std::chrono_literals;

// Tuned: bf16 d128 non-causal Nq 512 and 2048. Planted: Nq 1024 of that class, untuned, so it
// plans as kNearest until a worker records it.
Problem Planted() {
  Problem p;
  p.dtype = DType::kBF16;
  p.head_dim = 128;
  p.batch = 16;
  p.seqlen_q = p.seqlen_k = 1024;
  p.heads_q = p.heads_kv = 16;
  return p;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int Lines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

class OnlineTuning : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir(std::string("online_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    db_ = MakeTunedDatabase(dir_);
    source_ = dir_ + "/source.db";
    TuneSyntheticInto(source_, {Planted()}, 31);
    calls_ = dir_ + "/calls.txt";
  }

  // The stand-in CLI: appends its arguments to calls.txt, sleeps `delay`, then does `then`.
  std::string FakeCli(const std::string& then, const std::string& delay = "0.3") {
    const std::string path = dir_ + "/fake-flashtune";
    std::ofstream(path) << "#!/bin/sh\n"
                        << "echo \"$*\" >> '" << calls_ << "'\n"
                        << "sleep " << delay << "\n"
                        << then << "\n";
    ::chmod(path.c_str(), 0755);
    return path;
  }
  // Records the planted bucket's winner into the database the worker was given (--db is $3).
  std::string MergingCli(const std::string& delay = "0.3") {
    return FakeCli("exec '" FLASHTUNE_CLI_PATH "' db merge '" + source_ + "' --db \"$3\" --no-verify-cubins", delay);
  }

  std::unique_ptr<Runtime> Open(const std::string& cli, std::optional<bool> online = true, int timeout_s = 0) {
    RuntimeOptions o;
    o.db_path = db_;
    o.device_override = TunedDevice();
    o.online_tuning = online;
    o.online_tuning_cli = cli;
    o.online_tuning_timeout_s = timeout_s;
    o.log = logs_.Sink();
    auto rt = Runtime::Open(o);
    EXPECT_TRUE(rt.ok()) << rt.status().ToString();
    return rt.ok() ? std::move(*rt) : nullptr;
  }

  PlanSource SourceOf(Runtime& rt) {
    auto plan = rt.plan(Planted());
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    return plan.ok() ? plan->source : PlanSource::kHeuristic;
  }

  // Polls until `done` or `limit`; returns done().
  template <typename F>
  bool WaitFor(F done, std::chrono::milliseconds limit = 20s) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!done() && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(20ms);
    return done();
  }

  int Logged(const std::string& text) const { return logs_.Count(text); }
  std::string AllLog() const { return logs_.All(); }

  std::string dir_, db_, source_, calls_;
  LogLines logs_;
};

TEST_F(OnlineTuning, ClaimsAnUntunedBucketOnceAcrossTwoRuntimes) {
  const std::string cli = MergingCli("1");
  auto a = Open(cli);
  auto b = Open(cli);
  ASSERT_TRUE(a && b);
  // Both are served the nearest bucket's winner at once and both ask for the bucket.
  EXPECT_EQ(SourceOf(*a), PlanSource::kNearest);
  EXPECT_EQ(SourceOf(*b), PlanSource::kNearest);
  EXPECT_TRUE(WaitFor([&] { return SourceOf(*a) == PlanSource::kExact && SourceOf(*b) == PlanSource::kExact; }))
      << AllLog();
  const std::string calls = ReadText(calls_);
  EXPECT_EQ(Lines(calls), 1) << calls;
  EXPECT_NE(calls.find("tune --db " + db_ + " --problem-set "), std::string::npos) << calls;
  EXPECT_NE(calls.find("--strategy budgeted --budget-per-problem 16 --devices 0"), std::string::npos) << calls;
  // A runtime opened later finds the winner in the database and spawns nothing.
  auto c = Open(cli);
  ASSERT_TRUE(c);
  EXPECT_EQ(SourceOf(*c), PlanSource::kExact);
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(Lines(ReadText(calls_)), 1);
}

TEST_F(OnlineTuning, FailingWorkerIsLoggedOnceAndNotRetried) {
  const std::string cli = FakeCli("exit 3");
  {
    auto a = Open(cli);
    ASSERT_TRUE(a);
    EXPECT_EQ(SourceOf(*a), PlanSource::kNearest);
    EXPECT_TRUE(WaitFor([&] { return Logged("failed") > 0; })) << AllLog();
    EXPECT_EQ(Logged("ended with exit code 3"), 1) << AllLog();
    EXPECT_EQ(SourceOf(*a), PlanSource::kNearest);  // the guess stays
  }
  // Another runtime on the same database reads the failed claim and does not spawn again.
  auto b = Open(cli);
  ASSERT_TRUE(b);
  EXPECT_EQ(SourceOf(*b), PlanSource::kNearest);
  EXPECT_TRUE(WaitFor([&] { return Logged("an earlier worker failed on it") > 0; })) << AllLog();
  EXPECT_EQ(Lines(ReadText(calls_)), 1);
}

TEST_F(OnlineTuning, CrashingWorkerIsSurvived) {
  auto a = Open(FakeCli("kill -SEGV $$"));
  ASSERT_TRUE(a);
  EXPECT_EQ(SourceOf(*a), PlanSource::kNearest);
  EXPECT_TRUE(WaitFor([&] { return Logged("signal 11") > 0; })) << AllLog();
  EXPECT_EQ(SourceOf(*a), PlanSource::kNearest);
}

TEST_F(OnlineTuning, HangingWorkerIsKilledAtItsTimeLimit) {
  auto a = Open(FakeCli("sleep 600"), true, /*timeout_s=*/1);
  ASSERT_TRUE(a);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(SourceOf(*a), PlanSource::kNearest);
  EXPECT_TRUE(WaitFor([&] { return Logged("time limit of 1 s") > 0; }, 10s)) << AllLog();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 8s);
  EXPECT_EQ(SourceOf(*a), PlanSource::kNearest);
}

TEST_F(OnlineTuning, WorkerThatRecordsNothingIsAFailure) {
  auto a = Open(FakeCli("exit 0"));
  ASSERT_TRUE(a);
  EXPECT_EQ(SourceOf(*a), PlanSource::kNearest);
  EXPECT_TRUE(WaitFor([&] { return Logged("recorded no winner") > 0; })) << AllLog();
}

TEST_F(OnlineTuning, SwapIsSafeWhileOtherThreadsPlan) {
  auto a = Open(MergingCli("0.5"));
  ASSERT_TRUE(a);
  std::atomic<bool> stop{false};
  std::atomic<int> errors{0}, regressions{0}, exact_seen{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      bool exact = false;
      while (!stop.load()) {
        auto plan = a->plan(Planted());
        if (!plan.ok()) {
          ++errors;
          continue;
        }
        if (plan->source == PlanSource::kExact) {
          exact = true;
        } else if (exact) {
          ++regressions;  // once the winner is published no caller may see the guess again
        }
      }
      exact_seen += exact;
    });
  }
  const bool swapped = WaitFor([&] { return SourceOf(*a) == PlanSource::kExact; });
  std::this_thread::sleep_for(100ms);
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_TRUE(swapped) << AllLog();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(regressions.load(), 0);
  EXPECT_EQ(exact_seen.load(), 4);
}

// A paged call's bucket is its own: the worker is asked to tune the paged problem (the
// problem-set line says layout=paged), not its dense shape.
TEST_F(OnlineTuning, PagedBucketIsTunedAsPaged) {
  auto a = Open(FakeCli("cat \"$5\" >> '" + calls_ + "'; exit 1", "0"));
  ASSERT_TRUE(a);
  Problem paged = Planted();
  paged.seqlen_q = 1;
  paged.layout = Layout::kPaged;
  auto plan = a->plan(paged);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_NE(plan->source, PlanSource::kExact);
  EXPECT_EQ(plan->bucket_name, BucketString(BucketOf(paged)));
  EXPECT_TRUE(WaitFor([&] { return ReadText(calls_).find("layout=paged") != std::string::npos; })) << AllLog();
  EXPECT_NE(ReadText(calls_).find(FormatProblemLine(paged)), std::string::npos) << ReadText(calls_);
}

TEST_F(OnlineTuning, NothingIsSpawnedWhenOff) {
  const std::string cli = MergingCli("0");
  ::setenv("FLASHTUNE_ONLINE_TUNE", "1", 1);
  auto off = Open(cli, false);  // the option wins over the environment
  ::unsetenv("FLASHTUNE_ONLINE_TUNE");
  auto unset = Open(cli, std::nullopt);  // no option, no environment: off
  ASSERT_TRUE(off && unset);
  EXPECT_EQ(SourceOf(*off), PlanSource::kNearest);
  EXPECT_EQ(SourceOf(*unset), PlanSource::kNearest);
  std::this_thread::sleep_for(1s);
  EXPECT_FALSE(std::filesystem::exists(calls_));
  EXPECT_FALSE(std::filesystem::exists(db_ + ".online"));
  EXPECT_EQ(SourceOf(*off), PlanSource::kNearest);
}

TEST_F(OnlineTuning, EnvironmentTurnsItOn) {
  ::setenv("FLASHTUNE_ONLINE_TUNE", "1", 1);
  auto a = Open(MergingCli("0"), std::nullopt);
  ::unsetenv("FLASHTUNE_ONLINE_TUNE");
  ASSERT_TRUE(a);
  EXPECT_EQ(SourceOf(*a), PlanSource::kNearest);
  EXPECT_TRUE(WaitFor([&] { return SourceOf(*a) == PlanSource::kExact; })) << AllLog();
  EXPECT_EQ(Lines(ReadText(calls_)), 1);
}

TEST_F(OnlineTuning, DamagedDatabaseTurnsItOffWithOneLine) {
  auto a = Open(MergingCli("0"));
  ASSERT_TRUE(a);
  // Replaced after opening: the runtime keeps reading the old file; the worker could not write.
  const std::string junk = dir_ + "/junk";
  std::ofstream(junk) << std::string(8192, 'x');
  std::filesystem::rename(junk, db_);
  EXPECT_EQ(SourceOf(*a), PlanSource::kNearest);
  EXPECT_TRUE(WaitFor([&] { return Logged("online tuning is off") > 0; })) << AllLog();
  Problem other = Planted();
  other.seqlen_q = other.seqlen_k = 4096;  // a second untuned bucket: no second line
  EXPECT_TRUE(a->plan(other).ok());
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(Logged("online tuning is off"), 1) << AllLog();
  EXPECT_FALSE(std::filesystem::exists(calls_));
}

TEST_F(OnlineTuning, MissingCliTurnsItOffAtOpen) {
  RuntimeOptions o;
  o.db_path = db_;
  o.device_override = TunedDevice();
  o.online_tuning = true;
  o.online_tuning_cli = dir_ + "/no-such-cli";
  std::vector<std::string> lines;
  o.log = [&](LogLevel, const std::string& m) { lines.push_back(m); };
  auto rt = Runtime::Open(o);
  ASSERT_TRUE(rt.ok()) << rt.status().ToString();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("online tuning is off: online_tuning_cli '" + o.online_tuning_cli + "'"), std::string::npos)
      << lines[0];
  EXPECT_EQ((*rt)->plan(Planted())->source, PlanSource::kNearest);
}

// Sets an environment variable for one scope and puts back what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// An executable (or, with mode 0644, a plain) file at `path`.
std::string MakeFile(const std::string& path, mode_t mode = 0755) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << "#!/bin/sh\nexit 0\n";
  ::chmod(path.c_str(), mode);
  return path;
}

// Where online tuning finds the CLI, in order: the option, $FLASHTUNE_CLI, beside the library
// (no flashtune there for this test binary), $PATH; a place without an executable file is
// passed over (a folder named flashtune too), and when none has one the error names what was tried and how to say where it is.
TEST(FindFlashtuneCli, TakesTheOptionThenTheEnvironmentThenPath) {
  const std::string dir = TempDir("find_cli");
  const std::string option = MakeFile(dir + "/opt/flashtune");
  const std::string env = MakeFile(dir + "/env/flashtune");
  const std::string on_path = MakeFile(dir + "/path-b/flashtune");
  MakeFile(dir + "/path-a/flashtune", 0644);  // earlier on $PATH but not executable
  std::filesystem::create_directories(dir + "/path-c/flashtune");  // a folder (a checkout), earlier still
  ScopedEnv path("PATH", dir + "/path-c:" + dir + "/path-a::" + dir + "/path-b");
  {
    ScopedEnv cli("FLASHTUNE_CLI", env);
    auto found = FindFlashtuneCli(option);
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    EXPECT_EQ(*found, option);
    found = FindFlashtuneCli("");
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    EXPECT_EQ(*found, env);
  }
  {
    ScopedEnv cli("FLASHTUNE_CLI", dir + "/env/missing");
    auto found = FindFlashtuneCli("");
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    EXPECT_EQ(*found, on_path);
  }
  // An option that names no executable is an error, never a fallback to the other places.
  auto refused = FindFlashtuneCli(dir + "/path-a/flashtune");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kNotFound);
  EXPECT_NE(refused.status().message().find("online_tuning_cli '" + dir + "/path-a/flashtune' is not an executable file"),
            std::string::npos)
      << refused.status().message();
  ScopedEnv empty_path("PATH", dir + "/path-a");
  ScopedEnv cli("FLASHTUNE_CLI", dir + "/env/missing");
  auto none = FindFlashtuneCli("");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), Code::kNotFound);
  const std::string m = none.status().message();
  EXPECT_NE(m.find("$FLASHTUNE_CLI (" + dir + "/env/missing)"), std::string::npos) << m;
  EXPECT_NE(m.find("and $PATH); set RuntimeOptions::online_tuning_cli or $FLASHTUNE_CLI"), std::string::npos) << m;
}

TEST(OnlineTuningOptions, NegativeBudgetAndTimeoutAreRejected) {
  RuntimeOptions o;
  o.db_path = "/nonexistent/x.db";
  o.online_tuning_budget = -1;
  auto rt = Runtime::Open(o);
  ASSERT_FALSE(rt.ok());
  EXPECT_EQ(rt.status().code(), Code::kInvalidArgument);
  EXPECT_NE(rt.status().message().find("online_tuning_budget (-1)"), std::string::npos);
  o.online_tuning_budget = 0;
  o.online_tuning_timeout_s = -5;
  rt = Runtime::Open(o);
  ASSERT_FALSE(rt.ok());
  EXPECT_NE(rt.status().message().find("online_tuning_timeout_s (-5)"), std::string::npos);
}

}  // namespace
}  // namespace flashtune
