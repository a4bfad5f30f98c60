// online_tuner.h — opt-in online tuning: an untuned bucket the runtime meets is tuned in the
// background by a worker process while the application keeps running on the best guess, and the
// tuned winner replaces the guess once it is in the database.
//
// Contract:
// - Request() is called by the planner when it plans a bucket that has no exact winner (dense
//   and paged forward problems on a known GPU only; a varlen call's bucket is its dense one). It returns at once (a mutex and a queue push); the
//   work happens on the tuner's own thread, started on the first request.
// - The worker is the flashtune CLI (`flashtune tune --problem-set <one problem> --strategy
//   budgeted --budget-per-problem N --devices <ordinal>`), started with posix_spawn — never a
//   fork of the application, which may be multi-threaded and have initialised CUDA. Its output
//   goes to <db>.online/<claim>.log. The thread polls it with waitpid(WNOHANG) and kills it
//   (SIGKILL) past the time limit; a worker that fails, crashes, hangs or records no winner is
//   logged once (warning) and the bucket keeps its guess. Nothing of the worker's fate reaches
//   forward().
// - When the worker has recorded the bucket's winner, the publish callback runs on the tuner's
//   thread; the Runtime replans the bucket and swaps the launch entry atomically
//   (runtime/launch_table.h), so later forward() calls launch the winner.
// - One tuning per bucket across processes: each bucket (with the GPU model and toolchain) has a
//   claim file <db>.online/<bucket>-<hash>.claim. The tuner holds an exclusive flock(2) on it for
//   as long as its worker runs; a second runtime (in this process or another) that finds it
//   locked does not spawn, it watches the database and publishes the winner when it appears.
//   flock, unlike an O_EXCL file, is released by the kernel when its holder dies, so a crashed
//   application never leaves a bucket claimed for ever. Under the lock the tuner first checks the
//   database again (another process may have just finished) and the claim's text: a bucket
//   whose worker failed says "failed: <why>" there and is not retried by anyone until that file
//   is deleted, so a shape that breaks the tuner costs one worker, not one per process.
// - The database must be writable by this process: when it cannot be opened read-write (a
//   read-only file, a foreign or damaged one), or the claim folder cannot be made, or no CLI is
//   found, online tuning turns itself off with one log line and the runtime goes on as without it.
//
// Thread safety: Request() and counts() from any thread; the destructor must not race with them.
// The destructor stops the thread and kills and reaps a running worker.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "flashtune/database.h"
#include "flashtune/variant.h"
#include "runtime/runtime_database.h"
#include "runtime/runtime_log.h"

namespace flashtune {

// The flashtune CLI for online tuning: `option` when not empty, else $FLASHTUNE_CLI, else
// bin/flashtune beside the folder of the library this code is linked into (an installed prefix:
// lib/ and bin/; the Python package: flashtune/lib and flashtune/bin), else flashtune in that
// folder (a build tree), else "flashtune" found on $PATH. kNotFound naming every place tried.
Result<std::string> FindFlashtuneCli(const std::string& option);

class OnlineTuner {
 public:
  struct Settings {
    std::string db_path;
    std::string cli;                                      // the flashtune executable
    int budget = 16;                                      // --budget-per-problem (measurements)
    std::chrono::milliseconds time_limit{std::chrono::seconds(300)};  // then the worker is killed
    std::chrono::milliseconds poll{std::chrono::milliseconds(100)};   // worker and claim polling
  };
  // Runs on the tuner's thread when `problem`'s bucket has its winner in the database.
  using Publish = std::function<void(const Problem& problem)>;

  // `db` and `log` must outlive the tuner.
  OnlineTuner(Settings settings, RuntimeDatabase* db, const LogSink* log, Publish publish);
  ~OnlineTuner();
  OnlineTuner(const OnlineTuner&) = delete;
  OnlineTuner& operator=(const OnlineTuner&) = delete;

  // Asks for `problem`'s bucket to be tuned on GPU `ordinal` (the tune's --devices) of model
  // `device`. Repeats of a bucket already asked for are dropped. Never blocks on the worker.
  void Request(const DeviceRecord& device, int ordinal, const Problem& problem);

  struct Counts {
    int requested = 0;  // distinct buckets asked for
    int spawned = 0;    // workers started by this tuner
    int published = 0;  // buckets whose winner was published
    int failed = 0;     // buckets given up (worker failed, or claimed as failed)
    int pending = 0;    // buckets still waiting or running
    bool disabled = false;
  };
  Counts counts() const;

 private:
  struct Job;
  void Loop();
  // One step of a job; true when the job is finished (published or given up).
  bool Step(Job& job);
  bool TryClaim(Job& job);
  void Finish(Job& job, bool failed, const std::string& why);
  Result<bool> HasWinner(const Job& job);
  // Checks the database can be written and the claim folder made; false (logged once) if not.
  bool Usable();
  void Disable(const std::string& why);

  const Settings settings_;
  RuntimeDatabase* const db_;
  const LogSink* const log_;
  const Publish publish_;
  const std::string claim_dir_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::unique_ptr<Job>> queue_;  // requests not yet taken by the thread
  std::set<std::string> seen_;              // claim names of every bucket requested
  Counts counts_;
  bool stop_ = false;
  bool checked_usable_ = false;  // thread only
  std::thread thread_;
};

}  // namespace flashtune
