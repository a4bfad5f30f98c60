#include "tuner/worker_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace flashtune::detail {

FrameWriter& FrameWriter::I64(int64_t v) {
  data_.append(reinterpret_cast<const char*>(&v), sizeof v);
  return *this;
}
FrameWriter& FrameWriter::F64(double v) {
  data_.append(reinterpret_cast<const char*>(&v), sizeof v);
  return *this;
}
FrameWriter& FrameWriter::Str(std::string_view s) {
  I64(static_cast<int64_t>(s.size()));
  data_.append(s);
  return *this;
}

bool FrameReader::Take(void* out, size_t n) {
  if (!ok_ || data_.size() - pos_ < n) {
    ok_ = false;
    std::memset(out, 0, n);
    return false;
  }
  std::memcpy(out, data_.data() + pos_, n);
  pos_ += n;
  return true;
}
int64_t FrameReader::I64() {
  int64_t v;
  Take(&v, sizeof v);
  return v;
}
double FrameReader::F64() {
  double v;
  Take(&v, sizeof v);
  return v;
}
std::string FrameReader::Str() {
  const int64_t n = I64();
  if (!ok_ || n < 0 || static_cast<size_t>(n) > data_.size() - pos_) {
    ok_ = false;
    return {};
  }
  std::string s(data_.substr(pos_, static_cast<size_t>(n)));
  pos_ += static_cast<size_t>(n);
  return s;
}

static Status WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return Status(Code::kIoError, std::string("worker pipe write failed: ") + std::strerror(errno));
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

Status WriteFrame(int fd, std::string_view payload) {
  const uint64_t size = payload.size();
  FT_RETURN_IF_ERROR(WriteAll(fd, reinterpret_cast<const char*>(&size), sizeof size));
  return WriteAll(fd, payload.data(), payload.size());
}

// Reads exactly n bytes before `deadline` (none: wait forever).
static Status ReadAll(int fd, char* p, size_t n, std::chrono::steady_clock::time_point deadline, bool has_deadline) {
  while (n > 0) {
    int wait_ms = -1;
    if (has_deadline) {
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) return Status(Code::kTimeout, "no reply from the worker in time");
      // Rounded up: poll() must not wake before the deadline.
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
      wait_ms = static_cast<int>(std::min<int64_t>(left.count(), 1 << 30));
    }
    pollfd pfd{fd, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;  // the deadline is checked at the top
    const ssize_t r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return Status(Code::kIoError, "worker pipe closed");
    p += r;
    n -= static_cast<size_t>(r);
  }
  return Status::Ok();
}

Result<std::string> ReadFrame(int fd, std::chrono::milliseconds timeout) {
  const bool has_deadline = timeout.count() >= 0;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  uint64_t size = 0;
  FT_RETURN_IF_ERROR(ReadAll(fd, reinterpret_cast<char*>(&size), sizeof size, deadline, has_deadline));
  if (size > (uint64_t(1) << 32)) return Status(Code::kIoError, "worker sent a broken frame");
  std::string payload(size, '\0');
  FT_RETURN_IF_ERROR(ReadAll(fd, payload.data(), size, deadline, has_deadline));
  return payload;
}

Result<std::unique_ptr<WorkerProcess>> WorkerProcess::Start(Body body) {
  int to_child[2], from_child[2];
  if (::pipe2(to_child, O_CLOEXEC) != 0) return Status(Code::kIoError, std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(from_child, O_CLOEXEC) != 0) {
    ::close(to_child[0]);
    ::close(to_child[1]);
    return Status(Code::kIoError, std::string("pipe: ") + std::strerror(errno));
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {to_child[0], to_child[1], from_child[0], from_child[1]}) ::close(fd);
    return Status(Code::kIoError, std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    // Child: die with the parent, never write into a closed pipe silently.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    ::signal(SIGPIPE, SIG_IGN);
    ::close(to_child[1]);
    ::close(from_child[0]);
    const int code = body(to_child[0], from_child[1]);
    ::_exit(code);
  }
  ::close(to_child[0]);
  ::close(from_child[1]);
  return std::unique_ptr<WorkerProcess>(new WorkerProcess(pid, to_child[1], from_child[0]));
}

// Writes `value` in decimal into `out` (room for any int); async-signal-safe, for use between
// fork and exec.
static void FormatInt(int value, char (&out)[16]) {
  char digits[16];
  int n = 0;
  unsigned v = value < 0 ? 0u - unsigned(value) : unsigned(value);
  do {
    digits[n++] = char('0' + v % 10);
    v /= 10;
  } while (v != 0);
  int i = 0;
  if (value < 0) out[i++] = '-';
  while (n > 0) out[i++] = digits[--n];
  out[i] = '\0';
}

Result<std::unique_ptr<WorkerProcess>> WorkerProcess::Exec(const std::vector<std::string>& argv) {
  if (argv.empty()) return Status(Code::kInvalidArgument, "worker executable: no path given");
  int exec_status[2];
  if (::pipe2(exec_status, O_CLOEXEC) != 0) return Status(Code::kIoError, std::string("pipe: ") + std::strerror(errno));
  // Everything the child needs is allocated here: between fork and exec it may only make
  // async-signal-safe calls. The last two arguments are filled in with the child's descriptors.
  std::vector<std::string> args = argv;
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  char request_arg[16], reply_arg[16];
  cargs.push_back(request_arg);
  cargs.push_back(reply_arg);
  cargs.push_back(nullptr);
  const int status_fd = exec_status[1];
  auto worker = Start([&cargs, &request_arg, &reply_arg, status_fd](int request_fd, int reply_fd) {
    FormatInt(request_fd, request_arg);
    FormatInt(reply_fd, reply_arg);
    ::fcntl(request_fd, F_SETFD, 0);  // these two survive exec; every other descriptor is close-on-exec
    ::fcntl(reply_fd, F_SETFD, 0);
    ::execv(cargs[0], cargs.data());
    const int err = errno;  // exec failed: tell the parent why
    (void)!::write(status_fd, &err, sizeof err);
    return 127;
  });
  ::close(exec_status[1]);
  int err = 0;
  ssize_t got = 0;
  if (worker.ok()) {  // end of file: the exec succeeded (the write end closed with it)
    while ((got = ::read(exec_status[0], &err, sizeof err)) < 0 && errno == EINTR) {
    }
  }
  ::close(exec_status[0]);
  if (!worker.ok()) return worker.status();
  if (got == sizeof err) {
    (*worker)->Reap(false);
    return Status(Code::kNotFound, "cannot run the GPU worker " + argv[0] + ": " + std::strerror(err));
  }
  return worker;
}

std::string WorkerProcess::Reap(bool kill_first) {
  std::string how = "not running";
  if (pid_ > 0) {
    if (kill_first) ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(status)) {
      how = "killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
    } else {
      how = "exited with code " + std::to_string(WEXITSTATUS(status));
    }
    pid_ = -1;
  }
  if (request_fd_ >= 0) ::close(request_fd_);
  if (reply_fd_ >= 0) ::close(reply_fd_);
  request_fd_ = reply_fd_ = -1;
  return how;
}

WorkerProcess::~WorkerProcess() { Reap(/*kill_first=*/true); }

Result<std::string> WorkerProcess::Call(std::string_view request, std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return Status(Code::kFault, "the worker process is not running");
  Status sent = WriteFrame(request_fd_, request);
  Result<std::string> reply = sent.ok() ? ReadFrame(reply_fd_, timeout) : Result<std::string>(sent);
  if (reply.ok()) return reply;
  if (reply.status().code() == Code::kTimeout) {
    Reap(/*kill_first=*/true);
    return Status(Code::kTimeout, "the worker gave no reply within " + std::to_string(timeout.count()) +
                                      " ms and was killed");
  }
  const std::string how = Reap(/*kill_first=*/false);
  return Status(Code::kFault, "the worker process died (" + how + ")");
}

}  // namespace flashtune::detail
