// A supervised child process for GPU work. A kernel that faults poisons its CUDA context for
// the rest of the process, so the tuner runs every GPU call in a child it can kill and
// restart: the parent never initialises CUDA, and a fault, a crash or a hang in the child
// becomes a status the tuner records while the run goes on.
//
// Exec() starts the child as a fresh program (fork, then exec): the way to run CUDA in it.
// A plain fork (Start) copies the parent, and CUDA refuses to work in a child forked from a
// process that has initialised the driver; NVRTC 13 does that as a side effect of every
// compile, so a tuner that has compiled anything can only get a working GPU child by exec.
//
// Parent and child exchange length-prefixed frames over two pipes; FrameWriter/FrameReader
// encode the few field types the messages need.
//
// Thread safety: a WorkerProcess is used by one thread at a time.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "flashtune/status.h"

namespace flashtune::detail {

class FrameWriter {
 public:
  FrameWriter& I64(int64_t v);
  FrameWriter& F64(double v);
  FrameWriter& Str(std::string_view s);
  const std::string& data() const { return data_; }

 private:
  std::string data_;
};

// Reads fields in the order they were written; a short or malformed frame sets !ok() and
// yields zeros, so a reader checks ok() once at the end. It reads a view of `data`, which must
// outlive it: not the frame of a temporary FrameWriter.
class FrameReader {
 public:
  explicit FrameReader(std::string_view data) : data_(data) {}
  int64_t I64();
  double F64();
  std::string Str();
  bool ok() const { return ok_; }

 private:
  bool Take(void* out, size_t n);
  std::string_view data_;
  size_t pos_ = 0;
  bool ok_ = true;
};

// Writes one frame (8-byte length, then the payload). kIoError when the pipe is closed.
Status WriteFrame(int fd, std::string_view payload);
// Reads one frame, waiting at most `timeout` (negative: forever). kTimeout when none came in
// time, kIoError on end of file or a broken frame.
Result<std::string> ReadFrame(int fd, std::chrono::milliseconds timeout);

class WorkerProcess {
 public:
  // The child's main: reads requests from request_fd, writes replies to reply_fd, and returns
  // the child's exit code. It runs in a forked copy of the caller, so it must not touch state
  // the parent's other threads own (open databases, locks held elsewhere).
  using Body = std::function<int(int request_fd, int reply_fd)>;

  // Forks a child running `body`. kIoError when pipes or fork fail.
  static Result<std::unique_ptr<WorkerProcess>> Start(Body body);
  // Forks and execs `argv` (argv[0] is the executable's path) with two more arguments
  // appended: the child's request and reply file descriptors. kIoError when pipes or fork
  // fail; kNotFound naming the path (and errno's text) when the exec itself fails.
  static Result<std::unique_ptr<WorkerProcess>> Exec(const std::vector<std::string>& argv);
  ~WorkerProcess();  // kills the child (SIGKILL) if it still runs, and reaps it

  // Sends `request` and returns the child's reply. When no reply comes within `timeout`, the
  // child is killed and the result is kTimeout; when the child dies first, kFault saying how
  // (exit code or signal). Either way the worker is then dead and must be restarted.
  Result<std::string> Call(std::string_view request, std::chrono::milliseconds timeout);

  bool alive() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

 private:
  WorkerProcess(pid_t pid, int request_fd, int reply_fd) : pid_(pid), request_fd_(request_fd), reply_fd_(reply_fd) {}
  // Kills (when asked) and reaps the child; returns how it ended ("exit code 3", "signal 11").
  std::string Reap(bool kill_first);
  pid_t pid_ = -1;
  int request_fd_ = -1;
  int reply_fd_ = -1;
};

}  // namespace flashtune::detail
