// The HTML tuning-database report; see include/flashtune/report.h.
//
// Layout of the page: header (what, which file, when, toolchains, totals) → winners per GPU and
// toolchain → heatmaps (one card per problem: a panel per warps × stages, cells over B_r × B_c)
// → failures grouped by status → tuning runs. Plain HTML + inline SVG + one <style>; no script,
// so the page opens from a file, in a mail attachment or on an air-gapped machine.
#include "flashtune/report.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <vector>

#include "report/page.h"

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

namespace html {

Result<Page> LoadPage(Database& db, const HtmlReportOptions& options) {
  Page p;
  auto devices = db.ListDevices();
  if (!devices.ok()) return devices.status();
  p.devices = std::move(*devices);
  auto toolchains = db.ListToolchains();
  if (!toolchains.ok()) return toolchains.status();
  p.toolchains = std::move(*toolchains);
  auto runs = db.ListRuns();
  if (!runs.ok()) return runs.status();
  p.runs = std::move(*runs);
  auto problems = db.ListProblems();
  if (!problems.ok()) return problems.status();
  p.problems = std::move(*problems);
  auto winners = db.ListWinners();
  if (!winners.ok()) return winners.status();
  p.winners = std::move(*winners);
  auto version = db.SchemaVersion();
  if (!version.ok()) return version.status();
  p.schema_version = *version;
  p.generated = options.generated_at.empty() ? NowUtc() : options.generated_at;
  // The absolute path says which file even when the page is read elsewhere.
  std::error_code ec;
  p.db_file = std::filesystem::absolute(db.path(), ec).lexically_normal().string();
  if (ec) p.db_file = db.path();

  for (const auto& d : p.devices) p.device_by_id[d.id] = d.device;
  std::map<int64_t, ToolchainInfo> toolchain_by_id;
  for (const auto& t : p.toolchains) toolchain_by_id[t.id] = t.toolchain;

  // Trials split by (device, toolchain); within a group, by problem.
  auto group_for = [&](int64_t dev, int64_t tc) -> Group& {
    Group& g = p.groups[{dev, tc}];
    g.device_id = dev;
    g.toolchain_id = tc;
    g.device = p.device_by_id[dev];
    g.toolchain = toolchain_by_id[tc];
    return g;
  };
  auto entry_for = [](Group& g, int64_t problem_id, const Problem& problem, const std::string& bucket) -> ProblemEntry& {
    for (auto& e : g.problems)
      if (e.id == problem_id) return e;
    g.problems.push_back(ProblemEntry{});
    g.problems.back().id = problem_id;
    g.problems.back().problem = problem;
    g.problems.back().bucket = bucket;
    return g.problems.back();
  };
  for (const ProblemRow& pr : p.problems) {
    auto trials = db.TrialsForProblem(pr.id);
    if (!trials.ok()) return trials.status();
    for (TrialRow& t : *trials) {
      ProblemEntry& e = entry_for(group_for(t.device_id, t.toolchain_id), pr.id, pr.problem, pr.bucket);
      ++p.total_trials;
      // Per problem, variants are counted once: re-timing a finalist is not another variant.
      const bool first_pass = t.trial.phase != "retime";
      if (t.trial.status == Code::kOk) {
        e.ok += first_pass;
        ++p.total_ok;
      } else {
        e.failed += first_pass;
        p.failures[t.status_name].push_back(t);
      }
      std::string& last = p.last_trial_of_run[t.trial.run_id];
      if (t.created_at > last) last = t.created_at;
      if (e.first_at.empty() || t.created_at < e.first_at) e.first_at = t.created_at;
      if (t.created_at > e.last_at) e.last_at = t.created_at;
      e.trials.push_back(std::move(t));
    }
  }
  for (const WinnerRow& w : p.winners) {
    Group& g = group_for(w.device_id, w.toolchain_id);
    ProblemEntry& e = entry_for(g, w.problem_id, w.problem, BucketString(w.bucket));
    e.winner = w;
  }
  for (auto& [key, g] : p.groups)
    std::sort(g.problems.begin(), g.problems.end(),
              [](const ProblemEntry& a, const ProblemEntry& b) { return ProblemLess(a.problem, b.problem); });

  for (const RunRow& r : p.runs) {
    auto a = ParseIso(r.started_at), b = RunEnd(p, r);
    if (a && b) p.tuning_seconds += std::max(0.0, *b - *a);
    p.any_open_run |= r.ended_at.empty();
  }
  return p;
}

std::optional<double> RunEnd(const Page& p, const RunRow& r) {
  if (!r.ended_at.empty()) return ParseIso(r.ended_at);
  auto last = p.last_trial_of_run.find(r.id);
  return last == p.last_trial_of_run.end() ? ParseIso(r.started_at) : ParseIso(last->second);
}

}  // namespace html

Result<std::string> RenderHtmlReport(Database& db, const HtmlReportOptions& options) {
  if (options.max_failures_per_status < 1)
    return Status(Code::kInvalidArgument, "max_failures_per_status must be >= 1, got " +
                                              std::to_string(options.max_failures_per_status));
  auto page = html::LoadPage(db, options);
  if (!page.ok()) return page.status();
  const html::Page& p = *page;
  std::string h;
  h.reserve(1 << 16);
  h += html::PageStart(p);
  h += html::HeaderSection(p, options);
  h += html::EmptySection(p);
  h += html::WinnersSection(p, options);
  h += html::HeatmapsSection(p, options);
  h += html::FailuresSection(p, options);
  h += html::RunsSection(p);
  h += html::PageEnd();
  return h;
}

}  // namespace flashtune
