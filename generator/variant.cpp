// DType names, Problem helpers and the Variant URI (its text form and kernel name).
#include "flashtune/variant.h"

#include <charconv>
#include <string>
#include <vector>

namespace flashtune {

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
  }
  return "unknown";
}

Result<DType> ParseDType(std::string_view text, std::string_view what) {
  if (text == "f16" || text == "fp16" || text == "half" || text == "float16") return DType::kF16;
  if (text == "bf16" || text == "bfloat16") return DType::kBF16;
  return Status(Code::kInvalidArgument, std::string(what) + ": '" + std::string(text) +
                                            "' is not a supported dtype; allowed: f16, bf16");
}

double Problem::Flops() const {
  double flops = 4.0 * double(batch) * double(heads_q) * double(seqlen_q) * double(seqlen_k) *
                 double(head_dim);
  // FA-2's convention: only the square causal case counts half (the triangle).
  if (causal && seqlen_q == seqlen_k) flops /= 2.0;
  return flops;
}

std::string Problem::ToString() const {
  std::string s(DTypeName(dtype));
  s += " d" + std::to_string(head_dim);
  s += causal ? " causal" : " full";
  s += " B" + std::to_string(batch);
  s += " Nq" + std::to_string(seqlen_q);
  s += " Nk" + std::to_string(seqlen_k);
  s += " Hq" + std::to_string(heads_q);
  s += " Hkv" + std::to_string(heads_kv);
  return s;
}

std::string Variant::Uri() const {
  std::string s = "fa2_fwd_";
  s += DTypeName(dtype);
  s += "_d" + std::to_string(head_dim);
  s += "_br" + std::to_string(block_m);
  s += "_bc" + std::to_string(block_n);
  s += "_w" + std::to_string(warps);
  s += "_s" + std::to_string(stages);
  s += causal ? "_causal" : "_full";
  return s;
}

namespace {

constexpr std::string_view kUriForm = "fa2_fwd_<bf16|f16>_d<D>_br<Br>_bc<Bc>_w<W>_s<S>_<causal|full>";

Status UriError(std::string_view uri, const std::string& what) {
  return Status(Code::kInvalidArgument, "variant URI '" + std::string(uri) + "': " + what +
                                            "; expected " + std::string(kUriForm));
}

std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t pos = text.find(sep, start);
    if (pos == std::string_view::npos) {
      parts.push_back(text.substr(start));
      return parts;
    }
    parts.push_back(text.substr(start, pos - start));
    start = pos + 1;
  }
}

// Parses "<prefix><decimal>" strictly: no sign, no leading zeros, no trailing junk.
bool ParseField(std::string_view field, std::string_view prefix, int* out) {
  if (field.substr(0, prefix.size()) != prefix) return false;
  std::string_view digits = field.substr(prefix.size());
  if (digits.empty() || digits.size() > 6 || (digits.size() > 1 && digits[0] == '0')) return false;
  if (digits[0] < '0' || digits[0] > '9') return false;  // from_chars would take a '-'
  int value = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || ptr != digits.data() + digits.size()) return false;
  *out = value;
  return true;
}

}  // namespace

Result<Variant> Variant::FromUri(std::string_view uri) {
  std::vector<std::string_view> parts = Split(uri, '_');
  // fa2 fwd dtype d br bc w s mask
  if (parts.size() != 9) {
    return UriError(uri, "has " + std::to_string(parts.size()) + " '_'-separated fields, not 9");
  }
  if (parts[0] != "fa2" || parts[1] != "fwd") {
    return UriError(uri, "kernel family '" + std::string(parts[0]) + "_" + std::string(parts[1]) +
                             "' is not fa2_fwd");
  }
  Variant v;
  if (parts[2] == "bf16") {
    v.dtype = DType::kBF16;
  } else if (parts[2] == "f16") {
    v.dtype = DType::kF16;
  } else {
    return UriError(uri, "dtype field '" + std::string(parts[2]) + "' is not bf16 or f16");
  }
  struct Field {
    std::string_view prefix;
    const char* name;
    int* out;
  };
  const Field fields[] = {{"d", "head dim", &v.head_dim},
                          {"br", "block_m (br)", &v.block_m},
                          {"bc", "block_n (bc)", &v.block_n},
                          {"w", "warps (w)", &v.warps},
                          {"s", "stages (s)", &v.stages}};
  for (int i = 0; i < 5; ++i) {
    const Field& f = fields[i];
    if (!ParseField(parts[3 + i], f.prefix, f.out)) {
      return UriError(uri, std::string(f.name) + " field '" + std::string(parts[3 + i]) +
                               "' is not '" + std::string(f.prefix) + "<positive integer>'");
    }
  }
  if (parts[8] == "causal") {
    v.causal = true;
  } else if (parts[8] == "full") {
    v.causal = false;
  } else {
    return UriError(uri, "mask field '" + std::string(parts[8]) + "' is not causal or full");
  }
  return v;
}

}  // namespace flashtune
