// Problem sets and the bucketing rule; see include/flashtune/problem_set.h.
#include "flashtune/problem_set.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

namespace flashtune {

namespace {

Status Invalid(std::string message) { return Status(Code::kInvalidArgument, std::move(message)); }

bool SupportedHeadDim(int d) {
  for (int s : kSupportedHeadDims)
    if (s == d) return true;
  return false;
}

std::string HeadDimList() {
  std::string s;
  for (int d : kSupportedHeadDims) s += (s.empty() ? "" : ", ") + std::to_string(d);
  return s;
}

bool ParseInt64(std::string_view s, int64_t* out) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

}  // namespace

int Log2Ceil(int64_t n) {
  int e = 0;
  while (e < 62 && (int64_t{1} << e) < n) ++e;
  return e;
}

Status ValidateProblem(const Problem& p) {
  if (!SupportedHeadDim(p.head_dim))
    return Invalid("head_dim " + std::to_string(p.head_dim) + " is not supported; allowed: " +
                   HeadDimList());
  // The kernel's launch limits: the one rule for the runtime (ValidateForwardArgs), the tuner,
  // the database and the CLI, so nothing is planned or tuned that forward() would refuse.
  constexpr int64_t kInt32Max = 2147483647, kGridYZ = 65535;
  const struct {
    const char* name;
    int64_t value, max;
    const char* why;
  } sizes[] = {{"batch", p.batch, kGridYZ, " (grid z limit)"},
               {"seqlen_q", p.seqlen_q, kInt32Max, " (32-bit kernel index)"},
               {"seqlen_k", p.seqlen_k, kInt32Max, " (32-bit kernel index)"},
               {"heads_q", p.heads_q, kGridYZ, " (grid y limit)"},
               {"heads_kv", p.heads_kv, kGridYZ, ""}};
  for (const auto& s : sizes)
    if (s.value < 1 || s.value > s.max)
      return Invalid(std::string(s.name) + " (" + std::to_string(s.value) + ") must be in [1, " +
                     std::to_string(s.max) + "]" + s.why);
  if (p.heads_q % p.heads_kv != 0)
    return Invalid("heads_q (" + std::to_string(p.heads_q) + ") must be a multiple of heads_kv (" +
                   std::to_string(p.heads_kv) + ")");
  return Status::Ok();
}

Result<int64_t> HeadsFor(const ProblemSetOptions& o, int d) {
  if (d < 1) return Invalid("head_dims: " + std::to_string(d) + " is not supported; allowed: " + HeadDimList());
  const int64_t step = o.heads_kv > 0 ? o.heads_kv : 1;  // Hq must stay a multiple of Hkv
  // Divisible: hidden / D, even when heads_kv does not divide it (ValidateProblem says so).
  if (o.hidden % d == 0) return o.hidden / d;
  // The multiples of `step` just below and above hidden / D.
  const int64_t below = std::max<int64_t>(step, o.hidden / d / step * step), above = below + step;
  if (o.exact_hidden) {
    std::string fix = "hidden " + std::to_string(below * d) + " (" + std::to_string(below) + " heads) or " +
                      std::to_string(above * d) + " (" + std::to_string(above) + " heads)";
    return Invalid("hidden " + std::to_string(o.hidden) + " is not a multiple of head dim " + std::to_string(d) +
                   (step > 1 ? " times heads_kv " + std::to_string(step) : std::string()) + "; give " + fix +
                   ", or leave hidden unset to fit the head count");
  }
  // Nearest by hidden size; a tie takes the smaller count.
  return (o.hidden - below * d) <= (above * d - o.hidden) ? below : above;
}

Result<std::vector<Problem>> MakeProblemSet(const ProblemSetOptions& o) {
  if (o.dtypes.empty()) return Invalid("dtypes: empty; allowed: bf16, f16");
  if (o.head_dims.empty()) return Invalid("head_dims: empty; allowed: " + HeadDimList());
  if (o.causal.empty()) return Invalid("causal: empty; allowed: 0, 1");
  if (o.seqlens.empty()) return Invalid("seqlens: empty; allowed: integers >= 1");
  if (o.hidden < 1) return Invalid("hidden: must be >= 1");
  if (o.tokens < 1) return Invalid("tokens: must be >= 1");
  if (o.heads_kv < 0) return Invalid("heads_kv: must be >= 0 (0 means heads_q)");
  std::vector<Problem> out;
  for (DType dt : o.dtypes)
    for (int d : o.head_dims) {
      if (!SupportedHeadDim(d))
        return Invalid("head_dims: " + std::to_string(d) + " is not supported; allowed: " + HeadDimList());
      auto heads_q = HeadsFor(o, d);
      if (!heads_q.ok()) return heads_q.status();
      for (bool c : o.causal)
        for (int64_t nq : o.seqlens) {
          std::vector<int64_t> nks = o.seqlens_k.empty() ? std::vector<int64_t>{nq} : o.seqlens_k;
          for (int64_t nk : nks) {
            Problem p;
            p.dtype = dt;
            p.head_dim = d;
            p.causal = c;
            p.seqlen_q = nq;
            p.seqlen_k = nk;
            p.heads_q = *heads_q;
            p.heads_kv = o.heads_kv == 0 ? p.heads_q : o.heads_kv;
            p.batch = nq >= 1 ? std::max<int64_t>(1, o.tokens / nq) : 0;
            Status s = ValidateProblem(p);
            if (!s.ok()) return Invalid("problem set: " + p.ToString() + ": " + s.message());
            out.push_back(p);
          }
        }
    }
  return out;
}

Result<Layout> ParseTunedLayout(std::string_view text) {
  if (text == "dense") return Layout::kDense;
  if (text == "paged") return Layout::kPaged;
  return Invalid("'" + std::string(text) + "' is not allowed; allowed: dense, paged");
}

Result<std::vector<Problem>> MakeDecodeSet(DType dtype, int head_dim, int64_t heads_q, int64_t heads_kv,
                                           const DecodeSetOptions& o) {
  if (o.causal.empty()) return Invalid("decode causal: empty; allowed: 0, 1");
  if (o.seqlens_q.empty()) return Invalid("decode seqlens_q: empty; allowed: 1 to " + std::to_string(kDecodeMaxQueries));
  if (o.batches.empty()) return Invalid("decode batches: empty; allowed: integers >= 1");
  if (o.keys.empty()) return Invalid("decode keys: empty; allowed: integers >= 1");
  if (o.layouts.empty()) return Invalid("decode layouts: empty; allowed: dense, paged");
  for (int64_t nq : o.seqlens_q)
    if (nq < 1 || nq > kDecodeMaxQueries)
      return Invalid("decode seqlens_q: " + std::to_string(nq) + " is not a decode length; allowed: 1 to " +
                     std::to_string(kDecodeMaxQueries) + " (longer ones are prefill: --seqlens-q without --decode only)");
  for (Layout l : o.layouts)
    if (l != Layout::kDense && l != Layout::kPaged)
      return Invalid("decode layouts: " + std::string(LayoutName(l)) + " is not allowed; allowed: dense, paged");
  std::vector<int64_t> keys;
  for (int64_t n : o.keys)
    if (o.max_keys <= 0 || n <= o.max_keys) keys.push_back(n);
  if (keys.empty()) keys = {o.max_keys};
  std::vector<Problem> out;
  for (bool causal : o.causal)
    for (int64_t nq : o.seqlens_q)
      for (int64_t batch : o.batches)
        for (int64_t nk : keys) {
          Problem p{dtype, head_dim, causal, batch, nq, nk, heads_q, heads_kv};
          Status s = ValidateProblem(p);
          if (!s.ok()) return Invalid("decode set: " + p.ToString() + ": " + s.message());
          // Doubles: a bad option must not overflow the bound into a shape that passes.
          if (double(batch) * double(nk) * double(heads_kv) * head_dim * 4 > double(kMaxDecodeKvBytes)) continue;
          for (Layout layout : o.layouts) {
            p.layout = layout;
            out.push_back(p);
          }
        }
  if (out.empty())
    return Invalid("decode set: every shape holds more than " + std::to_string(kMaxDecodeKvBytes >> 30) +
                   " GiB of K+V; give smaller batches or key counts");
  return out;
}

std::vector<Problem> DefaultDecodeProblems() {
  auto set = MakeDecodeSet(kDefaultDecodeDType, kDefaultDecodeHeadDim, kDefaultDecodeHeadsQ, kDefaultDecodeHeadsKv);
  return set.ok() ? *set : std::vector<Problem>{};  // the defaults are valid (tested)
}

std::vector<Problem> DefaultGqaProblems() {
  std::vector<Problem> out;
  const ProblemSetOptions defaults;
  for (DType dtype : defaults.dtypes)
    for (int64_t n : defaults.seqlens)
      out.push_back(Problem{dtype, 128, true, std::max<int64_t>(1, defaults.tokens / n), n, n, 16, 2});
  return out;
}

std::vector<Problem> DefaultBackwardProblems() {
  std::vector<Problem> out;
  const ProblemSetOptions defaults;
  for (DType dtype : defaults.dtypes)
    for (int d : {64, 128})
      for (bool causal : {false, true})
        for (int64_t n : {2048, 8192}) {
          const int64_t heads = defaults.hidden / d;
          Problem p{dtype, d, causal, std::max<int64_t>(1, defaults.tokens / n), n, n, heads, heads};
          p.operation = Operation::kBackward;
          out.push_back(p);
        }
  return out;
}

Result<std::vector<Problem>> ParseProblemSet(std::string_view text, std::string_view source,
                                             std::vector<std::string>* notices) {
  // One vocabulary with the CLI and the export's columns; the CLI's dashes are accepted too.
  static const std::pair<const char*, const char*> kDeprecated[] = {
      {"d", "head_dim"}, {"nq", "seqlen_q"}, {"nk", "seqlen_k"}, {"hq", "heads_q"}, {"hkv", "heads_kv"}};
  static const char* kKeys[] = {"dtype",    "head_dim", "causal", "batch",  "seqlen_q", "seqlen_k",
                                "heads_q",  "heads_kv", "tokens", "hidden", "layout"};
  std::vector<std::string> deprecated_seen;
  std::vector<Problem> out;
  int line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string line(text.substr(pos, end - pos));
    pos = end + 1;
    ++line_no;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream in(line);
    std::map<std::string, std::string> fields, written;  // by key; the key as the file spells it
    std::string token;
    const std::string where = std::string(source) + ":" + std::to_string(line_no) + ": ";
    while (in >> token) {
      auto eq = token.find('=');
      if (eq == std::string::npos || eq == 0)
        return Invalid(where + "'" + token + "' is not key=value");
      const std::string as_written = token.substr(0, eq);
      std::string key = as_written;
      for (char& c : key)
        if (c == '-') c = '_';
      for (const auto& [old_key, new_key] : kDeprecated)
        if (key == old_key) {
          if (std::find(deprecated_seen.begin(), deprecated_seen.end(), key) == deprecated_seen.end())
            deprecated_seen.push_back(key);
          key = new_key;
        }
      bool known = false;
      for (const char* k : kKeys) known |= key == k;
      if (!known)
        return Invalid(where + "unknown field '" + as_written +
                       "'; allowed: dtype, head_dim, causal, batch, seqlen_q, seqlen_k, heads_q, heads_kv, tokens, "
                       "hidden, layout");
      if (fields.count(key)) return Invalid(where + "field '" + key + "' given twice");
      fields[key] = token.substr(eq + 1);
      written[key] = as_written;
    }
    if (fields.empty()) {
      if (end == text.size()) break;
      continue;
    }
    std::map<std::string, int64_t> nums;
    for (auto& [k, v] : fields) {
      if (k == "dtype" || k == "layout") continue;
      int64_t n;
      if (!ParseInt64(v, &n)) return Invalid(where + "field '" + written[k] + "': '" + v + "' is not an integer");
      nums[k] = n;
    }
    for (const char* req : {"dtype", "head_dim", "seqlen_q"})
      if (!fields.count(req)) return Invalid(where + "field '" + req + "' is missing");
    Problem p;
    auto dt = ParseDType(fields["dtype"], "dtype");
    if (!dt.ok()) return Invalid(where + "field 'dtype': " + dt.status().message());
    p.dtype = *dt;
    p.head_dim = int(nums["head_dim"]);
    if (nums.count("causal")) {
      if (nums["causal"] != 0 && nums["causal"] != 1)
        return Invalid(where + "field 'causal': allowed 0 or 1");
      p.causal = nums["causal"] == 1;
    }
    p.seqlen_q = nums["seqlen_q"];
    p.seqlen_k = nums.count("seqlen_k") ? nums["seqlen_k"] : p.seqlen_q;
    if (nums.count("batch") && nums.count("heads_q")) {
      p.batch = nums["batch"];
      p.heads_q = nums["heads_q"];
    } else if (nums.count("tokens") && nums.count("hidden")) {
      if (p.seqlen_q < 1 || p.head_dim < 1 || nums["hidden"] % p.head_dim != 0)
        return Invalid(where + "field 'hidden': must be a multiple of head_dim");
      p.batch = std::max<int64_t>(1, nums["tokens"] / p.seqlen_q);
      p.heads_q = nums["hidden"] / p.head_dim;
    } else {
      return Invalid(where + "fields 'batch' and 'heads_q' (or 'tokens' and 'hidden') are missing");
    }
    p.heads_kv = nums.count("heads_kv") ? nums["heads_kv"] : p.heads_q;
    if (fields.count("layout")) {
      auto layout = ParseTunedLayout(fields["layout"]);
      if (!layout.ok()) return Invalid(where + "field 'layout': " + layout.status().message());
      p.layout = *layout;
    }
    Status s = ValidateProblem(p);
    if (!s.ok()) {
      // Name the file's field, not the struct's.
      std::string m = s.message();
      return Invalid(where + "field '" + m.substr(0, m.find(' ')) + "': " + m);
    }
    out.push_back(p);
    if (end == text.size()) break;
  }
  if (out.empty()) return Invalid(std::string(source) + ": no problems");
  if (notices != nullptr && !deprecated_seen.empty()) {
    std::string olds, news;
    for (const std::string& k : deprecated_seen)
      for (const auto& [old_key, new_key] : kDeprecated)
        if (k == old_key) {
          olds += (olds.empty() ? "" : ", ") + k;
          news += (news.empty() ? "" : ", ") + std::string(new_key);
        }
    notices->push_back(std::string(source) + ": field name(s) " + olds + " are deprecated; use " + news);
  }
  return out;
}

Result<std::vector<Problem>> LoadProblemSetFile(const std::string& path, std::vector<std::string>* notices) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status(Code::kIoError, "problem-set file '" + path + "' cannot be read");
  std::stringstream ss;
  ss << f.rdbuf();
  return ParseProblemSet(ss.str(), path, notices);
}

std::string FormatProblemLine(const Problem& p) {
  return "dtype=" + std::string(DTypeName(p.dtype)) + " head_dim=" + std::to_string(p.head_dim) +
         " causal=" + (p.causal ? "1" : "0") + " batch=" + std::to_string(p.batch) +
         " seqlen_q=" + std::to_string(p.seqlen_q) + " seqlen_k=" + std::to_string(p.seqlen_k) +
         " heads_q=" + std::to_string(p.heads_q) + " heads_kv=" + std::to_string(p.heads_kv) +
         (p.layout == Layout::kPaged ? " layout=paged" : "");
}

BucketKey BucketOf(const Problem& p) {
  BucketKey k;
  k.dtype = p.dtype;
  k.head_dim = p.head_dim;
  k.causal = p.causal;
  k.seqlen_q_bucket = Log2Ceil(p.seqlen_q);
  k.seqlen_k_bucket = Log2Ceil(p.seqlen_k);
  k.batch_heads_bucket = Log2Ceil(p.batch * p.heads_q);
  k.kv_group_bucket = p.heads_kv > 0 ? Log2Ceil(p.heads_q / p.heads_kv) : 0;
  k.operation = p.operation;
  k.paged = p.layout == Layout::kPaged;
  return k;
}

std::string BucketString(const BucketKey& k) {
  return std::string(k.operation == Operation::kBackward ? "bwd/" : "") + std::string(DTypeName(k.dtype)) + "/d" + std::to_string(k.head_dim) + "/" +
         (k.causal ? "causal" : "full") + "/q" + std::to_string(k.seqlen_q_bucket) + "/k" +
         std::to_string(k.seqlen_k_bucket) + "/bh" + std::to_string(k.batch_heads_bucket) +
         (k.kv_group_bucket > 0 ? "/g" + std::to_string(k.kv_group_bucket) : std::string()) +
         (k.paged ? "/paged" : "");
}

Result<BucketKey> ParseBucketKey(std::string_view text) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t p = text.find('/', start);
    parts.push_back(text.substr(start, p == std::string_view::npos ? std::string_view::npos : p - start));
    if (p == std::string_view::npos) break;
    start = p + 1;
  }
  auto bad = [&](const char* part) {
    return Invalid("bucket '" + std::string(text) + "': bad " + part +
                   "; expected [bwd/]<dtype>/d<D>/<causal|full>/q<e>/k<e>/bh<e>[/g<e>][/paged]");
  };
  BucketKey k;
  if (!parts.empty() && parts[0] == "bwd") {
    k.operation = Operation::kBackward;
    parts.erase(parts.begin());
  }
  if (parts.size() > 6 && parts.back() == "paged") {
    k.paged = true;
    parts.pop_back();
  }
  if (parts.size() != 6 && parts.size() != 7) return bad("shape");
  auto dt = ParseDType(parts[0], "dtype");
  if (!dt.ok()) return bad("dtype");
  k.dtype = *dt;
  auto num = [](std::string_view s, std::string_view prefix, int* out) {
    if (s.substr(0, prefix.size()) != prefix) return false;
    s.remove_prefix(prefix.size());
    auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
    return r.ec == std::errc() && r.ptr == s.data() + s.size();
  };
  if (!num(parts[1], "d", &k.head_dim)) return bad("head dim");
  if (parts[2] == "causal") k.causal = true;
  else if (parts[2] == "full") k.causal = false;
  else return bad("causal");
  if (!num(parts[3], "q", &k.seqlen_q_bucket)) return bad("q bucket");
  if (!num(parts[4], "k", &k.seqlen_k_bucket)) return bad("k bucket");
  if (!num(parts[5], "bh", &k.batch_heads_bucket)) return bad("bh bucket");
  // "/g0" is not written, so it is not read either: one string per bucket.
  if (parts.size() == 7 && (!num(parts[6], "g", &k.kv_group_bucket) || k.kv_group_bucket <= 0))
    return bad("group bucket");
  return k;
}

int BucketDistance(const BucketKey& a, const BucketKey& b) {
  if (a.operation != b.operation || a.dtype != b.dtype || a.head_dim != b.head_dim || a.causal != b.causal ||
      a.paged != b.paged)
    return -1;
  // Decode (Nq <= 16) and prefill are served by different kernels: never near each other.
  if ((a.seqlen_q_bucket <= kDecodeQueryBucket) != (b.seqlen_q_bucket <= kDecodeQueryBucket)) return -1;
  return std::abs(a.seqlen_q_bucket - b.seqlen_q_bucket) + std::abs(a.seqlen_k_bucket - b.seqlen_k_bucket) +
         std::abs(a.batch_heads_bucket - b.batch_heads_bucket);
}

int GroupGap(const BucketKey& a, const BucketKey& b) { return std::abs(a.kv_group_bucket - b.kv_group_bucket); }

}  // namespace flashtune
