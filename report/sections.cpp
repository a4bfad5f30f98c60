// The report's sections other than the heatmaps, in page order; see report/page.h.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "flashtune/space.h"
#include "report/page.h"

namespace flashtune::html {

std::string PageStart(const Page& p) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
       "<title>flashtune tuning report — " + HtmlEscape(p.db_file) + "</title>\n<style>" + kCss +
       "</style>\n</head>\n<body>\n" + SvgDefs() + "<main>\n";
}

std::string HeaderSection(const Page& p, const HtmlReportOptions& options) {
  std::string h;
  h += "<header class=\"card\">\n<h1>flashtune tuning report</h1>\n<p class=\"lead\">What flashtune measured on "
       "this machine: for every attention shape (problem) tuned on every GPU, the FlashAttention-2 forward kernel "
       "variant that won, how fast it ran, how the tile shape affected speed, which variants failed and why, and "
       "how long tuning took. Higher TFLOP/s is better; times are medians in microseconds (µs).</p>\n";
  h += "<dl class=\"meta\">\n<dt>Database file</dt><dd><code>" + HtmlEscape(p.db_file) + "</code> (schema version " +
       Int(p.schema_version) + ")</dd>\n<dt>Generated</dt><dd>" + HtmlEscape(p.generated) + "</dd>\n";
  if (p.toolchains.empty()) {
    h += "<dt>Toolchain</dt><dd class=\"muted\">none recorded</dd>\n";
  } else {
    for (const auto& t : p.toolchains)
      h += std::string("<dt>") + (p.toolchains.size() > 1 ? "Toolchain " + Int(t.id) : "Toolchain") + "</dt><dd>" +
           ToolchainText(t.toolchain) + StaleBadge(t.toolchain, options) + "</dd>\n";
  }
  if (options.current_toolchain)
    h += "<dt>This build</dt><dd>" + ToolchainText(*options.current_toolchain) + "</dd>\n";
  h += "</dl>\n<div class=\"totals\">";
  auto total = [&](const std::string& value, const std::string& label) {
    h += "<div><b>" + value + "</b>" + label + "</div>";
  };
  total(Int(int64_t(p.devices.size())), p.devices.size() == 1 ? "GPU" : "GPUs");
  total(Int(int64_t(p.problems.size())), p.problems.size() == 1 ? "problem" : "problems");
  total(Int(p.total_trials), "trials (measurements)");
  total(Int(p.total_ok), "ok");
  total(Int(p.total_trials - p.total_ok), "failed");
  total(Int(int64_t(p.winners.size())), p.winners.size() == 1 ? "winner" : "winners");
  total(p.runs.empty() ? "–" : (p.any_open_run ? "≥ " : "") + Duration(p.tuning_seconds), "tuning time");
  h += "</div>\n";
  if (!p.empty())
    h += "<nav><p><a href=\"#winners\">Winners</a><a href=\"#heatmaps\">Heatmaps</a><a href=\"#failures\">Failures</a>"
         "<a href=\"#runs\">Tuning runs</a></p></nav>\n";
  h += "</header>\n";
  return h;
}

std::string EmptySection(const Page& p) {
  std::string h;
  if (p.empty()) {
    h += "<section class=\"card\"><p class=\"empty\">This database holds no trials and no winners yet: nothing "
         "has been tuned into it.<br>Fill it with <code>flashtune tune --db " + HtmlEscape(p.db_file) +
         "</code> on a machine with a GPU, then make this report again.</p></section>\n";
  }
  return h;
}

// The median of a variant's rounds as the tuner decides: the lower middle of an even count.
double MedianRound(std::vector<double> rounds) {
  std::sort(rounds.begin(), rounds.end());
  return rounds[(rounds.size() - 1) / 2];
}

// The problem's re-timed finalists, fastest first: each one's tile and median re-timing round, or
// a dash when none was re-timed.
std::string FinalistsText(const ProblemEntry& e) {
  std::map<std::string, std::pair<const Variant*, std::vector<double>>> rounds;
  for (const TrialRow& t : e.trials)
    if (t.trial.phase == "retime" && t.trial.status == Code::kOk) {
      auto& r = rounds[t.variant_uri];
      r.first = &t.trial.variant;
      r.second.push_back(t.trial.median_us);
    }
  if (rounds.empty()) return "–";
  std::vector<std::pair<double, const Variant*>> finalists;
  for (const auto& [uri, r] : rounds) finalists.push_back({MedianRound(r.second), r.first});
  std::sort(finalists.begin(), finalists.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string out;
  for (const auto& [us, v] : finalists)
    out += std::string(out.empty() ? "" : "<br>") + "<span class=\"nw\">" + TileText(*v) + " " + Num(us) + "</span>";
  return out;
}

// The tile `device` launches for the problem without a database (DefaultVariantForGpu) and how
// the winner compares: "the winner", or its time this run (the median re-timing round when it
// was a finalist, else its search) and the winner's gain over it; "not measured" where the
// search skipped it (tunes before session 38 did), a dash for a GPU the arch table lacks.
std::string UntunedText(const ProblemEntry& e, const DeviceRecord& device) {
  auto plan = DefaultVariantForGpu(e.problem, device.cc_major, device.cc_minor);
  if (!plan.ok()) return "–";
  const std::string uri = plan->Uri(), tile = "<span class=\"nw\">" + TileText(*plan);
  if (e.winner && e.winner->variant_uri == uri) return tile + "</span><br>the winner";
  std::vector<double> retimed, searched;
  for (const TrialRow& t : e.trials)
    if (t.variant_uri == uri && t.trial.status == Code::kOk)
      (t.trial.phase == "retime" ? retimed : searched).push_back(t.trial.median_us);
  const std::vector<double>& times = retimed.empty() ? searched : retimed;
  if (times.empty()) return tile + "</span><br><span class=\"muted\">not measured</span>";
  const double us = MedianRound(times);
  std::string out = tile + " " + Num(us) + "</span>";
  if (e.winner && e.winner->median_us > 0) out += "<br>winner ×" + Fmt("%.2f", us / e.winner->median_us);
  return out;
}

std::string WinnersSection(const Page& p, const HtmlReportOptions& options) {
  std::string h;
  if (!p.empty()) {
    h += "<section class=\"card\" id=\"winners\">\n<h2>Winners per GPU and problem</h2>\n<p class=\"note\">The "
         "fastest verified variant of each problem; the runtime launches it for this shape and nearby ones (same "
         "bucket). The closest candidates of the search were timed again against each other (<i>re-timed "
         "finalists</i>: each one's median round, µs), and that decided. <i>Untuned plan</i>: the tile the runtime "
         "launches on that GPU without a database, its time (µs) and how many times faster the winner is. <b>B</b> batch, <b>H</b> query heads, <b>N</b> sequence length, <b>d</b> head dimension. "
         "TFLOP/s counts 4·B·H·N<sub>q</sub>·N<sub>k</sub>·d floating-point operations per forward pass (half "
         "for causal), as FlashAttention-2's benchmarks do.</p>\n";
    for (const auto& [key, g] : p.groups) {
      h += GroupTitle(g, options);
      h += "<table><thead><tr><th>Problem</th><th>Shape</th><th>Winner variant</th><th>Tile</th>"
           "<th class=\"num\">Median (µs)</th><th class=\"num\">TFLOP/s</th><th>Re-timed finalists</th>"
           "<th>Untuned plan</th><th class=\"num\">Variants ok / failed</th></tr></thead><tbody>\n";
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
        h += "<td>" + FinalistsText(e) + "</td><td>" + UntunedText(e, g.device) + "</td><td class=\"num\">" + Int(e.ok) +
             " / " + Int(e.failed) + "</td></tr>\n";
      }
      h += "</tbody></table>\n";
    }
    h += "</section>\n";
  }
  return h;
}

std::string FailuresSection(const Page& p, const HtmlReportOptions& options) {
  auto failures = p.failures;  // sorted here, per status
  std::string h;
  if (!p.empty()) {
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
  return h;
}

std::string RunsSection(const Page& p) {
  std::string h;
  h += "<section class=\"card\" id=\"runs\">\n<h2>How long tuning took</h2>\n";
  if (p.runs.empty()) {
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
    for (const RunRow& r : p.runs) {
      auto a = ParseIso(r.started_at), b = ParseIso(r.ended_at);
      auto dev = p.device_by_id.find(r.device_id);
      h += "<tr><td class=\"num\">" + Int(r.id) + "</td><td>" +
           (dev == p.device_by_id.end() ? std::string("<span class=\"muted\">unknown</span>")
                                      : HtmlEscape(dev->second.name)) +
           "</td><td>" + HtmlEscape(r.strategy) + "</td><td>" + HtmlEscape(ShowTime(r.started_at)) + "</td>";
      if (r.ended_at.empty()) {
        auto last = RunEnd(p, r);
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
    h += "<tr class=\"total\"><td></td><td colspan=\"4\">Total, " + Int(int64_t(p.runs.size())) +
         (p.runs.size() == 1 ? " run" : " runs") + (p.any_open_run ? " (runs that did not end: up to their last trial)" : "") +
         "</td><td class=\"num\">" + Duration(p.tuning_seconds) + "</td><td class=\"num\">" + Int(sum.problems) +
         "</td><td class=\"num\">" + Int(sum.measured) + "</td><td class=\"num\">" + Int(sum.failed) +
         "</td><td class=\"num\">" + Int(sum.skipped) + "</td><td class=\"num\">" + Int(sum.winners) +
         "</td></tr>\n</tbody></table>\n";
  }
  h += "</section>\n";
  return h;
}

std::string PageEnd() {
  return "<footer>Made by <code>flashtune db report</code>. A self-contained page: no scripts, no "
       "network access.</footer>\n</main>\n</body>\n</html>\n";
}

}  // namespace flashtune::html
