// The replay measurer: recorded timings instead of a GPU; see include/flashtune/replay_measurer.h.
#include <cmath>
#include <sqlite3.h>

#include <charconv>
#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "flashtune/replay_measurer.h"
#include "flashtune/space.h"
#include "flashtune/tuner.h"

namespace flashtune {

namespace {

Status Invalid(std::string m) { return Status(Code::kInvalidArgument, std::move(m)); }

Code CodeFromName(std::string_view name, bool* found) {
  for (int c = 0; c <= int(Code::kInternal); ++c)
    if (CodeName(Code(c)) == name) {
      *found = true;
      return Code(c);
    }
  *found = false;
  return Code::kInternal;
}

// Splits CSV text into records of fields (RFC 4180 quoting; newlines allowed inside quotes).
// line_of[i] is the 1-based line where record i starts.
std::vector<std::vector<std::string>> ParseCsv(std::string_view text, std::vector<int>* line_of) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, any = false;
  int line = 1, start_line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '"') {
      quoted = true;
      any = true;
    } else if (c == ',') {
      row.push_back(std::move(field));
      field.clear();
      any = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (any || !field.empty()) {
        row.push_back(std::move(field));
        rows.push_back(std::move(row));
        line_of->push_back(start_line);
      }
      row.clear();
      field.clear();
      any = false;
      start_line = ++line;
    } else {
      field += c;
      any = true;
    }
  }
  if (any || !field.empty()) {
    row.push_back(std::move(field));
    rows.push_back(std::move(row));
    line_of->push_back(start_line);
  }
  return rows;
}

// A JSON array of objects → the same records as CSV (header + rows), using SQLite's json_each.
Result<std::vector<std::vector<std::string>>> JsonToRecords(std::string_view text, std::string_view source) {
  static const char* kCols[] = {"dtype", "head_dim", "causal", "batch", "seqlen_q", "seqlen_k", "heads_q",
                                "heads_kv", "variant", "status", "median_us", "iqr_us", "reps", "registers",
                                "smem_bytes", "spill_bytes", "compile_ms", "message", "source_hash", "phase"};
  sqlite3* db = nullptr;
  sqlite3_open(":memory:", &db);
  std::string rows_sql = "SELECT ";
  for (size_t i = 0; i < std::size(kCols); ++i)
    rows_sql += std::string(i ? ", " : "") + "json_extract(value, '$." + kCols[i] + "')";
  rows_sql += " FROM json_each(?1) ORDER BY key";
  std::vector<std::vector<std::string>> out;
  out.emplace_back(std::begin(kCols), std::end(kCols));
  Status status;
  sqlite3_stmt* check = nullptr;
  sqlite3_prepare_v2(db, "SELECT json_valid(?1), json_type(?1)", -1, &check, nullptr);
  sqlite3_bind_text(check, 1, text.data(), int(text.size()), SQLITE_TRANSIENT);
  if (sqlite3_step(check) != SQLITE_ROW || sqlite3_column_int(check, 0) != 1) {
    status = Invalid(std::string(source) + ": not valid JSON");
  } else if (std::string(reinterpret_cast<const char*>(sqlite3_column_text(check, 1))) != "array") {
    status = Invalid(std::string(source) + ": expected a JSON array of objects");
  }
  sqlite3_finalize(check);
  if (status.ok()) {
    sqlite3_stmt* q = nullptr;
    sqlite3_prepare_v2(db, rows_sql.c_str(), -1, &q, nullptr);
    sqlite3_bind_text(q, 1, text.data(), int(text.size()), SQLITE_TRANSIENT);
    while (sqlite3_step(q) == SQLITE_ROW) {
      std::vector<std::string> row;
      for (int c = 0; c < int(std::size(kCols)); ++c) {
        const unsigned char* t = sqlite3_column_text(q, c);
        row.push_back(t ? reinterpret_cast<const char*>(t) : "");
      }
      out.push_back(std::move(row));
    }
    sqlite3_finalize(q);
  }
  sqlite3_close(db);
  if (!status.ok()) return status;
  return out;
}

bool ToInt(const std::string& s, int64_t* v) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}
bool ToDouble(const std::string& s, double* v) {
  if (s.empty()) {
    *v = 0;
    return true;
  }
  auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

}  // namespace

Result<std::unique_ptr<ReplayMeasurer>> ReplayMeasurer::FromFile(const std::string& path, Options options) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status(Code::kIoError, "replay file '" + path + "' cannot be read");
  std::stringstream ss;
  ss << f.rdbuf();
  return FromText(ss.str(), path, std::move(options));
}

Result<std::unique_ptr<ReplayMeasurer>> ReplayMeasurer::FromText(std::string_view text, std::string_view source,
                                                                 Options options) {
  std::vector<std::vector<std::string>> records;
  std::vector<int> line_of;
  size_t first = text.find_first_not_of(" \t\r\n");
  bool json = first != std::string_view::npos && text[first] == '[';
  if (json) {
    auto r = JsonToRecords(text, source);
    if (!r.ok()) return r.status();
    records = std::move(*r);
    for (size_t i = 0; i < records.size(); ++i) line_of.push_back(int(i));  // "line" = array index + 1
  } else {
    records = ParseCsv(text, &line_of);
  }
  if (records.empty()) return Invalid(std::string(source) + ": empty replay file");
  const std::string where_kind = json ? ": element " : ":";
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < records[0].size(); ++i) col[records[0][i]] = i;
  for (const char* req : {"dtype", "head_dim", "causal", "batch", "seqlen_q", "seqlen_k", "heads_q", "heads_kv",
                          "variant", "status", "median_us", "iqr_us"})
    if (!col.count(req)) return Invalid(std::string(source) + ": column '" + req + "' is missing");
  std::unique_ptr<ReplayMeasurer> m(new ReplayMeasurer(std::move(options)));
  for (size_t r = 1; r < records.size(); ++r) {
    const auto& row = records[r];
    const std::string where = std::string(source) + where_kind + std::to_string(line_of[r]) + ": ";
    auto get = [&](const char* name) -> std::string {
      auto it = col.find(name);
      return it == col.end() || it->second >= row.size() ? std::string() : row[it->second];
    };
    Problem p;
    auto dt = ParseDType(get("dtype"), "dtype");
    if (!dt.ok()) return Invalid(where + "column 'dtype': " + dt.status().message());
    p.dtype = *dt;
    int64_t v;
    struct IntCol { const char* name; int64_t* out; };
    int64_t d = 0, causal = 0;
    for (IntCol c : {IntCol{"head_dim", &d}, IntCol{"causal", &causal}, IntCol{"batch", &p.batch},
                     IntCol{"seqlen_q", &p.seqlen_q}, IntCol{"seqlen_k", &p.seqlen_k}, IntCol{"heads_q", &p.heads_q},
                     IntCol{"heads_kv", &p.heads_kv}}) {
      if (!ToInt(get(c.name), &v)) return Invalid(where + "column '" + c.name + "': '" + get(c.name) + "' is not an integer");
      *c.out = v;
    }
    if (d < 0 || d > 1024) return Invalid(where + "column 'head_dim': " + std::to_string(d) + " is out of range");
    p.head_dim = int(d);
    p.causal = causal != 0;
    // Optional (exports before schema 4 have no layout column): absent or empty is dense.
    if (const std::string text = get("layout"); !text.empty()) {
      auto layout = ParseTunedLayout(text);
      if (!layout.ok()) return Invalid(where + "column 'layout': " + layout.status().message());
      p.layout = *layout;
    }
    Status valid = ValidateProblem(p);
    if (!valid.ok()) return Invalid(where + valid.message());
    auto var = Variant::FromUri(get("variant"));
    if (!var.ok()) return Invalid(where + "column 'variant': " + var.status().message());
    p.operation = ClassOf(*var).operation;  // a backward family's row is a backward problem's
    Measurement meas;
    bool known = false;
    Code code = CodeFromName(get("status"), &known);
    if (!known) return Invalid(where + "column 'status': '" + get("status") + "' is not a status name (ok, compile_error, ...)");
    meas.status = code == Code::kOk ? Status::Ok() : Status(code, get("message").empty() ? "recorded " + get("status") : get("message"));
    if (!ToDouble(get("median_us"), &meas.median_us)) return Invalid(where + "column 'median_us' is not a number");
    if (!ToDouble(get("iqr_us"), &meas.iqr_us)) return Invalid(where + "column 'iqr_us' is not a number");
    double x;
    // Optional counts: absent or empty is 0; anything else must be a count that fits an int.
    for (auto [name, out] : {std::pair<const char*, int*>{"reps", &meas.reps}, {"registers", &meas.registers},
                             {"smem_bytes", &meas.smem_bytes}, {"spill_bytes", &meas.spill_bytes}}) {
      if (!ToDouble(get(name), &x)) continue;
      if (!(x >= 0 && x <= 2147483647.0))
        return Invalid(where + "column '" + name + "': " + get(name) + " is not a count (0 .. 2^31-1)");
      *out = int(x);
    }
    if (ToDouble(get("compile_ms"), &x)) meas.compile_ms = x;
    meas.source_hash = get("source_hash");
    if (code == Code::kOk && !(meas.median_us > 0 && std::isfinite(meas.median_us)))
      return Invalid(where + "column 'median_us' must be finite and > 0 for status ok");
    Entry* e = m->Find(p, *var);
    if (!e) {
      m->entries_.push_back(Entry{p, *var, {}, 1});
      e = &m->entries_.back();
    }
    e->rows.push_back(std::move(meas));
  }
  // A header and nothing else would "tune" nothing and exit 0 with 0 errors.
  if (m->entries_.empty()) return Invalid(std::string(source) + ": no recorded measurements (only a header)");
  return m;
}

ReplayMeasurer::Entry* ReplayMeasurer::Find(const Problem& p, const Variant& v) {
  for (Entry& e : entries_)
    if (e.problem == p && e.variant == v) return &e;
  return nullptr;
}

Result<Measurement> ReplayMeasurer::Measure(const Problem& p, const Variant& v) {
  Entry* e = Find(p, v);
  if (!e) return Status(Code::kNotFound, "replay: nothing recorded for " + v.Uri() + " on " + p.ToString());
  if (options_.delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(options_.delay_ms));
  ++measure_calls_;
  return e->rows.front();
}

Result<int> ReplayMeasurer::CompiledRegisters(const Variant& v) {
  for (const Entry& e : entries_)
    if (e.variant == v)
      for (const Measurement& m : e.rows)
        if (m.registers > 0) return m.registers;
  return Status(Code::kNotFound, "replay: no registers recorded for " + v.Uri());
}

Result<std::vector<Measurement>> ReplayMeasurer::Remeasure(const Problem& p, const std::vector<Variant>& vs) {
  std::vector<Measurement> out;
  for (const Variant& v : vs) {
    Entry* e = Find(p, v);
    if (!e) return Status(Code::kNotFound, "replay: nothing recorded for " + v.Uri() + " on " + p.ToString());
    if (options_.delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(options_.delay_ms));
    // Later rows answer re-timings in turn; with one row the first measurement repeats.
    if (e->rows.size() == 1) {
      out.push_back(e->rows.front());
    } else {
      out.push_back(e->rows[e->next_retime]);
      e->next_retime = e->next_retime + 1 < e->rows.size() ? e->next_retime + 1 : 1;
    }
  }
  return out;
}

std::vector<Problem> ReplayMeasurer::Problems() const {
  std::vector<Problem> out;
  for (const Entry& e : entries_)
    if (std::find(out.begin(), out.end(), e.problem) == out.end()) out.push_back(e.problem);
  return out;
}

std::vector<Variant> ReplayMeasurer::Variants(const Problem& p) const {
  std::vector<Variant> out;
  for (const Entry& e : entries_)
    if (e.problem == p) out.push_back(e.variant);
  return out;
}

}  // namespace flashtune
