// A model's attention shape from its config.json; see include/flashtune/model_config.h.
#include "flashtune/model_config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

namespace flashtune {

namespace {

Status Invalid(std::string message) { return Status(Code::kInvalidArgument, std::move(message)); }

// One JSON scalar: its kind and text (a string unescaped only as far as configs need).
struct Scalar {
  enum Kind { kNumber, kString, kBool, kNull } kind = kNull;
  std::string text;
};

// Just enough JSON for config files: the whole document is checked, and the scalars of the top
// level and of objects one level down are kept as "key" and "outer.key".
class ConfigReader {
 public:
  explicit ConfigReader(std::string_view text) : text_(text) {}

  Status Read(std::map<std::string, Scalar>* out) {
    out_ = out;
    SkipSpace();
    if (!Peek('{')) return Error("expected a JSON object");
    FT_RETURN_IF_ERROR(Value(""));
    SkipSpace();
    if (pos_ != text_.size()) return Error("text after the JSON object");
    return Status::Ok();
  }

 private:
  Status Error(const std::string& what) const {
    return Invalid("not valid JSON at byte " + std::to_string(pos_) + ": " + what);
  }
  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool Peek(char c) const { return pos_ < text_.size() && text_[pos_] == c; }

  Status String(std::string* s) {
    ++pos_;  // the opening quote
    while (pos_ < text_.size() && text_[pos_] != '"') {
      if (text_[pos_] == '\\') {
        if (++pos_ >= text_.size()) break;
        if (text_[pos_] == 'u') pos_ += 4;  // \uXXXX: not in any field read here
        else s->push_back(text_[pos_] == 'n' ? '\n' : text_[pos_]);
        ++pos_;
        continue;
      }
      s->push_back(text_[pos_++]);
    }
    if (pos_ >= text_.size()) return Error("unterminated string");
    ++pos_;
    return Status::Ok();
  }

  // A value at `path` ("" for the document); depth 0 is the document, 1 its members.
  Status Value(const std::string& path, int depth = 0) {
    SkipSpace();
    if (pos_ >= text_.size()) return Error("unexpected end");
    const char c = text_[pos_];
    if (c == '{' || c == '[') {
      const char close = c == '{' ? '}' : ']';
      ++pos_;
      SkipSpace();
      if (Peek(close)) {
        ++pos_;
        return Status::Ok();
      }
      for (int i = 0;; ++i) {
        std::string member;
        if (c == '{') {
          SkipSpace();
          if (!Peek('"')) return Error("expected a member name");
          std::string key;
          FT_RETURN_IF_ERROR(String(&key));
          SkipSpace();
          if (!Peek(':')) return Error("expected ':'");
          ++pos_;
          member = path.empty() ? key : path + "." + key;
        } else {
          member = path + "[" + std::to_string(i) + "]";
        }
        FT_RETURN_IF_ERROR(Value(c == '{' && depth < 2 ? member : std::string("[skip]"), depth + 1));
        SkipSpace();
        if (Peek(',')) {
          ++pos_;
          continue;
        }
        if (Peek(close)) {
          ++pos_;
          return Status::Ok();
        }
        return Error(std::string("expected ',' or '") + close + "'");
      }
    }
    Scalar s;
    if (c == '"') {
      s.kind = Scalar::kString;
      FT_RETURN_IF_ERROR(String(&s.text));
    } else {
      const size_t start = pos_;
      while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '-' ||
                                     text_[pos_] == '+' || text_[pos_] == '.'))
        ++pos_;
      s.text = std::string(text_.substr(start, pos_ - start));
      if (s.text == "true" || s.text == "false") s.kind = Scalar::kBool;
      else if (s.text == "null") s.kind = Scalar::kNull;
      else if (!s.text.empty() && (std::isdigit(static_cast<unsigned char>(s.text[0])) || s.text[0] == '-')) s.kind = Scalar::kNumber;
      else return Error("unexpected '" + std::string(1, c) + "'");
    }
    if (depth >= 1 && path != "[skip]" && path.find('[') == std::string::npos) (*out_)[path] = s;
    return Status::Ok();
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::map<std::string, Scalar>* out_ = nullptr;
};

}  // namespace

Result<ModelShape> ParseModelConfig(std::string_view json, std::string_view source) {
  std::map<std::string, Scalar> fields;
  if (Status s = ConfigReader(json).Read(&fields); !s.ok()) return Invalid(std::string(source) + ": " + s.message());
  const std::string where = std::string(source) + ": ";
  // The language model's fields: the top level, else "text_config" (multimodal checkpoints).
  static const char* kHeads[] = {"num_attention_heads", "n_head", "num_heads"};
  std::string prefix;
  auto has = [&](const std::string& p, const char* key) {
    auto it = fields.find(p + key);
    return it != fields.end() && it->second.kind != Scalar::kNull;
  };
  bool found = false;
  for (const char* p : {"", "text_config."})
    for (const char* k : kHeads)
      if (!found && has(p, k)) {
        prefix = p;
        found = true;
      }
  if (!found)
    return Invalid(where + "field 'num_attention_heads' is missing (also looked for n_head, num_heads, and under "
                           "text_config)");
  // The first present, non-null name of a field; its integer value, or an error naming it.
  auto integer = [&](std::initializer_list<const char*> names, int64_t* out, bool* present) -> Status {
    *present = false;
    for (const char* n : names) {
      auto it = fields.find(prefix + n);
      if (it == fields.end() || it->second.kind == Scalar::kNull) continue;
      const Scalar& v = it->second;
      double d = 0;
      auto r = std::from_chars(v.text.data(), v.text.data() + v.text.size(), d);
      if (v.kind != Scalar::kNumber || r.ec != std::errc() || d != std::floor(d) || d < 1)
        return Invalid(where + "field '" + prefix + n + "': '" + v.text + "' is not a positive integer");
      *out = static_cast<int64_t>(d);
      *present = true;
      return Status::Ok();
    }
    return Status::Ok();
  };
  ModelShape m;
  bool present = false;
  FT_RETURN_IF_ERROR(integer({"num_attention_heads", "n_head", "num_heads"}, &m.heads_q, &present));
  FT_RETURN_IF_ERROR(integer({"num_key_value_heads", "num_kv_heads", "n_head_kv"}, &m.heads_kv, &present));
  if (!present) {
    auto mq = fields.find(prefix + "multi_query");
    m.heads_kv = mq != fields.end() && mq->second.text == "true" ? 1 : m.heads_q;
  }
  int64_t head_dim = 0, hidden = 0;
  FT_RETURN_IF_ERROR(integer({"head_dim"}, &head_dim, &present));
  if (!present) {
    FT_RETURN_IF_ERROR(integer({"hidden_size", "n_embd", "d_model"}, &hidden, &present));
    if (!present) return Invalid(where + "field 'head_dim' is missing, and so is 'hidden_size' to derive it from");
    if (hidden % m.heads_q != 0)
      return Invalid(where + "field 'hidden_size' (" + std::to_string(hidden) + ") is not a multiple of " +
                     "num_attention_heads (" + std::to_string(m.heads_q) + "); give head_dim");
    head_dim = hidden / m.heads_q;
  }
  m.head_dim = static_cast<int>(std::min<int64_t>(head_dim, 1 << 20));
  FT_RETURN_IF_ERROR(integer({"max_position_embeddings", "n_positions", "max_seq_len", "seq_length"},
                             &m.max_positions, &present));
  for (const char* n : {"torch_dtype", "dtype"}) {
    auto it = fields.find(prefix + n);
    if (it == fields.end()) it = fields.find(n);  // some multimodal configs keep it at the top
    if (it == fields.end() || it->second.kind != Scalar::kString) continue;
    if (it->second.text == "bfloat16") m.dtype = DType::kBF16;
    if (it->second.text == "float16") m.dtype = DType::kF16;
    break;
  }
  Problem probe;
  probe.head_dim = m.head_dim;
  probe.heads_q = m.heads_q;
  probe.heads_kv = m.heads_kv;
  if (Status s = ValidateProblem(probe); !s.ok()) return Invalid(where + s.message());
  return m;
}

Result<ModelShape> LoadModelConfig(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status(Code::kIoError, "model config '" + path + "' cannot be read");
  std::stringstream ss;
  ss << f.rdbuf();
  return ParseModelConfig(ss.str(), path);
}

Result<std::vector<Problem>> ModelProblemSet(const ModelShape& model, const ProblemSetOptions& options,
                                             bool use_model_dtype) {
  ProblemSetOptions o = options;
  o.head_dims = {model.head_dim};
  o.hidden = model.heads_q * model.head_dim;
  o.exact_hidden = true;
  o.heads_kv = model.heads_kv;
  if (use_model_dtype && model.dtype) o.dtypes = {*model.dtype};
  if (model.max_positions > 0) {
    // Lengths past the model's context are never run; none left: the context itself.
    std::vector<int64_t> fit;
    for (int64_t n : o.seqlens)
      if (n <= model.max_positions) fit.push_back(n);
    o.seqlens = fit.empty() ? std::vector<int64_t>{model.max_positions} : fit;
    std::vector<int64_t> fit_k;
    for (int64_t n : o.seqlens_k)
      if (n <= model.max_positions) fit_k.push_back(n);
    if (!o.seqlens_k.empty()) o.seqlens_k = fit_k.empty() ? std::vector<int64_t>{model.max_positions} : fit_k;
  }
  return MakeProblemSet(o);
}

Result<std::vector<Problem>> ModelDecodeSet(const ModelShape& model, const std::vector<DType>& dtypes,
                                            DecodeSetOptions options, bool use_model_dtype) {
  const std::vector<DType> which = use_model_dtype && model.dtype ? std::vector<DType>{*model.dtype} : dtypes;
  if (which.empty()) return Status(Code::kInvalidArgument, "dtypes: empty; allowed: bf16, f16");
  if (model.max_positions > 0) options.max_keys = model.max_positions;
  std::vector<Problem> out;
  for (DType dtype : which) {
    auto set = MakeDecodeSet(dtype, model.head_dim, model.heads_q, model.heads_kv, options);
    if (!set.ok()) return set.status();
    out.insert(out.end(), set->begin(), set->end());
  }
  return out;
}

}  // namespace flashtune
