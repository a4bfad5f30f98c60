// Compiles a tuner's candidates on background threads while it measures others on the GPU, so
// NVRTC's time hides behind the measurements instead of preceding them. The caller asks for one
// cubin at a time (Get): a finished one is returned at once, one being compiled is waited for,
// and one still queued is compiled at once on the caller's thread (it jumps the queue).
// Background threads run at a lower CPU priority so that the GPU worker's launches and its
// verification keep their cores.
//
// Thread safety: all methods may be called from any thread. The destructor drops queued
// requests that have not started and waits for those in progress.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "flashtune/compiler.h"

namespace flashtune::detail {

class CompileQueue {
 public:
  // `threads` background threads (0 = hardware concurrency), started on the first Enqueue.
  CompileQueue(const Compiler& compiler, int threads);
  ~CompileQueue();
  CompileQueue(const CompileQueue&) = delete;
  CompileQueue& operator=(const CompileQueue&) = delete;

  // Queues requests, in order, behind those already queued; a request whose name (uri) is
  // already queued, in progress or done is ignored.
  void Enqueue(const std::vector<CompileRequest>& requests);
  // The result for request.name, exactly what Compiler::Compile returns for it: compiled here
  // and now when it was queued but not started or never enqueued.
  Result<Cubin> Get(const CompileRequest& request);

  // Compilations started so far, by the background threads and by Get (for tests and traces).
  int started() const;

 private:
  enum class State { kQueued, kRunning, kDone };
  struct Entry {
    State state = State::kQueued;
    CompileRequest request;
    Result<Cubin> result = Status(Code::kInternal, "not compiled");
  };
  void BackgroundLoop();
  // Compiles a queued entry with the lock released; returns with it held, the entry done.
  void Run(std::unique_lock<std::mutex>& lock, Entry& e);

  const Compiler& compiler_;
  const int threads_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, Entry> entries_;
  std::deque<std::string> queue_;
  std::vector<std::thread> pool_;
  bool stopping_ = false;
  int started_ = 0;
};

}  // namespace flashtune::detail
