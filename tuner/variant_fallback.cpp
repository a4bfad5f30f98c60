// TEMPORARY (branch db): weak definitions of the variant.h functions so the tuner, database and
// their tests link before the real implementation lands on main. Every definition is weak, so
// the real (strong) one wins wherever both are linked. Delete this file once variant.cpp is merged.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "flashtune/variant.h"

namespace flashtune {

__attribute__((weak)) std::string_view DTypeName(DType dtype) {
  return dtype == DType::kBF16 ? "bf16" : "f16";
}

__attribute__((weak)) Result<DType> ParseDType(std::string_view text, std::string_view what) {
  if (text == "bf16" || text == "bfloat16") return DType::kBF16;
  if (text == "f16" || text == "fp16" || text == "half") return DType::kF16;
  return Status(Code::kInvalidArgument, std::string(what) + ": '" + std::string(text) +
                                            "' is not a dtype; allowed: bf16, f16");
}

__attribute__((weak)) double Problem::Flops() const {
  double f = 4.0 * double(batch) * double(heads_q) * double(seqlen_q) * double(seqlen_k) * head_dim;
  if (causal && seqlen_q == seqlen_k) f /= 2;
  return f;
}

__attribute__((weak)) std::string Problem::ToString() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s d%d %s B%lld Nq%lld Nk%lld Hq%lld Hkv%lld",
                std::string(DTypeName(dtype)).c_str(), head_dim, causal ? "causal" : "full",
                (long long)batch, (long long)seqlen_q, (long long)seqlen_k, (long long)heads_q,
                (long long)heads_kv);
  return buf;
}

__attribute__((weak)) std::string Variant::Uri() const {
  char buf[128];
  std::snprintf(buf, sizeof buf, "fa2_fwd_%s_d%d_br%d_bc%d_w%d_s%d_%s",
                std::string(DTypeName(dtype)).c_str(), head_dim, block_m, block_n, warps, stages,
                causal ? "causal" : "full");
  return buf;
}

__attribute__((weak)) Result<Variant> Variant::FromUri(std::string_view uri) {
  auto bad = [&](const char* field) {
    return Status(Code::kInvalidArgument,
                  "variant URI '" + std::string(uri) + "': bad field '" + field +
                      "'; expected fa2_fwd_<bf16|f16>_d<D>_br<M>_bc<N>_w<W>_s<S>_<causal|full>");
  };
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t p = uri.find('_', start);
    parts.push_back(uri.substr(start, p == std::string_view::npos ? std::string_view::npos : p - start));
    if (p == std::string_view::npos) break;
    start = p + 1;
  }
  if (parts.size() != 9 || parts[0] != "fa2" || parts[1] != "fwd") return bad("prefix");
  Variant v;
  auto dt = ParseDType(parts[2], "dtype");
  if (!dt.ok()) return bad("dtype");
  v.dtype = *dt;
  auto num = [](std::string_view s, std::string_view prefix, int* out) {
    if (s.substr(0, prefix.size()) != prefix) return false;
    s.remove_prefix(prefix.size());
    auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
    return r.ec == std::errc() && r.ptr == s.data() + s.size();
  };
  if (!num(parts[3], "d", &v.head_dim)) return bad("head_dim");
  if (!num(parts[4], "br", &v.block_m)) return bad("block_m");
  if (!num(parts[5], "bc", &v.block_n)) return bad("block_n");
  if (!num(parts[6], "w", &v.warps)) return bad("warps");
  if (!num(parts[7], "s", &v.stages)) return bad("stages");
  if (parts[8] == "causal") v.causal = true;
  else if (parts[8] == "full") v.causal = false;
  else return bad("causal");
  return v;
}

}  // namespace flashtune
