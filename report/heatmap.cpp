// The report's heatmap section: per problem, TFLOP/s over B_r × B_c, one panel per warps ×
// stages; see report/page.h.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "report/page.h"

namespace flashtune::html {

namespace {

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
    if (!v.ok() || v->family != "fa2_fwd") continue;  // the heatmap's axes are fa2_fwd's
    Cell& c = cells[{v->Param("br"), v->Param("bc"), v->Param("w"), v->Param("s")}];
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
      if (!v.ok() || v->family != "fa2_fwd") continue;
      br.insert(v->Param("br"));
      bc.insert(v->Param("bc"));
      w.insert(v->Param("w"));
      st.insert(v->Param("s"));
    }
  return Axes{{br.begin(), br.end()}, {bc.begin(), bc.end()}, {w.begin(), w.end()}, {st.begin(), st.end()}};
}

}  // namespace

std::string HeatmapsSection(const Page& p, const HtmlReportOptions& options) {
  std::string h;
  if (p.total_trials > 0) {
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
    for (const auto& [key, g] : p.groups) {
      h += GroupTitle(g, options);
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
  return h;
}

}  // namespace flashtune::html
