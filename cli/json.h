// cli/json.h — the JSON the CLI writes: quoted strings, numbers, and a problem (one set of
// keys, the export's column names, for every command that prints one).
#pragma once

#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>

#include "flashtune/variant.h"

namespace flashtune::cli {

// `text` as a JSON string literal, quotes included.
inline std::string JsonString(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// A number; null when it is not finite (JSON has no NaN).
inline std::string JsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// {"dtype":"bf16","head_dim":128,"causal":true,"batch":4,"seqlen_q":…,"seqlen_k":…,"heads_q":…,"heads_kv":…}
inline std::string ProblemJson(const Problem& p) {
  return "{\"dtype\":" + JsonString(DTypeName(p.dtype)) + ",\"head_dim\":" + std::to_string(p.head_dim) +
         ",\"causal\":" + (p.causal ? "true" : "false") + ",\"batch\":" + std::to_string(p.batch) +
         ",\"seqlen_q\":" + std::to_string(p.seqlen_q) + ",\"seqlen_k\":" + std::to_string(p.seqlen_k) +
         ",\"heads_q\":" + std::to_string(p.heads_q) + ",\"heads_kv\":" + std::to_string(p.heads_kv) +
         ",\"layout\":" + JsonString(LayoutName(p.layout)) + "}";
}

}  // namespace flashtune::cli
