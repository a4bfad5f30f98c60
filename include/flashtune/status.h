// flashtune/status.h — the outcome of every fallible flashtune call.
//
// A Status is either OK or an error: a code, a one-line message, and the context a
// user needs to act on it (the variant URI, the compiler options, the NVRTC log or the
// driver's message). Result<T> is a value or the Status explaining why there is none.
// No flashtune library call throws or aborts on bad input; it returns a Status.
//
// Thread safety: value types; distinct objects may be used from different threads.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "flashtune/export.h"

FLASHTUNE_API_BEGIN
namespace flashtune {

enum class Code {
  kOk = 0,
  kInvalidArgument,  // the caller passed something outside the allowed values
  kNotFound,         // a file, database row, device or variant does not exist
  kCompileError,     // NVRTC rejected a source (log attached)
  kNoDriver,         // libcuda.so.1 could not be loaded
  kNoDevice,         // the driver loaded but reports no usable device
  kDriverError,      // a CUDA driver call failed (call, error name and message attached)
  kOutOfResources,   // launch refused: registers, shared memory or threads exceed the device
  kWrongResult,      // a kernel's output disagreed with the reference
  kFault,            // a kernel faulted (illegal address, ...); the context is poisoned
  kTimeout,          // a kernel or worker did not finish in time
  kDatabaseError,    // SQLite reported an error
  kCorrupt,          // a file exists but is not what it should be (cache entry, database)
  kIoError,          // reading or writing a file failed
  kUnsupported,      // valid request this build or device cannot serve
  kInternal,         // a flashtune bug
};

// Stable lower-case name, used in logs, the database and the CLI ("compile_error", ...).
std::string_view CodeName(Code code);

class Status {
 public:
  Status() = default;  // OK
  Status(Code code, std::string message);
  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;
  ~Status() = default;

  static Status Ok() { return Status(); }
  bool ok() const { return rep_ == nullptr || rep_->code == Code::kOk; }
  Code code() const { return rep_ ? rep_->code : Code::kOk; }
  const std::string& message() const { return rep_ ? rep_->message : Empty(); }

  // Optional context, attached by whoever knows it; empty when unknown.
  const std::string& variant_uri() const { return rep_ ? rep_->variant_uri : Empty(); }
  const std::string& options() const { return rep_ ? rep_->options : Empty(); }
  const std::string& log() const { return rep_ ? rep_->log : Empty(); }
  Status& WithVariant(std::string uri) { Mutable().variant_uri = std::move(uri); return *this; }
  Status& WithOptions(std::string options) { Mutable().options = std::move(options); return *this; }
  Status& WithLog(std::string log) { Mutable().log = std::move(log); return *this; }

  // "compile_error: <message> [variant=...] [options=...]\n<log>" — everything a user needs.
  std::string ToString() const;

 private:
  // An OK status is a null pointer: the launch path creates and destroys dozens per call, and
  // four empty strings each cost more than the checks they report on (docs/perf-notes.md,
  // "forward()'s own host work").
  struct Rep {
    Code code = Code::kOk;
    std::string message;
    std::string variant_uri;
    std::string options;
    std::string log;
  };
  static const std::string& Empty();
  Rep& Mutable();
  std::unique_ptr<Rep> rep_;
};

// A value of type T, or the Status saying why there is none. Never holds an OK status.
template <typename T>
class Result {
 public:
  Result(T value) : data_(std::move(value)) {}                 // NOLINT: implicit by design
  Result(Status status) : data_(std::move(status)) {}          // NOLINT: must not be OK

  bool ok() const { return std::holds_alternative<T>(data_); }
  // The error; an OK Status when this holds a value.
  Status status() const { return ok() ? Status() : std::get<Status>(data_); }

  // Precondition: ok().
  T& value() & { return std::get<T>(data_); }
  const T& value() const& { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> data_;
};

}  // namespace flashtune
FLASHTUNE_API_END

// Returns the Status from the enclosing function when `expr` is not OK.
#define FT_RETURN_IF_ERROR(expr)                 \
  do {                                           \
    ::flashtune::Status ft_status_ = (expr);     \
    if (!ft_status_.ok()) return ft_status_;     \
  } while (0)
