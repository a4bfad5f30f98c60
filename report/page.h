// report/page.h — the parts of the HTML report page (flashtune/report.h): what one page shows,
// read from the database once (LoadPage), and one function per page section, in page order.
// report/html_report.cpp puts them together; format.cpp holds the text and colour helpers the
// sections share, heatmap.cpp the heatmap section. Private to the report layer.
//
// Thread safety: LoadPage uses the Database it is given (one thread); the rest are pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "flashtune/database.h"
#include "flashtune/report.h"

namespace flashtune::html {

// One problem's rows for one (device, toolchain).
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

// The problems measured on one device with one toolchain.
struct Group {
  int64_t device_id = 0;
  int64_t toolchain_id = 0;
  DeviceRecord device;
  ToolchainInfo toolchain;
  std::vector<ProblemEntry> problems;
};

// Everything one page shows.
struct Page {
  std::string db_file;    // absolute path
  std::string generated;  // "generated at"
  int schema_version = 0;
  std::vector<DeviceRow> devices;
  std::vector<ToolchainRow> toolchains;
  std::vector<RunRow> runs;
  std::vector<ProblemRow> problems;
  std::vector<WinnerRow> winners;
  std::map<int64_t, DeviceRecord> device_by_id;
  std::map<std::pair<int64_t, int64_t>, Group> groups;  // by (device id, toolchain id)
  std::map<std::string, std::vector<TrialRow>> failures;  // by status name
  std::map<int64_t, std::string> last_trial_of_run;      // run id -> time of its last trial
  int64_t total_trials = 0;
  int64_t total_ok = 0;
  double tuning_seconds = 0;
  bool any_open_run = false;
  // Nothing tuned yet: the page says how to fill the database instead of showing empty sections.
  bool empty() const { return total_trials == 0 && winners.empty(); }
};

Result<Page> LoadPage(Database& db, const HtmlReportOptions& options);
// When a run ended; a run that did not end (killed, or still going) counts up to its last trial.
std::optional<double> RunEnd(const Page& p, const RunRow& r);

// The sections, in page order; each returns its HTML.
std::string PageStart(const Page& p);  // <!DOCTYPE> … <main>
std::string HeaderSection(const Page& p, const HtmlReportOptions& options);
std::string EmptySection(const Page& p);
std::string WinnersSection(const Page& p, const HtmlReportOptions& options);
std::string HeatmapsSection(const Page& p, const HtmlReportOptions& options);
std::string FailuresSection(const Page& p, const HtmlReportOptions& options);
std::string RunsSection(const Page& p);
std::string PageEnd();  // footer … </html>

// Shared by the sections (format.cpp).
std::string Fmt(const char* format, double v);
std::string Num(double v);  // three significant digits or so: 312, 31.2, 3.12
std::string Int(int64_t v);
std::string NowUtc();
std::optional<double> ParseIso(const std::string& s);  // the database's timestamps → epoch seconds
std::string ShowTime(const std::string& iso);          // "2026-11-30 12:34:56 UTC"
std::string Duration(double seconds);
std::string CutUtf8(const std::string& s, size_t max);  // never splits a UTF-8 sequence
std::string ProblemKind(const Problem& p);
std::string ProblemShape(const Problem& p);
std::string TileText(const Variant& v);
int StatusRank(const std::string& s);  // order of the failure groups
std::string StatusMeaning(const std::string& s);
std::string StatusShort(const std::string& s);  // a heatmap cell's label
std::string Colour(double t);                   // viridis-like, t in [0, 1]
double TrialTflops(const TrialRow& t);
bool ProblemLess(const Problem& a, const Problem& b);
std::string DeviceTitle(const DeviceRecord& d);
std::string ToolchainText(const ToolchainInfo& t);
std::string StaleBadge(const ToolchainInfo& t, const HtmlReportOptions& o);
std::string GroupTitle(const Group& g, const HtmlReportOptions& o);  // a GPU × toolchain heading
std::string MessageHtml(const std::string& message);
extern const char* const kCss;
std::string SvgDefs();  // the hatch and gradient every heatmap refers to

}  // namespace flashtune::html
