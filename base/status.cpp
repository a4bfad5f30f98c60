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

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string s(CodeName(code_));
  s += ": ";
  s += message_;
  if (!variant_uri_.empty()) s += " [variant=" + variant_uri_ + "]";
  if (!options_.empty()) s += " [options=" + options_ + "]";
  if (!log_.empty()) {
    s += "\n";
    s += log_;
  }
  return s;
}

}  // namespace flashtune
