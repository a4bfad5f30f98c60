#include "tuner/compile_queue.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

namespace flashtune::detail {

CompileQueue::CompileQueue(const Compiler& compiler, int threads)
    : compiler_(compiler),
      threads_(threads > 0 ? threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()))) {}

CompileQueue::~CompileQueue() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    queue_.clear();
  }
  changed_.notify_all();
  for (std::thread& t : pool_) t.join();
}

void CompileQueue::Enqueue(const std::vector<CompileRequest>& requests) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const CompileRequest& r : requests) {
    if (!entries_.emplace(r.name, Entry{State::kQueued, r}).second) continue;
    queue_.push_back(r.name);
  }
  while (static_cast<int>(pool_.size()) < threads_ && pool_.size() < queue_.size()) {
    try {
      pool_.emplace_back([this] { BackgroundLoop(); });
    } catch (const std::system_error&) {
      break;  // Get compiles whatever no thread takes
    }
  }
  changed_.notify_all();
}

Result<Cubin> CompileQueue::Get(const CompileRequest& request) {
  std::unique_lock<std::mutex> lock(mu_);
  auto [it, inserted] = entries_.emplace(request.name, Entry{State::kQueued, request});
  Entry& e = it->second;
  if (e.state == State::kQueued) {
    if (!inserted) queue_.erase(std::find(queue_.begin(), queue_.end(), request.name));
    Run(lock, e);
  }
  changed_.wait(lock, [&] { return e.state == State::kDone; });
  return e.result;
}

int CompileQueue::started() const {
  std::lock_guard<std::mutex> lock(mu_);
  return started_;
}

void CompileQueue::BackgroundLoop() {
  // Lower this thread only (Linux: a thread id is a process id for setpriority). Failing is
  // harmless: the compiles then merely compete at normal priority.
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), 10);
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    Entry& e = entries_.at(queue_.front());
    queue_.pop_front();
    Run(lock, e);
  }
}

void CompileQueue::Run(std::unique_lock<std::mutex>& lock, Entry& e) {
  e.state = State::kRunning;
  ++started_;
  lock.unlock();  // NVRTC takes seconds: other threads queue, take and wait meanwhile
  Result<Cubin> result = compiler_.Compile(e.request);
  lock.lock();
  e.result = std::move(result);
  e.state = State::kDone;
  changed_.notify_all();
}

}  // namespace flashtune::detail
