// Text and colour helpers the report's sections share; see report/page.h.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <tuple>

#include "generator/family.h"
#include "report/page.h"

namespace flashtune::html {

namespace {

// Viridis-like colour map (dark purple → teal → yellow); t in [0, 1].
struct Rgb {
  double r, g, b;
};
constexpr Rgb kStops[] = {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};

std::string ColourHex(const Rgb& c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", int(c.r + 0.5), int(c.g + 0.5), int(c.b + 0.5));
  return buf;
}

}  // namespace

std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// Three significant digits or so: 312, 31.2, 3.12.
std::string Num(double v) {
  if (!(v == v)) return "–";
  double a = std::fabs(v);
  if (a >= 100) return Fmt("%.0f", v);
  if (a >= 10) return Fmt("%.1f", v);
  return Fmt("%.2f", v);
}

std::string Int(int64_t v) { return std::to_string(v); }

std::string NowUtc() {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// "2026-11-30T12:34:56.789Z" (the database's timestamps) → seconds since the epoch.
std::optional<double> ParseIso(const std::string& s) {
  int y, mo, d, h, mi;
  double sec;
  if (std::sscanf(s.c_str(), "%d-%d-%dT%d:%d:%lf", &y, &mo, &d, &h, &mi, &sec) != 6) return std::nullopt;
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  double whole = std::floor(sec);
  tm.tm_sec = int(whole);
  return double(timegm(&tm)) + (sec - whole);
}

// "2026-11-30 12:34:56 UTC" for people.
std::string ShowTime(const std::string& iso) {
  if (iso.size() < 19) return iso;
  return iso.substr(0, 10) + " " + iso.substr(11, 8) + " UTC";
}

std::string Duration(double seconds) {
  if (seconds < 0) return "–";
  if (seconds < 10) return Fmt("%.2f s", seconds);
  if (seconds < 120) return Fmt("%.0f s", seconds);
  int64_t s = int64_t(seconds + 0.5);
  char buf[64];
  if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%lld min %02lld s", (long long)(s / 60), (long long)(s % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%lld h %02lld min", (long long)(s / 3600), (long long)(s / 60 % 60));
  }
  return buf;
}

// Cuts at `max` bytes without splitting a UTF-8 sequence.
std::string CutUtf8(const std::string& s, size_t max) {
  if (s.size() <= max) return s;
  size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

std::string ProblemKind(const Problem& p) {
  return std::string(DTypeName(p.dtype)) + " · d" + std::to_string(p.head_dim) + " · " +
         (p.causal ? "causal" : "non-causal");
}

std::string ProblemShape(const Problem& p) {
  std::string heads = "H " + Int(p.heads_q);
  if (p.heads_kv != p.heads_q) heads += " (KV " + Int(p.heads_kv) + ")";
  std::string s = "B " + Int(p.batch) + " × " + heads + " · N " + Int(p.seqlen_q);
  if (p.seqlen_k != p.seqlen_q) s += " (keys " + Int(p.seqlen_k) + ")";
  return s;
}

std::string TileText(const Variant& v) {
  auto family = FamilyOf(v);
  return HtmlEscape(v.family) + " " + (family.ok() ? HtmlEscape((*family)->Describe(v)) : std::string());
}

// Order of the failure groups: the tuner's usual statuses first, then any other by name.
int StatusRank(const std::string& s) {
  static const char* kOrder[] = {"compile_error", "out_of_resources", "wrong_result", "fault", "timeout"};
  for (int i = 0; i < 5; ++i)
    if (s == kOrder[i]) return i;
  return 5;
}

std::string StatusMeaning(const std::string& s) {
  if (s == "compile_error") return "NVRTC rejected the generated kernel source; the message holds the compiler log.";
  if (s == "out_of_resources")
    return "The GPU refused the launch: registers, shared memory or threads per block exceed what the device offers.";
  if (s == "wrong_result")
    return "The kernel ran, but its output disagreed with the reference; such a variant can never win.";
  if (s == "fault")
    return "The kernel crashed on the GPU (illegal address or similar); the tuner recreated its CUDA context and went on.";
  if (s == "timeout") return "The kernel or the compile/measure worker did not finish in time.";
  return "Recorded with status \"" + s + "\".";
}

// Short cell label for a failure (cells are 50 px wide); the legend and tooltip spell it out.
std::string StatusShort(const std::string& s) {
  if (s == "compile_error") return "compile";
  if (s == "out_of_resources") return "no res";
  if (s == "wrong_result") return "wrong";
  if (s == "fault") return "fault";
  if (s == "timeout") return "timeout";
  return s.substr(0, 7);
}

std::string Colour(double t) {
  t = std::clamp(t, 0.0, 1.0) * 4;
  int i = std::min(int(t), 3);
  double f = t - i;
  const Rgb& a = kStops[i];
  const Rgb& b = kStops[i + 1];
  return ColourHex({a.r + (b.r - a.r) * f, a.g + (b.g - a.g) * f, a.b + (b.b - a.b) * f});
}

double TrialTflops(const TrialRow& t) {
  if (t.trial.tflops > 0) return t.trial.tflops;
  if (t.trial.median_us > 0) return t.trial.problem.Flops() / (t.trial.median_us * 1e6);
  return 0;
}

bool ProblemLess(const Problem& a, const Problem& b) {
  return std::make_tuple(DTypeName(a.dtype), a.head_dim, a.causal, a.seqlen_q, a.seqlen_k, a.batch, a.heads_q, a.heads_kv) <
         std::make_tuple(DTypeName(b.dtype), b.head_dim, b.causal, b.seqlen_q, b.seqlen_k, b.batch, b.heads_q, b.heads_kv);
}

std::string DeviceTitle(const DeviceRecord& d) {
  return HtmlEscape(d.name) + " <span class=\"muted\">sm_" + Int(d.cc_major) + Int(d.cc_minor) + " · " +
         Int(d.sm_count) + " SMs · driver " + HtmlEscape(d.driver_version) + " · " + HtmlEscape(d.uuid) + "</span>";
}

std::string ToolchainText(const ToolchainInfo& t) {
  return "NVRTC " + HtmlEscape(t.nvrtc_version) + " · generator " + HtmlEscape(t.generator_version) +
         " · templates <code title=\"" + HtmlEscape(t.template_hash) + "\">" +
         HtmlEscape(CutUtf8(t.template_hash, 12)) + (t.template_hash.size() > 12 ? "…" : "") + "</code>";
}

std::string StaleBadge(const ToolchainInfo& t, const HtmlReportOptions& o) {
  if (!o.current_toolchain) return "";
  if (t == *o.current_toolchain) return " <span class=\"badge ok\">current toolchain</span>";
  return " <span class=\"badge stale\" title=\"measured with another NVRTC, generator or template than this "
         "build; this build's runtime does not use these results\">stale toolchain</span>";
}

std::string GroupTitle(const Group& g, const HtmlReportOptions& o) {
  return "<h3 class=\"group-title\">" + DeviceTitle(g.device) + "</h3>\n<p class=\"muted\">" +
         ToolchainText(g.toolchain) + StaleBadge(g.toolchain, o) + "</p>\n";
}

// A message cell: short messages inline; long or multi-line ones cut, with the whole text in a
// <details> so the table stays scannable.
std::string MessageHtml(const std::string& message) {
  if (message.empty()) return "<span class=\"muted\">(no message recorded)</span>";
  constexpr size_t kShort = 140;
  size_t nl = message.find('\n');
  if (message.size() <= kShort && nl == std::string::npos) return "<span class=\"msg\">" + HtmlEscape(message) + "</span>";
  std::string head = CutUtf8(message.substr(0, std::min(nl, message.size())), kShort);
  size_t lines = 1 + size_t(std::count(message.begin(), message.end(), '\n'));
  return "<details><summary><span class=\"msg\">" + HtmlEscape(head) + "…</span> <span class=\"muted\">(full text: " +
         Int(int64_t(lines)) + (lines == 1 ? " line, " : " lines, ") + Int(int64_t(message.size())) +
         " characters)</span></summary><pre>" + HtmlEscape(message) + "</pre></details>";
}

const char* const kCss = R"css(
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; background: #f4f5f7; color: #1c2230;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", "Liberation Sans", sans-serif; }
main { max-width: 1360px; margin: 0 auto; padding: 20px 24px 40px; }
h1 { font-size: 24px; margin: 4px 0 6px; }
h2 { font-size: 19px; margin: 0 0 10px; }
h3 { font-size: 15.5px; margin: 18px 0 6px; }
p { margin: 6px 0; }
a { color: #1f5fbf; }
code, pre { font-family: ui-monospace, "DejaVu Sans Mono", "Liberation Mono", monospace; font-size: 12.5px; }
.lead { font-size: 15px; max-width: 980px; }
.card { background: #fff; border: 1px solid #dadfe6; border-radius: 8px; padding: 16px 20px; margin: 16px 0; }
.meta { display: grid; grid-template-columns: max-content 1fr; gap: 3px 16px; margin: 10px 0 0; }
.meta dt { color: #5a6373; } .meta dd { margin: 0; }
.totals { display: flex; flex-wrap: wrap; gap: 10px; margin-top: 12px; }
.totals div { background: #f0f3f7; border-radius: 6px; padding: 6px 12px; }
.totals b { font-size: 18px; display: block; }
nav a { margin-right: 14px; }
table { border-collapse: collapse; width: 100%; margin: 6px 0 4px; }
th, td { padding: 4px 8px; border-bottom: 1px solid #e5e8ee; text-align: left; vertical-align: top; }
th { background: #eef1f5; font-weight: 600; white-space: nowrap; }
td.nw { white-space: nowrap; }
table.fail { table-layout: fixed; }
table.fail code { word-break: break-all; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.total td { font-weight: 600; border-top: 2px solid #c9cfd8; }
.muted { color: #6b7383; }
.note { color: #4a5262; font-size: 13px; max-width: 1100px; }
.badge { display: inline-block; font-size: 11.5px; padding: 0 7px; border-radius: 9px; vertical-align: 1px; }
.badge.ok { background: #e3f3e6; color: #1e6b2f; }
.badge.stale { background: #fdecd2; color: #8a4b00; }
.badge.fail { background: #fbe3e3; color: #9b1c1c; }
.nowin { color: #9b1c1c; }
.empty { font-size: 16px; padding: 24px; text-align: center; color: #4a5262; }
.hm-grid { display: flex; flex-wrap: wrap; gap: 14px; }
figure.hm { width: min-content; margin: 0; border: 1px solid #e1e5eb; border-radius: 6px; padding: 8px 10px 4px; background: #fff; }
figure.hm figcaption { font-size: 13px; margin-bottom: 4px; }
figure.hm svg { display: block; font-family: inherit; }
details summary { cursor: pointer; }
pre { white-space: pre-wrap; word-break: break-all; max-height: 320px; overflow: auto; background: #f5f6f8;
  border: 1px solid #e3e6eb; border-radius: 4px; padding: 6px 8px; margin: 4px 0; }
.msg { font-family: ui-monospace, "DejaVu Sans Mono", "Liberation Mono", monospace; font-size: 12px; word-break: break-word; }
.group-title { font-size: 16px; margin: 14px 0 2px; }
footer { color: #6b7383; font-size: 12.5px; margin-top: 20px; }
)css";

// Shared SVG definitions (hatch for failed cells, gradient for legends), referenced by id from
// every heatmap.
std::string SvgDefs() {
  std::string s =
      "<svg width=\"0\" height=\"0\" style=\"position:absolute\" aria-hidden=\"true\"><defs>"
      "<pattern id=\"ft-hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
      "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#fbe3e3\"/>"
      "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#e08a8a\" stroke-width=\"2.5\"/></pattern>"
      "<linearGradient id=\"ft-scale\" x1=\"0\" x2=\"1\" y1=\"0\" y2=\"0\">";
  for (int i = 0; i <= 8; ++i)
    s += "<stop offset=\"" + Fmt("%.3f", i / 8.0) + "\" stop-color=\"" + Colour(i / 8.0) + "\"/>";
  s += "</linearGradient></defs></svg>\n";
  return s;
}

}  // namespace flashtune::html
