// The HTML tuning-database report; see include/flashtune/report.h.
//
// Layout of the page: header (what, which file, when, toolchains, totals) → winners per GPU and
// toolchain → heatmaps (one card per problem: a panel per warps × stages, cells over B_r × B_c)
// → failures grouped by status → tuning runs. Plain HTML + inline SVG + one <style>; no script,
// so the page opens from a file, in a mail attachment or on an air-gapped machine.
#include "flashtune/report.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>
#include <vector>

namespace flashtune {

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

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
  return "B<sub>r</sub> " + Int(v.block_m) + " × B<sub>c</sub> " + Int(v.block_n) + ", " + Int(v.warps) +
         " warps, " + Int(v.stages) + (v.stages == 1 ? " stage" : " stages");
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

std::string Colour(double t) {
  t = std::clamp(t, 0.0, 1.0) * 4;
  int i = std::min(int(t), 3);
  double f = t - i;
  const Rgb& a = kStops[i];
  const Rgb& b = kStops[i + 1];
  return ColourHex({a.r + (b.r - a.r) * f, a.g + (b.g - a.g) * f, a.b + (b.b - a.b) * f});
}

// One variant's result on one problem (best ok trial, else the latest failure).
struct Cell {
  bool ok = false;
  double tflops = 0;
  double median_us = 0;
  std::string status;  // of the latest failure, when !ok
  std::string message;
  int trials = 0;
  std::string uri;
};

struct ProblemEntry {
  int64_t id = 0;
  Problem problem;
  std::string bucket;
  std::vector<TrialRow> trials;  // of this device and toolchain
  std::optional<WinnerRow> winner;
  int64_t ok = 0;
  int64_t failed = 0;
  std::string first_at, last_at;
};

struct Group {
  int64_t device_id = 0;
  int64_t toolchain_id = 0;
  DeviceRecord device;
  ToolchainInfo toolchain;
  std::vector<ProblemEntry> problems;
};

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

constexpr const char* kCss = R"css(
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

struct Axes {
  std::vector<int> br, bc, warps, stages;
};

// One problem's heatmap card: a panel per (warps, stages) — rows: warps, columns: stages —
// each a grid of cells with B_r down and B_c across.
std::string HeatmapCard(const ProblemEntry& e, const Axes& ax) {
  std::map<std::tuple<int, int, int, int>, Cell> cells;
  double lo = 1e300, hi = 0;
  for (const TrialRow& t : e.trials) {
    if (t.trial.phase == "retime") continue;  // every cell shows the same first-pass protocol
    auto v = Variant::FromUri(t.variant_uri);
    if (!v.ok()) continue;  // another kernel family: not on these axes
    Cell& c = cells[{v->block_m, v->block_n, v->warps, v->stages}];
    c.uri = t.variant_uri;
    c.trials++;
    if (t.trial.status == Code::kOk) {
      double tf = TrialTflops(t);
      if (!c.ok || tf > c.tflops) {
        c.tflops = tf;
        c.median_us = t.trial.median_us;
      }
      c.ok = true;
      lo = std::min(lo, tf);
      hi = std::max(hi, tf);
    } else if (!c.ok) {
      c.status = t.status_name;
      c.message = t.trial.message;
    }
  }
  const bool any_ok = hi > 0;
  if (!any_ok) lo = 0, hi = 1;
  // A single value (or all equal) shows as the top colour.
  if (hi - lo < 1e-9 * hi) lo = hi * 0.5;

  const int kCw = 48, kCh = 28, kTick = 34, kGap = 14, kLeft = 24, kTitle = 18, kBelow = 16, kVGap = 8;
  const int nbr = int(ax.br.size()), nbc = int(ax.bc.size());
  const int pw = kTick + nbc * kCw, ph = kTitle + nbr * kCh + kBelow;
  const int ns = int(ax.stages.size()), nw = int(ax.warps.size());
  const int grid_w = kLeft + ns * pw + (ns - 1) * kGap;
  const int grid_h = nw * ph + (nw - 1) * kVGap;
  const int legend_y = grid_h + 38;
  const int width = std::max(grid_w, 560) + 4, height = legend_y + 24;

  // "B_r" / "B_c" with a real subscript (dy shifts down, then back up for the rest, which the
  // caller closes with </tspan>).
  const std::string kBr = "B<tspan dy=\"3\" font-size=\"9\">r</tspan><tspan dy=\"-3\">";
  const std::string kBc = "B<tspan dy=\"3\" font-size=\"9\">c</tspan><tspan dy=\"-3\">";
  std::string s;
  s += "<svg width=\"" + Int(width) + "\" height=\"" + Int(height) + "\" viewBox=\"0 0 " + Int(width) + " " +
       Int(height) + "\" role=\"img\" aria-label=\"TFLOP/s heatmap for " + HtmlEscape(e.problem.ToString()) + "\">";
  // Axis titles: B_r rotated on the left, B_c centred below the grid.
  s += "<text x=\"12\" y=\"" + Int(grid_h / 2) + "\" transform=\"rotate(-90 12 " + Int(grid_h / 2) +
       ")\" text-anchor=\"middle\" font-size=\"12\" fill=\"#333\">" + kBr + " (query rows per block) ↓</tspan></text>";
  s += "<text x=\"" + Int(kLeft + (grid_w - kLeft) / 2) + "\" y=\"" + Int(grid_h + 14) +
       "\" text-anchor=\"middle\" font-size=\"12\" fill=\"#333\">" + kBc + " (key/value rows per step) →</tspan></text>";
  for (int wi = 0; wi < nw; ++wi) {
    for (int si = 0; si < ns; ++si) {
      const int w = ax.warps[wi], st = ax.stages[si];
      const int x0 = kLeft + si * (pw + kGap), y0 = wi * (ph + kVGap);
      const int cx = x0 + kTick, cy = y0 + kTitle;
      s += "<text x=\"" + Int(cx + nbc * kCw / 2) + "\" y=\"" + Int(y0 + 13) +
           "\" text-anchor=\"middle\" font-size=\"12.5\" font-weight=\"600\" fill=\"#1c2230\">" + Int(w) +
           " warps · " + Int(st) + (st == 1 ? " stage" : " stages") + "</text>";
      for (int ri = 0; ri < nbr; ++ri)
        s += "<text x=\"" + Int(cx - 5) + "\" y=\"" + Int(cy + ri * kCh + kCh / 2 + 4) +
             "\" text-anchor=\"end\" font-size=\"11\" fill=\"#555\">" + Int(ax.br[ri]) + "</text>";
      for (int ci = 0; ci < nbc; ++ci)
        s += "<text x=\"" + Int(cx + ci * kCw + kCw / 2) + "\" y=\"" + Int(cy + nbr * kCh + 12) +
             "\" text-anchor=\"middle\" font-size=\"11\" fill=\"#555\">" + Int(ax.bc[ci]) + "</text>";
      for (int ri = 0; ri < nbr; ++ri) {
        for (int ci = 0; ci < nbc; ++ci) {
          const int x = cx + ci * kCw, y = cy + ri * kCh;
          auto it = cells.find({ax.br[ri], ax.bc[ci], w, st});
          std::string rect = "<rect x=\"" + Int(x) + "\" y=\"" + Int(y) + "\" width=\"" + Int(kCw - 1) +
                             "\" height=\"" + Int(kCh - 1) + "\"";
          std::string tx = Int(x + kCw / 2), ty = Int(y + kCh / 2 + 4);
          if (it == cells.end()) {
            s += "<g><title>B_r " + Int(ax.br[ri]) + ", B_c " + Int(ax.bc[ci]) + ", " + Int(w) + " warps, " +
                 Int(st) + " stages: not measured</title>" + rect +
                 " fill=\"#eceef1\"/><text x=\"" + tx + "\" y=\"" + ty +
                 "\" text-anchor=\"middle\" font-size=\"11\" fill=\"#9aa1ad\">·</text></g>";
            continue;
          }
          const Cell& c = it->second;
          const bool win = e.winner && e.winner->variant_uri == c.uri;
          if (c.ok) {
            double t = (c.tflops - lo) / (hi - lo);
            s += "<g><title>" + HtmlEscape(c.uri) + ": " + Num(c.tflops) + " TFLOP/s, median " + Num(c.median_us) +
                 " µs" + (win ? " (winner)" : "") + "</title>" + rect + " fill=\"" + Colour(t) + "\"" +
                 (win ? " stroke=\"#d62728\" stroke-width=\"3\"" : "") + "/><text x=\"" + tx + "\" y=\"" + ty +
                 "\" text-anchor=\"middle\" font-size=\"11\"" + (win ? " font-weight=\"700\"" : "") + " fill=\"" +
                 (t > 0.62 ? "#111" : "#fff") + "\">" + (win ? "★" : "") + Num(c.tflops) + "</text></g>";
          } else {
            s += "<g><title>" + HtmlEscape(c.uri) + ": " + HtmlEscape(c.status) + " — " +
                 HtmlEscape(CutUtf8(c.message, 200)) + "</title>" + rect +
                 " fill=\"url(#ft-hatch)\"/><text x=\"" + tx + "\" y=\"" + ty +
                 "\" text-anchor=\"middle\" font-size=\"" + (StatusShort(c.status).size() > 6 ? "9.5" : "10.5") +
                 "\" font-weight=\"600\" fill=\"#8b1a1a\">" + HtmlEscape(StatusShort(c.status)) + "</text></g>";
          }
        }
      }
    }
  }
  // Legend: the colour scale with values, then the cell kinds.
  const int lx = kLeft, lw = 180;
  if (!any_ok) {
    s += "<text x=\"" + Int(lx) + "\" y=\"" + Int(legend_y) +
         "\" font-size=\"11.5\" fill=\"#9b1c1c\">no variant ran successfully</text>";
  } else {
  s += "<text x=\"" + Int(lx) + "\" y=\"" + Int(legend_y) + "\" font-size=\"11.5\" fill=\"#333\">TFLOP/s</text>";
  s += "<rect x=\"" + Int(lx + 52) + "\" y=\"" + Int(legend_y - 10) + "\" width=\"" + Int(lw) +
       "\" height=\"12\" fill=\"url(#ft-scale)\" stroke=\"#999\" stroke-width=\"0.5\"/>";
  for (int i = 0; i <= 4; ++i) {
    int x = lx + 52 + lw * i / 4;
    s += "<line x1=\"" + Int(x) + "\" y1=\"" + Int(legend_y + 2) + "\" x2=\"" + Int(x) + "\" y2=\"" +
         Int(legend_y + 6) + "\" stroke=\"#666\"/><text x=\"" + Int(x) + "\" y=\"" + Int(legend_y + 17) +
         "\" text-anchor=\"middle\" font-size=\"10.5\" fill=\"#444\">" + Num(lo + (hi - lo) * i / 4) + "</text>";
  }
  }
  int kx = lx + 52 + lw + 24;
  s += "<rect x=\"" + Int(kx) + "\" y=\"" + Int(legend_y - 10) +
       "\" width=\"18\" height=\"12\" fill=\"#fff\" stroke=\"#d62728\" stroke-width=\"2.5\"/><text x=\"" +
       Int(kx + 23) + "\" y=\"" + Int(legend_y) + "\" font-size=\"11.5\" fill=\"#333\">★ winner</text>";
  kx += 86;
  s += "<rect x=\"" + Int(kx) + "\" y=\"" + Int(legend_y - 10) +
       "\" width=\"18\" height=\"12\" fill=\"url(#ft-hatch)\"/><text x=\"" + Int(kx + 23) + "\" y=\"" +
       Int(legend_y) + "\" font-size=\"11.5\" fill=\"#333\">failed</text>";
  kx += 70;
  s += "<rect x=\"" + Int(kx) + "\" y=\"" + Int(legend_y - 10) +
       "\" width=\"18\" height=\"12\" fill=\"#eceef1\"/><text x=\"" + Int(kx + 23) + "\" y=\"" + Int(legend_y) +
       "\" font-size=\"11.5\" fill=\"#333\">not measured</text>";
  s += "</svg>";

  std::string cap = "<figcaption><b>" + HtmlEscape(ProblemKind(e.problem)) + "</b> · " +
                    HtmlEscape(ProblemShape(e.problem)) + " <span class=\"muted\">· " + Int(e.ok) + " ok, " +
                    Int(e.failed) + " failed</span><br>";
  if (e.winner)
    cap += "winner <code>" + HtmlEscape(e.winner->variant_uri) + "</code>: <b>" + Num(e.winner->tflops) +
           " TFLOP/s</b>, " + Num(e.winner->median_us) + " µs";
  else
    cap += "<span class=\"nowin\">no winner</span>";
  cap += "</figcaption>";
  return "<figure class=\"hm\">" + cap + s + "</figure>\n";
}

Axes GroupAxes(const Group& g) {
  std::set<int> br, bc, w, st;
  for (const auto& e : g.problems)
    for (const auto& t : e.trials) {
      auto v = Variant::FromUri(t.variant_uri);
      if (!v.ok()) continue;
      br.insert(v->block_m);
      bc.insert(v->block_n);
      w.insert(v->warps);
      st.insert(v->stages);
    }
  return Axes{{br.begin(), br.end()}, {bc.begin(), bc.end()}, {w.begin(), w.end()}, {st.begin(), st.end()}};
}

}  // namespace

Result<std::string> RenderHtmlReport(Database& db, const HtmlReportOptions& options) {
  if (options.max_failures_per_status < 1)
    return Status(Code::kInvalidArgument, "max_failures_per_status must be >= 1, got " +
                                              std::to_string(options.max_failures_per_status));
  auto devices = db.ListDevices();
  if (!devices.ok()) return devices.status();
  auto toolchains = db.ListToolchains();
  if (!toolchains.ok()) return toolchains.status();
  auto runs = db.ListRuns();
  if (!runs.ok()) return runs.status();
  auto problems = db.ListProblems();
  if (!problems.ok()) return problems.status();
  auto winners = db.ListWinners();
  if (!winners.ok()) return winners.status();
  auto version = db.SchemaVersion();
  if (!version.ok()) return version.status();

  std::map<int64_t, DeviceRecord> device_by_id;
  for (const auto& d : *devices) device_by_id[d.id] = d.device;
  std::map<int64_t, ToolchainInfo> toolchain_by_id;
  for (const auto& t : *toolchains) toolchain_by_id[t.id] = t.toolchain;

  // Trials split by (device, toolchain); within a group, by problem.
  std::map<std::pair<int64_t, int64_t>, Group> groups;
  auto group_for = [&](int64_t dev, int64_t tc) -> Group& {
    Group& g = groups[{dev, tc}];
    g.device_id = dev;
    g.toolchain_id = tc;
    g.device = device_by_id[dev];
    g.toolchain = toolchain_by_id[tc];
    return g;
  };
  auto entry_for = [](Group& g, int64_t problem_id, const Problem& p, const std::string& bucket) -> ProblemEntry& {
    for (auto& e : g.problems)
      if (e.id == problem_id) return e;
    g.problems.push_back(ProblemEntry{});
    g.problems.back().id = problem_id;
    g.problems.back().problem = p;
    g.problems.back().bucket = bucket;
    return g.problems.back();
  };
  int64_t total_trials = 0, total_ok = 0;
  std::map<std::string, std::vector<TrialRow>> failures;
  std::map<int64_t, std::string> last_trial_of_run;  // run id -> time of its last trial
  for (const ProblemRow& pr : *problems) {
    auto trials = db.TrialsForProblem(pr.id);
    if (!trials.ok()) return trials.status();
    for (TrialRow& t : *trials) {
      ProblemEntry& e = entry_for(group_for(t.device_id, t.toolchain_id), pr.id, pr.problem, pr.bucket);
      ++total_trials;
      // Per problem, variants are counted once: re-timing a finalist is not another variant.
      const bool first_pass = t.trial.phase != "retime";
      if (t.trial.status == Code::kOk) {
        e.ok += first_pass;
        ++total_ok;
      } else {
        e.failed += first_pass;
        failures[t.status_name].push_back(t);
      }
      std::string& last = last_trial_of_run[t.trial.run_id];
      if (t.created_at > last) last = t.created_at;
      if (e.first_at.empty() || t.created_at < e.first_at) e.first_at = t.created_at;
      if (t.created_at > e.last_at) e.last_at = t.created_at;
      e.trials.push_back(std::move(t));
    }
  }
  for (const WinnerRow& w : *winners) {
    Group& g = group_for(w.device_id, w.toolchain_id);
    ProblemEntry& e = entry_for(g, w.problem_id, w.problem, BucketString(w.bucket));
    e.winner = w;
  }
  for (auto& [key, g] : groups)
    std::sort(g.problems.begin(), g.problems.end(),
              [](const ProblemEntry& a, const ProblemEntry& b) { return ProblemLess(a.problem, b.problem); });

  // A run that did not end (killed, or still going) counts up to its last recorded trial.
  auto run_end = [&](const RunRow& r) {
    if (!r.ended_at.empty()) return ParseIso(r.ended_at);
    auto last = last_trial_of_run.find(r.id);
    return last == last_trial_of_run.end() ? ParseIso(r.started_at) : ParseIso(last->second);
  };
  double tuning_seconds = 0;
  bool any_open_run = false;
  for (const RunRow& r : *runs) {
    auto a = ParseIso(r.started_at), b = run_end(r);
    if (a && b) tuning_seconds += std::max(0.0, *b - *a);
    any_open_run |= r.ended_at.empty();
  }

  const std::string generated = options.generated_at.empty() ? NowUtc() : options.generated_at;
  // The absolute path says which file even when the page is read elsewhere.
  std::error_code ec;
  std::string db_file = std::filesystem::absolute(db.path(), ec).lexically_normal().string();
  if (ec) db_file = db.path();
  std::string h;
  h.reserve(1 << 16);
  h += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
       "<title>flashtune tuning report — " + HtmlEscape(db_file) + "</title>\n<style>" + kCss +
       "</style>\n</head>\n<body>\n" + SvgDefs() + "<main>\n";

  // Header.
  h += "<header class=\"card\">\n<h1>flashtune tuning report</h1>\n<p class=\"lead\">What flashtune measured on "
       "this machine: for every attention shape (problem) tuned on every GPU, the FlashAttention-2 forward kernel "
       "variant that won, how fast it ran, how the tile shape affected speed, which variants failed and why, and "
       "how long tuning took. Higher TFLOP/s is better; times are medians in microseconds (µs).</p>\n";
  h += "<dl class=\"meta\">\n<dt>Database file</dt><dd><code>" + HtmlEscape(db_file) + "</code> (schema version " +
       Int(*version) + ")</dd>\n<dt>Generated</dt><dd>" + HtmlEscape(generated) + "</dd>\n";
  if (toolchains->empty()) {
    h += "<dt>Toolchain</dt><dd class=\"muted\">none recorded</dd>\n";
  } else {
    for (const auto& t : *toolchains)
      h += std::string("<dt>") + (toolchains->size() > 1 ? "Toolchain " + Int(t.id) : "Toolchain") + "</dt><dd>" +
           ToolchainText(t.toolchain) + StaleBadge(t.toolchain, options) + "</dd>\n";
  }
  if (options.current_toolchain)
    h += "<dt>This build</dt><dd>" + ToolchainText(*options.current_toolchain) + "</dd>\n";
  h += "</dl>\n<div class=\"totals\">";
  auto total = [&](const std::string& value, const std::string& label) {
    h += "<div><b>" + value + "</b>" + label + "</div>";
  };
  total(Int(int64_t(devices->size())), devices->size() == 1 ? "GPU" : "GPUs");
  total(Int(int64_t(problems->size())), problems->size() == 1 ? "problem" : "problems");
  total(Int(total_trials), "trials (measurements)");
  total(Int(total_ok), "ok");
  total(Int(total_trials - total_ok), "failed");
  total(Int(int64_t(winners->size())), winners->size() == 1 ? "winner" : "winners");
  total(runs->empty() ? "–" : (any_open_run ? "≥ " : "") + Duration(tuning_seconds), "tuning time");
  h += "</div>\n";
  const bool empty = total_trials == 0 && winners->empty();
  if (!empty)
    h += "<nav><p><a href=\"#winners\">Winners</a><a href=\"#heatmaps\">Heatmaps</a><a href=\"#failures\">Failures</a>"
         "<a href=\"#runs\">Tuning runs</a></p></nav>\n";
  h += "</header>\n";

  if (empty) {
    h += "<section class=\"card\"><p class=\"empty\">This database holds no trials and no winners yet: nothing "
         "has been tuned into it.<br>Fill it with <code>flashtune tune --db " + HtmlEscape(db_file) +
         "</code> on a machine with a GPU, then make this report again.</p></section>\n";
  }

  // Winners.
  if (!empty) {
    h += "<section class=\"card\" id=\"winners\">\n<h2>Winners per GPU and problem</h2>\n<p class=\"note\">The "
         "fastest verified variant of each problem; the runtime launches it for this shape and nearby ones (same "
         "bucket). <b>B</b> batch, <b>H</b> query heads, <b>N</b> sequence length, <b>d</b> head dimension. "
         "TFLOP/s counts 4·B·H·N<sub>q</sub>·N<sub>k</sub>·d floating-point operations per forward pass (half "
         "for causal), as FlashAttention-2's benchmarks do.</p>\n";
    for (const auto& [key, g] : groups) {
      h += "<h3 class=\"group-title\">" + DeviceTitle(g.device) + "</h3>\n<p class=\"muted\">" +
           ToolchainText(g.toolchain) + StaleBadge(g.toolchain, options) + "</p>\n";
      h += "<table><thead><tr><th>Problem</th><th>Shape</th><th>Winner variant</th><th>Tile</th>"
           "<th class=\"num\">Median (µs)</th><th class=\"num\">TFLOP/s</th><th class=\"num\">Variants ok / "
           "failed</th></tr></thead><tbody>\n";
      for (const ProblemEntry& e : g.problems) {
        h += "<tr><td class=\"nw\">" + HtmlEscape(ProblemKind(e.problem)) + "</td><td class=\"nw\">" +
             HtmlEscape(ProblemShape(e.problem)) + "</td>";
        if (e.winner) {
          h += "<td><code>" + HtmlEscape(e.winner->variant_uri) + "</code></td><td class=\"nw\">" + TileText(e.winner->variant) +
               "</td><td class=\"num\">" + Num(e.winner->median_us) + "</td><td class=\"num\"><b>" +
               Num(e.winner->tflops) + "</b></td>";
        } else {
          h += std::string("<td colspan=\"4\" class=\"nowin\">no winner — ") +
               (e.ok == 0 ? "every measured variant failed (see Failures)" : "not stored (tuning was interrupted?)") +
               "</td>";
        }
        h += "<td class=\"num\">" + Int(e.ok) + " / " + Int(e.failed) + "</td></tr>\n";
      }
      h += "</tbody></table>\n";
    }
    h += "</section>\n";
  }

  // Heatmaps.
  if (total_trials > 0) {
    h += "<section class=\"card\" id=\"heatmaps\">\n<h2>TFLOP/s over tile shapes</h2>\n<p class=\"note\">One "
         "chart per problem. Each small panel is one choice of <b>warps</b> per thread block and K/V pipeline "
         "<b>stages</b> (shared-memory buffers; 1 = no prefetch); inside it, rows are <b>B<sub>r</sub></b> "
         "(query rows per thread block) and columns <b>B<sub>c</sub></b> (key/value rows per inner-loop step). "
         "A cell shows the TFLOP/s of that variant's first measurement, taken the same way for every variant (the "
         "winner line above each chart gives the winner's re-timed median, so the two can differ by the "
         "noise); its colour runs from the "
         "slowest (dark purple) to the fastest (yellow) variant of that problem, so compare numbers, not colours, "
         "across charts. ★ with a red border is the winner; hatched red cells failed (<i>compile</i> = compile "
         "error, <i>no res</i> = out of resources, <i>wrong</i> = wrong result, <i>fault</i>, <i>timeout</i>); "
         "grey cells were not measured (not a valid variant, or skipped by the search strategy). Hover a cell "
         "for its variant name.</p>\n";
    for (const auto& [key, g] : groups) {
      h += "<h3 class=\"group-title\">" + DeviceTitle(g.device) + "</h3>\n<p class=\"muted\">" +
           ToolchainText(g.toolchain) + StaleBadge(g.toolchain, options) + "</p>\n";
      Axes ax = GroupAxes(g);
      if (ax.br.empty()) {
        h += "<p class=\"muted\">No variant of the FA-2 forward family was measured here.</p>\n";
        continue;
      }
      h += "<div class=\"hm-grid\">\n";
      for (const ProblemEntry& e : g.problems)
        if (!e.trials.empty()) h += HeatmapCard(e, ax);
      h += "</div>\n";
    }
    h += "</section>\n";
  }

  // Failures.
  if (!empty) {
    h += "<section class=\"card\" id=\"failures\">\n<h2>Failed variants</h2>\n";
    if (failures.empty()) {
      h += "<p>No variant failed: every measurement compiled, launched and matched the reference.</p>\n";
    } else {
      std::vector<std::string> order;
      for (const auto& [status, rows] : failures) order.push_back(status);
      std::sort(order.begin(), order.end(), [](const std::string& a, const std::string& b) {
        return std::make_pair(StatusRank(a), a) < std::make_pair(StatusRank(b), b);
      });
      h += "<p class=\"note\">Failures are data, not errors: every candidate the tuner tried is recorded with its "
           "status, and only candidates that ran and matched the reference may win. Summary: ";
      for (size_t i = 0; i < order.size(); ++i)
        h += (i ? ", " : "") + std::string("<a href=\"#fail-") + HtmlEscape(order[i]) + "\">" +
             HtmlEscape(order[i]) + "</a> " + Int(int64_t(failures[order[i]].size()));
      h += ".</p>\n";
      for (const std::string& status : order) {
        auto& rows = failures[status];
        std::sort(rows.begin(), rows.end(), [](const TrialRow& a, const TrialRow& b) {
          if (!(a.trial.problem == b.trial.problem)) return ProblemLess(a.trial.problem, b.trial.problem);
          return a.variant_uri < b.variant_uri;
        });
        h += "<h3 id=\"fail-" + HtmlEscape(status) + "\"><span class=\"badge fail\">" + HtmlEscape(status) +
             "</span> " + Int(int64_t(rows.size())) + (rows.size() == 1 ? " trial" : " trials") +
             "</h3>\n<p class=\"note\">" + HtmlEscape(StatusMeaning(status)) + "</p>\n";
        h += "<table class=\"fail\"><colgroup><col style=\"width:11%\"><col style=\"width:17%\">"
             "<col style=\"width:27%\"><col></colgroup><thead><tr><th>GPU</th><th>Problem</th><th>Variant</th>"
             "<th>Message</th></tr></thead><tbody>\n";
        size_t shown = std::min(rows.size(), size_t(options.max_failures_per_status));
        for (size_t i = 0; i < shown; ++i) {
          const TrialRow& t = rows[i];
          h += "<tr><td>" + HtmlEscape(t.device_name) + "</td><td>" + HtmlEscape(ProblemKind(t.trial.problem)) +
               "<br><span class=\"muted\">" + HtmlEscape(ProblemShape(t.trial.problem)) + "</span></td><td><code>" +
               HtmlEscape(t.variant_uri) + "</code></td><td>" + MessageHtml(t.trial.message) + "</td></tr>\n";
        }
        if (shown < rows.size())
          h += "<tr><td colspan=\"4\" class=\"muted\">… and " + Int(int64_t(rows.size() - shown)) +
               " more; <code>flashtune db export --format csv</code> lists them all.</td></tr>\n";
        h += "</tbody></table>\n";
      }
    }
    h += "</section>\n";
  }

  // Tuning runs.
  h += "<section class=\"card\" id=\"runs\">\n<h2>How long tuning took</h2>\n";
  if (runs->empty()) {
    h += "<p class=\"muted\">No tuning runs are recorded in this database (rows brought in by <code>flashtune db "
         "merge</code> carry no run records).</p>\n";
  } else {
    h += "<p class=\"note\">One row per <code>flashtune tune</code> run and GPU. <i>Measured</i> counts "
         "measurements (first pass and re-timing of finalists), <i>skipped</i> problems that already had a winner. "
         "A run without an end was killed or is still running; a later run resumes it.</p>\n";
    h += "<table><thead><tr><th class=\"num\">Run</th><th>GPU</th><th>Strategy</th><th>Started</th><th>Ended</th>"
         "<th class=\"num\">Duration</th><th class=\"num\">Problems</th><th class=\"num\">Measured</th>"
         "<th class=\"num\">Failed</th><th class=\"num\">Skipped</th><th class=\"num\">Winners</th></tr></thead>"
         "<tbody>\n";
    RunCounts sum;
    for (const RunRow& r : *runs) {
      auto a = ParseIso(r.started_at), b = ParseIso(r.ended_at);
      auto dev = device_by_id.find(r.device_id);
      h += "<tr><td class=\"num\">" + Int(r.id) + "</td><td>" +
           (dev == device_by_id.end() ? std::string("<span class=\"muted\">unknown</span>")
                                      : HtmlEscape(dev->second.name)) +
           "</td><td>" + HtmlEscape(r.strategy) + "</td><td>" + HtmlEscape(ShowTime(r.started_at)) + "</td>";
      if (r.ended_at.empty()) {
        auto last = run_end(r);
        h += "<td class=\"nowin\">did not end</td><td class=\"num\">" +
             (a && last ? "≥ " + Duration(std::max(0.0, *last - *a)) : std::string("–")) + "</td>";
      }
      else
        h += "<td>" + HtmlEscape(ShowTime(r.ended_at)) + "</td><td class=\"num\">" +
             (a && b ? Duration(*b - *a) : std::string("–")) + "</td>";
      h += "<td class=\"num\">" + Int(r.counts.problems) + "</td><td class=\"num\">" + Int(r.counts.measured) +
           "</td><td class=\"num\">" + Int(r.counts.failed) + "</td><td class=\"num\">" + Int(r.counts.skipped) +
           "</td><td class=\"num\">" + Int(r.counts.winners) + "</td></tr>\n";
      sum.problems += r.counts.problems;
      sum.measured += r.counts.measured;
      sum.failed += r.counts.failed;
      sum.skipped += r.counts.skipped;
      sum.winners += r.counts.winners;
    }
    h += "<tr class=\"total\"><td></td><td colspan=\"4\">Total, " + Int(int64_t(runs->size())) +
         (runs->size() == 1 ? " run" : " runs") + (any_open_run ? " (runs that did not end: up to their last trial)" : "") +
         "</td><td class=\"num\">" + Duration(tuning_seconds) + "</td><td class=\"num\">" + Int(sum.problems) +
         "</td><td class=\"num\">" + Int(sum.measured) + "</td><td class=\"num\">" + Int(sum.failed) +
         "</td><td class=\"num\">" + Int(sum.skipped) + "</td><td class=\"num\">" + Int(sum.winners) +
         "</td></tr>\n</tbody></table>\n";
  }
  h += "</section>\n<footer>Made by <code>flashtune db report</code>. A self-contained page: no scripts, no "
       "network access.</footer>\n</main>\n</body>\n</html>\n";
  return h;
}

}  // namespace flashtune
