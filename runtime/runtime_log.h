// runtime_log.h — how the runtime's parts report: messages are collected while a lock is held
// and emitted after it is released, through the application's log callback (RuntimeOptions::log)
// or stderr.
//
// Thread safety: a LogSink is immutable after construction; Emit may be called from any thread.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "flashtune/runtime.h"

namespace flashtune {

using LogBatch = std::vector<std::pair<LogLevel, std::string>>;

class LogSink {
 public:
  explicit LogSink(std::function<void(LogLevel, const std::string&)> callback) : callback_(std::move(callback)) {}
  // Null callback: warnings and errors go to stderr prefixed "flashtune: "; the rest is dropped.
  void Log(LogLevel level, const std::string& message) const;
  void Emit(const LogBatch& batch) const {
    for (const auto& [level, message] : batch) Log(level, message);
  }

 private:
  std::function<void(LogLevel, const std::string&)> callback_;
};

}  // namespace flashtune
