#include "flashtune/status.h"

namespace flashtune {

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "ok";
    case Code::kInvalidArgument: return "invalid_argument";
    case Code::kNotFound: return "not_found";
    case Code::kCompileError: return "compile_error";
    case Code::kNoDriver: return "no_driver";
    case Code::kNoDevice: return "no_device";
    case Code::kDriverError: return "driver_error";
    case Code::kOutOfResources: return "out_of_resources";
    case Code::kWrongResult: return "wrong_result";
    case Code::kFault: return "fault";
    case Code::kTimeout: return "timeout";
    case Code::kDatabaseError: return "database_error";
    case Code::kCorrupt: return "corrupt";
    case Code::kIoError: return "io_error";
    case Code::kUnsupported: return "unsupported";
    case Code::kInternal: return "internal";
  }
  return "unknown";
}

Status::Status(Code code, std::string message) : rep_(std::make_unique<Rep>()) {
  rep_->code = code;
  rep_->message = std::move(message);
}

Status::Status(const Status& other) : rep_(other.rep_ ? std::make_unique<Rep>(*other.rep_) : nullptr) {}

Status& Status::operator=(const Status& other) {
  if (this != &other) rep_ = other.rep_ ? std::make_unique<Rep>(*other.rep_) : nullptr;
  return *this;
}

const std::string& Status::Empty() {
  static const std::string empty;
  return empty;
}

Status::Rep& Status::Mutable() {
  if (!rep_) rep_ = std::make_unique<Rep>();
  return *rep_;
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string s(CodeName(code()));
  s += ": ";
  s += message();
  if (!variant_uri().empty()) s += " [variant=" + variant_uri() + "]";
  if (!options().empty()) s += " [options=" + options() + "]";
  if (!log().empty()) {
    s += "\n";
    s += log();
  }
  return s;
}

}  // namespace flashtune
