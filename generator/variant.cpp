// DType names, Problem helpers and the Variant URI (its text form and kernel name).
#include "flashtune/variant.h"

#include <charconv>
#include <limits>
#include <string>
#include <vector>

#include "flashtune/space.h"
#include "generator/family.h"

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

std::string_view OperationName(Operation operation) {
  return operation == Operation::kBackward ? "bwd" : "fwd";
}

Result<Operation> ParseOperation(std::string_view text, std::string_view what) {
  if (text == "fwd" || text == "forward") return Operation::kForward;
  if (text == "bwd" || text == "backward") return Operation::kBackward;
  return Status(Code::kInvalidArgument,
                std::string(what) + " '" + std::string(text) + "' is not an operation; allowed: fwd, bwd");
}

std::string_view LayoutName(Layout layout) {
  switch (layout) {
    case Layout::kDense: return "dense";
    case Layout::kPaged: return "paged";
    case Layout::kVarlen: return "varlen";
  }
  return "unknown";
}

Result<Layout> ParseLayout(std::string_view text, std::string_view what) {
  for (Layout l : {Layout::kDense, Layout::kPaged, Layout::kVarlen})
    if (text == LayoutName(l)) return l;
  return Status(Code::kInvalidArgument, std::string(what) + ": '" + std::string(text) +
                                            "' is not a layout; allowed: dense, paged, varlen");
}

double Problem::Flops() const {
  double flops = 4.0 * double(batch) * double(heads_q) * double(seqlen_q) * double(seqlen_k) *
                 double(head_dim);
  // FA-2's convention: only the square causal case counts half (the triangle).
  if (causal && seqlen_q == seqlen_k) flops /= 2.0;
  // Backward: five matmuls of the forward's size against the forward's two.
  if (operation == Operation::kBackward) flops *= 2.5;
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
  if (operation == Operation::kBackward) s += " bwd";
  if (layout != Layout::kDense) s += " " + std::string(LayoutName(layout));
  return s;
}

namespace {
// Parameter names are 1-3 characters: compared inline, not through a memcmp call (the launch
// path reads a variant's parameters by name on every call: a third of a warm decode call's host
// time was memcmp, docs/perf-notes.md "forward()'s own host work").
bool SameName(const std::string& a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < b.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}
}  // namespace

int Variant::Param(std::string_view name, int fallback) const {
  for (const VariantParam& p : params)
    if (SameName(p.name, name)) return p.value;
  return fallback;
}

void Variant::SetParam(std::string_view name, int value) {
  for (VariantParam& p : params) {
    if (p.name == name) {
      p.value = value;
      return;
    }
  }
  params.push_back({std::string(name), value});
}

std::string Variant::Uri() const {
  std::string s = family;
  s += "_";
  s += DTypeName(dtype);
  s += "_d" + std::to_string(head_dim);
  for (const VariantParam& p : params) s += "_" + p.name + std::to_string(p.value);
  s += causal ? "_causal" : "_full";
  return s;
}

namespace {

constexpr std::string_view kUriForm = "<family>_<bf16|f16>_d<D>_<param><value>..._<causal|full>";

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

// Parses "<letters><decimal>" strictly: no sign, no leading zeros, no trailing junk.
bool ParseField(std::string_view field, std::string* name, int* out) {
  size_t i = 0;
  while (i < field.size() && field[i] >= 'a' && field[i] <= 'z') ++i;
  if (i == 0) return false;
  std::string_view digits = field.substr(i);
  if (digits.empty() || digits.size() > 6 || (digits.size() > 1 && digits[0] == '0')) return false;
  if (digits[0] < '0' || digits[0] > '9') return false;  // from_chars would take a '-'
  int value = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || ptr != digits.data() + digits.size()) return false;
  *name = std::string(field.substr(0, i));
  *out = value;
  return true;
}

}  // namespace

Result<Variant> Variant::FromUri(std::string_view uri) {
  // The family is the longest registered name the URI starts with (names may hold '_').
  const Family* family = nullptr;
  for (const Family* f : Families()) {
    const std::string prefix = std::string(f->name()) + "_";
    if (uri.substr(0, prefix.size()) == prefix && (!family || f->name().size() > family->name().size())) family = f;
  }
  if (family == nullptr) {
    std::string_view head = uri.substr(0, uri.find('_', uri.find('_') + 1));
    return UriError(uri, "kernel family '" + std::string(head) + "' is not known (known: " + FamilyNames() + ")");
  }
  Variant v;
  v.family = std::string(family->name());
  const std::vector<std::string_view> parts = Split(uri.substr(v.family.size() + 1), '_');
  // dtype, d<D>, one field per parameter, mask.
  const auto& axes = family->axes();
  const size_t expected = 3 + axes.size();
  if (parts.size() != expected) {
    return UriError(uri, "has " + std::to_string(parts.size()) + " '_'-separated fields after '" + v.family +
                             "_', not " + std::to_string(expected));
  }
  if (parts[0] == "bf16") {
    v.dtype = DType::kBF16;
  } else if (parts[0] == "f16") {
    v.dtype = DType::kF16;
  } else {
    return UriError(uri, "dtype field '" + std::string(parts[0]) + "' is not bf16 or f16");
  }
  std::string name;
  if (!ParseField(parts[1], &name, &v.head_dim) || name != "d") {
    return UriError(uri, "head dim field '" + std::string(parts[1]) + "' is not 'd<positive integer>'");
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    int value = 0;
    const std::string_view field = parts[2 + i];
    if (!ParseField(field, &name, &value) || name != axes[i].name) {
      return UriError(uri, std::string(axes[i].description) + " field '" + std::string(field) + "' is not '" +
                               std::string(axes[i].name) + "<positive integer>'");
    }
    v.params.push_back({name, value});
  }
  if (parts.back() == "causal") {
    v.causal = true;
  } else if (parts.back() == "full") {
    v.causal = false;
  } else {
    return UriError(uri, "mask field '" + std::string(parts.back()) + "' is not causal or full");
  }
  // Every rule but the shared-memory limit, which depends on the target: recorded trials of
  // variants that did not fit (compile errors) must still read back.
  Status valid = family->Check(v, std::numeric_limits<int64_t>::max());
  if (!valid.ok()) return UriError(uri, valid.message());
  return v;
}

}  // namespace flashtune
