// Online tuning: the tuner's thread, its claim files and its worker processes.
#include "runtime/online_tuner.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

#include "flashtune/hash.h"
#include "flashtune/problem_set.h"

extern char** environ;

namespace flashtune {
namespace {

namespace fs = std::filesystem;

// The worker holds the claim too (its copy of the locked descriptor), so the claim lasts while
// either the application or its worker lives.
constexpr int kWorkerClaimFd = 3;

// A file the worker can be spawned from: a regular file (or a link to one) we may execute. A
// folder named flashtune (a checkout on $PATH) passes access(X_OK) and must not.
bool Executable(const std::string& path) {
  std::error_code ec;
  return !path.empty() && fs::is_regular_file(path, ec) && ::access(path.c_str(), X_OK) == 0;
}

std::string Errno(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// "exit code 3" / "signal 11 (Segmentation fault)".
std::string HowEnded(int status) {
  if (WIFEXITED(status)) return "exit code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "signal " + std::to_string(WTERMSIG(status)) + " (" + ::strsignal(WTERMSIG(status)) + ")";
  return "status " + std::to_string(status);
}

// The claim's text (what the last holder wrote), at most a line.
std::string ReadClaim(int fd) {
  char buf[256];
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return "";
  std::string text(buf, static_cast<size_t>(n));
  if (auto nl = text.find('\n'); nl != std::string::npos) text.resize(nl);
  return text;
}

void WriteClaim(int fd, const std::string& text) {
  const std::string line = text + "\n";
  if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, line.data(), line.size(), 0);
}

// Kills the worker's process group (the CLI and its own GPU worker) and reaps the CLI.
void KillAndReap(pid_t pid) {
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

Result<std::string> FindFlashtuneCli(const std::string& option) {
  if (!option.empty()) {
    if (Executable(option)) return option;
    return Status(Code::kNotFound, "online_tuning_cli '" + option + "' is not an executable file");
  }
  std::string tried;
  if (const char* env = std::getenv("FLASHTUNE_CLI"); env != nullptr && *env != '\0') {
    if (Executable(env)) return std::string(env);
    tried += std::string(" $FLASHTUNE_CLI (") + env + "),";
  }
  Dl_info info{};
  if (::dladdr(reinterpret_cast<const void*>(&FindFlashtuneCli), &info) != 0 && info.dli_fname != nullptr) {
    std::error_code ec;
    const fs::path here = fs::weakly_canonical(fs::path(info.dli_fname), ec).parent_path();
    for (const fs::path& candidate : {here.parent_path() / "bin" / "flashtune", here / "flashtune"}) {
      if (Executable(candidate.string())) return candidate.string();
      tried += " " + candidate.string() + ",";
    }
  }
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    std::string dirs = path;
    for (size_t start = 0; start <= dirs.size();) {
      size_t end = dirs.find(':', start);
      if (end == std::string::npos) end = dirs.size();
      const std::string dir = dirs.substr(start, end - start);
      if (!dir.empty() && Executable(dir + "/flashtune")) return dir + "/flashtune";
      start = end + 1;
    }
  }
  return Status(Code::kNotFound, "no flashtune CLI found (tried" + tried +
                                     " and $PATH); set RuntimeOptions::online_tuning_cli or $FLASHTUNE_CLI");
}

struct OnlineTuner::Job {
  DeviceRecord device;
  int ordinal = 0;
  Problem problem;
  BucketKey bucket;
  std::string name;      // the claim's file stem
  int fd = -1;           // the open claim file
  bool locked = false;   // this tuner holds the claim (and runs the worker)
  pid_t pid = -1;        // the running worker
  std::chrono::steady_clock::time_point started;
};

OnlineTuner::OnlineTuner(Settings settings, RuntimeDatabase* db, const LogSink* log, Publish publish)
    : settings_(std::move(settings)),
      db_(db),
      log_(log),
      publish_(std::move(publish)),
      claim_dir_(settings_.db_path + ".online") {}

OnlineTuner::~OnlineTuner() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void OnlineTuner::Request(const DeviceRecord& device, int ordinal, const Problem& problem) {
  // Varlen calls take the dense buckets (problem_set.h); a paged one is tuned on pages.
  if (device.name.empty() || problem.layout == Layout::kVarlen || problem.operation != Operation::kForward) return;
  auto job = std::make_unique<Job>();
  job->device = device;
  job->ordinal = ordinal;
  job->problem = problem;
  job->bucket = BucketOf(problem);
  // One claim per (bucket, GPU model, toolchain): what a winner row is keyed by.
  const ToolchainInfo& t = db_->toolchain();
  std::string stem = BucketString(job->bucket);
  for (char& c : stem)
    if (c == '/') c = '-';
  job->name = stem + "-" +
              Sha256Hex(device.name + "|" + std::to_string(device.cc_major) + "." + std::to_string(device.cc_minor) +
                        "|" + std::to_string(device.sm_count) + "|" + device.driver_version + "|" + t.nvrtc_version +
                        "|" + t.generator_version + "|" + t.template_hash)
                  .substr(0, 12);
  {
    std::lock_guard lock(mutex_);
    if (stop_ || counts_.disabled || !seen_.insert(job->name).second) return;
    ++counts_.requested;
    ++counts_.pending;
    queue_.push_back(std::move(job));
    if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
  }
  wake_.notify_all();
}

OnlineTuner::Counts OnlineTuner::counts() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

void OnlineTuner::Loop() {
  std::vector<std::unique_ptr<Job>> active;
  std::unique_lock lock(mutex_);
  while (!stop_) {
    while (!queue_.empty()) {
      active.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    lock.unlock();
    if (!active.empty() && !Usable()) active.clear();  // Disable() said why
    for (auto it = active.begin(); it != active.end();) it = Step(**it) ? active.erase(it) : it + 1;
    lock.lock();
    counts_.pending = static_cast<int>(active.size() + queue_.size());
    if (stop_) break;
    if (active.empty()) {
      wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    } else {
      wake_.wait_for(lock, settings_.poll, [&] { return stop_ || !queue_.empty(); });
    }
  }
  lock.unlock();
  for (auto& job : active) {
    if (job->pid > 0) KillAndReap(job->pid);
    if (job->fd >= 0) ::close(job->fd);  // the claim's text stays "running": whoever locks it next retries
  }
}

bool OnlineTuner::Usable() {
  if (checked_usable_) return true;
  checked_usable_ = true;
  auto writable = Database::Open(settings_.db_path);  // creates it when absent, as the worker would
  if (!writable.ok()) {
    Disable("the tuning database cannot be written: " + writable.status().ToString());
    return false;
  }
  std::error_code ec;
  fs::create_directories(claim_dir_, ec);
  if (ec) {
    Disable("cannot make the claim folder " + claim_dir_ + ": " + ec.message());
    return false;
  }
  return true;
}

void OnlineTuner::Disable(const std::string& why) {
  {
    std::lock_guard lock(mutex_);
    counts_.disabled = true;
    queue_.clear();
  }
  log_->Log(LogLevel::kWarning, "online tuning is off: " + why + "; untuned buckets keep their guessed kernels");
}

Result<bool> OnlineTuner::HasWinner(const Job& job) {
  LogBatch logs;
  auto has = db_->HasExactWinner(job.device, job.bucket, &logs);
  log_->Emit(logs);
  return has;
}

bool OnlineTuner::Step(Job& job) {
  if (job.pid <= 0) return TryClaim(job);
  int status = 0;
  const pid_t r = ::waitpid(job.pid, &status, WNOHANG);
  if (r == 0) {
    if (std::chrono::steady_clock::now() - job.started < settings_.time_limit) return false;
    KillAndReap(job.pid);
    job.pid = -1;
    Finish(job, true,
           "the worker ran past its time limit of " +
               std::to_string(std::chrono::duration_cast<std::chrono::seconds>(settings_.time_limit).count()) +
               " s and was killed");
    return true;
  }
  job.pid = -1;
  const std::string output = claim_dir_ + "/" + job.name + ".log";
  if (r < 0 && errno != ECHILD) {
    Finish(job, true, Errno("waitpid"));
  } else if (r > 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
    Finish(job, true, "the worker (" + settings_.cli + " tune) ended with " + HowEnded(status) + "; its output is in " + output);
  } else if (auto has = HasWinner(job); !has.ok()) {  // exit 0, or reaped by the application (SIGCHLD ignored)
    Finish(job, true, "reading the database after the worker: " + has.status().ToString());
  } else {
    Finish(job, !*has, *has ? "" : "the worker exited but recorded no winner for the bucket; its output is in " + output);
  }
  return true;
}

bool OnlineTuner::TryClaim(Job& job) {
  if (auto has = HasWinner(job); has.ok() && *has) {  // another process tuned it meanwhile
    Finish(job, false, "");
    return true;
  }
  const std::string claim = claim_dir_ + "/" + job.name + ".claim";
  if (job.fd < 0) {
    job.fd = ::open(claim.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (job.fd < 0) {
      Finish(job, true, Errno(("opening the claim " + claim).c_str()));
      return true;
    }
  }
  if (::flock(job.fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK || errno == EINTR) return false;  // claimed elsewhere: watch the database
    Finish(job, true, Errno(("locking the claim " + claim).c_str()));
    return true;
  }
  job.locked = true;
  const std::string said = ReadClaim(job.fd);
  if (said.rfind("failed", 0) == 0) {
    job.locked = false;  // leave its text for the next reader
    Finish(job, true, "an earlier worker failed on it (" + claim + ": \"" + said + "\"); delete that file to try again");
    return true;
  }
  // Checked again under the lock: a holder that just finished has released it after recording.
  if (auto has = HasWinner(job); !has.ok() || *has) {
    Finish(job, !has.ok(), has.ok() ? "" : "reading the database: " + has.status().ToString());
    return true;
  }
  const std::string problem_file = claim_dir_ + "/" + job.name + ".problem";
  {
    std::ofstream out(problem_file, std::ios::trunc);
    out << FormatProblemLine(job.problem) << "\n";
    if (!out) {
      Finish(job, true, "cannot write " + problem_file);
      return true;
    }
  }
  const std::string output = claim_dir_ + "/" + job.name + ".log";
  std::vector<std::string> args = {settings_.cli,
                                    "tune",
                                    "--db",
                                    settings_.db_path,
                                    "--problem-set",
                                    problem_file,
                                    "--strategy",
                                    "budgeted",
                                    "--budget-per-problem",
                                    std::to_string(settings_.budget),
                                    "--devices",
                                    std::to_string(job.ordinal)};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_adddup2(&actions, job.fd, kWorkerClaimFd);  // dup2 clears O_CLOEXEC
  // Its own process group (a time-out kills the CLI and its GPU worker together, and the
  // terminal's Ctrl-C goes to the application only), default signal handling, nothing blocked.
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    Finish(job, true, "cannot start " + settings_.cli + ": " + std::strerror(rc));
    return true;
  }
  WriteClaim(job.fd, "running pid " + std::to_string(pid));
  job.pid = pid;
  job.started = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(mutex_);
    ++counts_.spawned;
  }
  log_->Log(LogLevel::kInfo, "online tuning: tuning bucket " + BucketString(job.bucket) + " (" +
                                 job.problem.ToString() + ") in the background, pid " + std::to_string(pid));
  return false;
}

void OnlineTuner::Finish(Job& job, bool failed, const std::string& why) {
  if (job.fd >= 0) {
    if (job.locked) WriteClaim(job.fd, failed ? "failed: " + why : "tuned");
    ::close(job.fd);  // releases the lock
    job.fd = -1;
  }
  job.locked = false;
  const std::string bucket = BucketString(job.bucket);
  if (failed) {
    {
      std::lock_guard lock(mutex_);
      ++counts_.failed;
    }
    log_->Log(LogLevel::kWarning, "online tuning of bucket " + bucket + " (" + job.problem.ToString() +
                                      ") failed: " + why + "; it keeps its guessed kernel");
    return;
  }
  publish_(job.problem);
  {
    std::lock_guard lock(mutex_);
    ++counts_.published;
  }
  log_->Log(LogLevel::kInfo, "online tuning: bucket " + bucket + " is tuned; its winner now serves it");
}

}  // namespace flashtune
