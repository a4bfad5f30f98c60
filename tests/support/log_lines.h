// tests/support/log_lines.h — a runtime's log kept for a test to count: RuntimeOptions::log
// lines as "level: message", appended from whatever thread logs (the online tuner's too).
// Thread safety: every method takes the object's lock.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "flashtune/runtime.h"

namespace flashtune::testing {

class LogLines {
 public:
  // For RuntimeOptions::log; the object must outlive the runtime.
  std::function<void(LogLevel, const std::string&)> Sink() {
    return [this](LogLevel level, const std::string& m) {
      std::lock_guard lock(mutex_);
      lines_.push_back(std::string(LogLevelName(level)) + ": " + m);
    };
  }
  // Lines containing `text`.
  int Count(const std::string& text) const {
    std::lock_guard lock(mutex_);
    int n = 0;
    for (const std::string& line : lines_) n += line.find(text) != std::string::npos;
    return n;
  }
  // Every line, each ending in a newline (for a failure message).
  std::string All() const {
    std::lock_guard lock(mutex_);
    std::string out;
    for (const std::string& line : lines_) out += line + "\n";
    return out;
  }
  void Clear() {
    std::lock_guard lock(mutex_);
    lines_.clear();
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
};

}  // namespace flashtune::testing
