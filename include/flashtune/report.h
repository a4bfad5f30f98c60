// flashtune/report.h — a human-readable report of a tuning database: one self-contained HTML
// page (inline CSS and SVG; no script, no network, no external fonts) that someone who did not
// tune can read. It shows, per GPU and toolchain: the winner of every problem with its median
// time (µs) and TFLOP/s; a heatmap of TFLOP/s over B_r × B_c for each warps × stages choice;
// the failed variants grouped by status with their messages; and how long tuning took.
//
// The page is a function of the database contents and the options only (the generation time
// is an option), so it can be compared in tests. Every text from the database is HTML-escaped.
//
// Thread safety: RenderHtmlReport uses the Database it is given, which is not thread-safe (see
// database.h); distinct databases may be rendered from different threads.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "flashtune/database.h"
#include "flashtune/status.h"

namespace flashtune {

struct HtmlReportOptions {
  // Shown in the header as "generated at". "" means now, in UTC (ISO 8601).
  std::string generated_at;
  // This build's toolchain. When set, sections measured with another toolchain are marked
  // "stale" (their timings are not used by this build's runtime); when unset nothing is marked.
  std::optional<ToolchainInfo> current_toolchain;
  // Failed trials listed per status before the rest are summarised as "N more" (≥ 1).
  int max_failures_per_status = 200;
};

// Renders the whole page. A database without trials gives a page that says so (not an error).
// Errors: the database's Status when a read fails (kDatabaseError, kCorrupt, ...);
// kInvalidArgument when options.max_failures_per_status < 1.
Result<std::string> RenderHtmlReport(Database& db, const HtmlReportOptions& options = {});

// `text` with & < > " ' replaced by character references; other bytes unchanged.
std::string HtmlEscape(std::string_view text);

}  // namespace flashtune
