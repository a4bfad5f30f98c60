// CSV writing shared by `db export` and the test fixtures that write replay files; private to
// flashtune (not installed).
#pragma once

#include <string>

namespace flashtune::detail {

// A CSV field (RFC 4180): as it is, or quoted with quotes doubled when it holds a separator, a
// quote or a line break.
inline std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace flashtune::detail
