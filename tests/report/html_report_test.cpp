#include "generator/families/fa2_fwd.h"
#include "flashtune/report.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "flashtune/replay_measurer.h"
#include "flashtune/space.h"
#include "flashtune/tuner.h"
#include "tests/support/replay_fixture.h"

namespace flashtune {
namespace {

using namespace flashtune::testing;

const char* kScriptMessage = "nvrtc: error: <script>alert('x')</script> & \"quoted\" in fa2_fwd.cuh";

std::string LongMessage() {
  std::string m = "ptxas error   : Entry function 'fa2_fwd' uses too much shared memory (0x3a000 bytes, 0x38800 max)\n";
  for (int i = 0; i < 12; ++i) m += "fa2_fwd.cuh(" + std::to_string(100 + i) + "): note: while instantiating <tile & stage>\n";
  return m + "END-OF-LONG-MESSAGE";
}

struct Filled {
  std::string db_path;
  std::vector<Problem> problems;
  std::vector<std::string> statuses;
};

// Three tuned problems with one failure of each status (messages with markup and a long log),
// and a fourth problem on which every candidate failed.
Filled FillDatabase(const std::string& name) {
  Filled f;
  auto set = SmallProblemSet();
  f.problems = {set[0], set[1], set[2], set[3]};
  std::vector<RecordedRow> rows;
  f.statuses = {"compile_error", "out_of_resources", "wrong_result", "fault", "timeout"};
  for (size_t p = 0; p < f.problems.size(); ++p) {
    auto r = SyntheticRows(f.problems[p], uint32_t(p + 3));
    for (size_t i = 0; i < r.size(); ++i) {
      if (p == 3) {
        r[i].status = "out_of_resources";
        r[i].message = "cuLaunchKernel: CUDA_ERROR_INVALID_VALUE (smem " + std::to_string(i) + ")";
      } else if (p == 0 && i < f.statuses.size()) {
        r[i].status = f.statuses[i];
        r[i].message = i == 0 ? kScriptMessage : i == 1 ? LongMessage() : "recorded " + f.statuses[i];
      }
      rows.push_back(r[i]);
    }
  }
  ReplayMeasurer::Options ro;
  ro.device = {"NVIDIA H200 <replay>", "GPU-replay-0", 9, 0, 132, "580.65"};
  ro.toolchain = {"13.0", "0.1.0", "abcdef0123456789abcdef0123456789"};
  auto space = ReplayMeasurer::FromText(ReplayCsv(rows), "fixture", ro);
  EXPECT_TRUE(space.ok()) << space.status().ToString();
  auto measurer = ReplayMeasurer::FromText(ReplayCsv(rows), "fixture", ro);
  f.db_path = TempDir(name) + "/t.db";
  TuneOptions o;
  o.db_path = f.db_path;
  o.problems = f.problems;
  ReplayMeasurer* sp = space->get();
  o.enumerate = [sp](const Problem& p, const DeviceRecord&) -> Result<std::vector<Variant>> { return sp->Variants(p); };
  std::vector<std::unique_ptr<Measurer>> ms;
  ms.push_back(std::move(*measurer));
  auto summary = Tune(o, std::move(ms));
  EXPECT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->winners, 3);
  return f;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

TEST(HtmlEscape, EscapesMarkupCharacters) {
  EXPECT_EQ(HtmlEscape("a<b>&\"c'd"), "a&lt;b&gt;&amp;&quot;c&#39;d");
  EXPECT_EQ(HtmlEscape("µs ok"), "µs ok");
}

TEST(HtmlReport, ShowsWinnersFailuresUnitsAndEscapesMessages) {
  Filled f = FillDatabase("report_full");
  auto db = Database::Open(f.db_path, Database::OpenOptions{true, 10000});
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  HtmlReportOptions o;
  o.generated_at = "2026-12-01T10:00:00Z";
  auto page = RenderHtmlReport(**db, o);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  const std::string& h = *page;

  // Header: what, which file, when, toolchain.
  EXPECT_NE(h.find("flashtune tuning report"), std::string::npos);
  EXPECT_NE(h.find(HtmlEscape(f.db_path)), std::string::npos);
  EXPECT_NE(h.find("2026-12-01T10:00:00Z"), std::string::npos);
  EXPECT_NE(h.find("NVRTC 13.0"), std::string::npos);
  EXPECT_NE(h.find("generator 0.1.0"), std::string::npos);
  EXPECT_NE(h.find("abcdef012345"), std::string::npos);
  EXPECT_NE(h.find("NVIDIA H200 &lt;replay&gt;"), std::string::npos);

  // Every winner, with its time and TFLOP/s, and the problem without one.
  auto winners = (*db)->ListWinners();
  ASSERT_TRUE(winners.ok());
  ASSERT_EQ(winners->size(), 3u);
  for (const auto& w : *winners) {
    EXPECT_NE(h.find("<code>" + w.variant_uri + "</code>"), std::string::npos) << w.variant_uri;
    char tf[32];
    std::snprintf(tf, sizeof tf, "%.0f", w.tflops);
    EXPECT_NE(h.find(std::string("<b>") + tf + "</b>"), std::string::npos) << w.variant_uri << " " << tf;
  }
  EXPECT_NE(h.find("no winner — every measured variant failed"), std::string::npos);
  // Units.
  EXPECT_NE(h.find("TFLOP/s"), std::string::npos);
  EXPECT_NE(h.find("Median (µs)"), std::string::npos);
  EXPECT_NE(h.find("r</tspan><tspan dy=\"-3\"> (query rows per block)"), std::string::npos);
  EXPECT_NE(h.find("c</tspan><tspan dy=\"-3\"> (key/value rows per step)"), std::string::npos);
  EXPECT_NE(h.find("no variant ran successfully"), std::string::npos);  // the all-failed problem's legend

  // Failures grouped by status, messages escaped; the long one cut with the whole text kept.
  for (const auto& s : f.statuses) EXPECT_NE(h.find("id=\"fail-" + s + "\""), std::string::npos) << s;
  EXPECT_LT(h.find("id=\"fail-compile_error\""), h.find("id=\"fail-out_of_resources\""));
  EXPECT_NE(h.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;quoted&quot;"), std::string::npos);
  EXPECT_EQ(Lower(h).find("<script"), std::string::npos);
  EXPECT_NE(h.find("END-OF-LONG-MESSAGE</pre></details>"), std::string::npos);
  EXPECT_NE(h.find("&lt;tile &amp; stage&gt;"), std::string::npos);
  EXPECT_EQ(Count(h, "<details>"), Count(h, "</details>"));
  EXPECT_GE(Count(h, "<details>"), 1u);

  // Self-contained: no network references of any kind.
  EXPECT_EQ(h.find("http://"), std::string::npos);
  EXPECT_EQ(h.find("https://"), std::string::npos);
  EXPECT_EQ(Lower(h).find("<link"), std::string::npos);
  EXPECT_EQ(Lower(h).find("@import"), std::string::npos);
  EXPECT_EQ(Lower(h).find("url(http"), std::string::npos);

  // Heatmaps: one per problem, plus the shared definitions; failed cells hatched and named.
  EXPECT_EQ(Count(h, "<svg"), Count(h, "</svg>"));
  EXPECT_EQ(Count(h, "<figure class=\"hm\">"), f.problems.size());
  EXPECT_EQ(Count(h, "<svg"), f.problems.size() + 1);
  EXPECT_NE(h.find(">compile</text>"), std::string::npos);
  EXPECT_NE(h.find(">no res</text>"), std::string::npos);
  EXPECT_GE(Count(h, "fill=\"url(#ft-hatch)\""), 5u + 20u);
  EXPECT_EQ(Count(h, ">★") - Count(h, ">★ winner"), 3u);  // one winner cell per tuned problem (+ legends)

  // Structure balanced enough for a browser and a reader.
  for (std::string tag : {"table", "section", "figure", "tr", "td", "details", "code", "text", "g", "main"})
    EXPECT_EQ(Count(h, "<" + tag + ">") + Count(h, "<" + tag + " "), Count(h, "</" + tag + ">")) << tag;
  EXPECT_EQ(h.rfind("</html>\n"), h.size() - 8);

  // Tuning runs.
  EXPECT_NE(h.find("How long tuning took"), std::string::npos);
  EXPECT_NE(h.find("<td>exhaustive</td>"), std::string::npos);
  EXPECT_EQ(h.find("did not end"), std::string::npos);
}

TEST(HtmlReport, OneSectionPerGpu) {
  auto set = SmallProblemSet();
  std::vector<Problem> problems = {set[0], set[5]};
  std::vector<RecordedRow> rows;
  for (size_t p = 0; p < problems.size(); ++p) {
    auto r = SyntheticRows(problems[p], uint32_t(p + 1));
    rows.insert(rows.end(), r.begin(), r.end());
  }
  std::string csv = ReplayCsv(rows);
  auto make = [&](const std::string& name, const std::string& uuid) {
    ReplayMeasurer::Options ro;
    ro.device = {name, uuid, 9, 0, 132, "580.65"};
    auto m = ReplayMeasurer::FromText(csv, "rows", ro);
    EXPECT_TRUE(m.ok());
    return std::move(*m);
  };
  auto space = make("space", "GPU-space");
  TuneOptions o;
  o.db_path = TempDir("report_two_gpus") + "/t.db";
  o.problems = problems;
  ReplayMeasurer* sp = space.get();
  o.enumerate = [sp](const Problem& p, const DeviceRecord&) -> Result<std::vector<Variant>> { return sp->Variants(p); };
  std::vector<std::unique_ptr<Measurer>> ms;
  ms.push_back(make("NVIDIA H200", "GPU-h200"));
  ms.push_back(make("NVIDIA A100", "GPU-a100"));
  auto summary = Tune(o, std::move(ms));
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  ASSERT_EQ(summary->winners, 4);
  auto db = Database::Open(o.db_path);
  ASSERT_TRUE(db.ok());
  auto page = RenderHtmlReport(**db);
  ASSERT_TRUE(page.ok());
  // Each GPU heads its winners table and its heatmaps; each has a heatmap per problem.
  EXPECT_EQ(Count(*page, "NVIDIA H200 <span class=\"muted\">"), 2u);
  EXPECT_EQ(Count(*page, "NVIDIA A100 <span class=\"muted\">"), 2u);
  EXPECT_EQ(Count(*page, "<figure class=\"hm\">"), 4u);
  EXPECT_NE(page->find("No variant failed"), std::string::npos);
  EXPECT_EQ(Count(*page, "<td>exhaustive</td>"), 2u);  // one run per GPU
}

TEST(HtmlReport, EmptyDatabaseSaysSo) {
  std::string path = TempDir("report_empty") + "/e.db";
  auto db = Database::Open(path);
  ASSERT_TRUE(db.ok());
  auto page = RenderHtmlReport(**db);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_NE(page->find("holds no trials and no winners yet"), std::string::npos);
  EXPECT_EQ(page->find("<figure"), std::string::npos);
  EXPECT_NE(page->find("No tuning runs are recorded"), std::string::npos);
  // generated_at defaults to now, ISO 8601 UTC.
  EXPECT_NE(page->find("Z</dd>"), std::string::npos);
}

TEST(HtmlReport, MarksStaleAndCurrentToolchains) {
  Filled f = FillDatabase("report_stale");
  auto db = Database::Open(f.db_path);
  ASSERT_TRUE(db.ok());
  HtmlReportOptions o;
  o.current_toolchain = ToolchainInfo{"13.0", "0.2.0", "ffff"};
  auto stale = RenderHtmlReport(**db, o);
  ASSERT_TRUE(stale.ok());
  EXPECT_NE(stale->find("stale toolchain"), std::string::npos);
  EXPECT_EQ(stale->find("current toolchain"), std::string::npos);
  o.current_toolchain = ToolchainInfo{"13.0", "0.1.0", "abcdef0123456789abcdef0123456789"};
  auto current = RenderHtmlReport(**db, o);
  ASSERT_TRUE(current.ok());
  EXPECT_EQ(current->find("stale toolchain"), std::string::npos);
  EXPECT_NE(current->find("current toolchain"), std::string::npos);
}

TEST(HtmlReport, CapsLongFailureListsAndRejectsBadOptions) {
  Filled f = FillDatabase("report_cap");
  auto db = Database::Open(f.db_path);
  ASSERT_TRUE(db.ok());
  HtmlReportOptions o;
  o.max_failures_per_status = 2;
  auto page = RenderHtmlReport(**db, o);
  ASSERT_TRUE(page.ok());
  // Problem 4's candidates all failed with out_of_resources (plus one on problem 1).
  EXPECT_NE(page->find(" more; <code>flashtune db export --format csv</code> lists them all."), std::string::npos);
  o.max_failures_per_status = 0;
  auto bad = RenderHtmlReport(**db, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("max_failures_per_status"), std::string::npos);
}

TEST(HtmlReport, UnfinishedRunIsShownAsNotEnded) {
  std::string path = TempDir("report_open_run") + "/r.db";
  auto db = Database::Open(path);
  ASSERT_TRUE(db.ok());
  auto dev = (*db)->UpsertDevice({"NVIDIA H200", "GPU-1", 9, 0, 132, "580"});
  auto tc = (*db)->UpsertToolchain({"13.0", "0.1.0", "abc"});
  ASSERT_TRUE(dev.ok() && tc.ok());
  auto run = (*db)->BeginRun(*dev, *tc, "budgeted");
  ASSERT_TRUE(run.ok());
  auto page = RenderHtmlReport(**db);
  ASSERT_TRUE(page.ok());
  EXPECT_NE(page->find("did not end"), std::string::npos);
  EXPECT_NE(page->find("<td>budgeted</td>"), std::string::npos);
}

// A killed run's time counts up to its last trial; a re-timed finalist is one variant, not two.
TEST(HtmlReport, KilledRunCountsUpToItsLastTrialAndRetimesAreNotVariants) {
  std::string path = TempDir("report_killed_run") + "/r.db";
  int64_t run_id = 0;
  {
    auto db = Database::Open(path);
    ASSERT_TRUE(db.ok());
    auto dev = (*db)->UpsertDevice({"NVIDIA H200", "GPU-1", 9, 0, 132, "580"});
    auto tc = (*db)->UpsertToolchain({"13.0", "0.1.0", "abc"});
    ASSERT_TRUE(dev.ok() && tc.ok());
    auto run = (*db)->BeginRun(*dev, *tc, "exhaustive");
    ASSERT_TRUE(run.ok());
    run_id = *run;
    TrialRecord t;
    t.problem = Problem{DType::kBF16, 64, false, 4, 1024, 1024, 8, 8};
    t.variant = Fa2Variant(DType::kBF16, 64, false, 128, 64, 4, 2);
    t.median_us = 100;
    t.run_id = run_id;
    ASSERT_TRUE((*db)->RecordTrial(*dev, *tc, t).ok());
    t.phase = "retime";
    t.median_us = 101;
    ASSERT_TRUE((*db)->RecordTrial(*dev, *tc, t).ok());
  }
  // The run started ten minutes before its trials and never ended.
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  const std::string sql = "UPDATE tuning_runs SET started_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-600.25 seconds') "
                          "WHERE id = " + std::to_string(run_id);
  ASSERT_EQ(sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(raw);
  auto db = Database::Open(path);
  ASSERT_TRUE(db.ok());
  auto page = RenderHtmlReport(**db);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_NE(page->find("did not end"), std::string::npos);
  EXPECT_NE(page->find("≥ 10 min 00 s"), std::string::npos);  // in the totals and the runs table
  EXPECT_NE(page->find(">1 / 0<"), std::string::npos) << "one variant ok, none failed";
}

// A database written by hand: one H100 (compute capability 9.0) and one toolchain; trials and
// winners as the test states them.
class HandWritten {
 public:
  explicit HandWritten(const std::string& path) {
    auto db = Database::Open(path);
    EXPECT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(*db);
    auto dev = db_->UpsertDevice({"NVIDIA H100", "GPU-1", 9, 0, 132, "580"});
    auto tc = db_->UpsertToolchain({"13.0", "0.1.0", "abc"});
    EXPECT_TRUE(dev.ok() && tc.ok());
    dev_ = *dev;
    tc_ = *tc;
  }
  void Trial(const Problem& p, const Variant& v, double us, const char* phase) {
    TrialRecord t;
    t.problem = p;
    t.variant = v;
    t.median_us = us;
    t.phase = phase;
    EXPECT_TRUE(db_->RecordTrial(dev_, tc_, t).ok());
  }
  void Winner(const Problem& p, const Variant& v, double us) {
    EXPECT_TRUE(db_->SetWinner(dev_, tc_, p, v, "", us, 1.0).ok());
  }

 private:
  std::unique_ptr<Database> db_;
  int64_t dev_ = 0, tc_ = 0;
};

// A winner's row names the finalists its re-timing weighed, fastest first, each at its median
// round (the lower middle of an even count, as the tuner decides); a problem with no re-timing
// shows a dash there.
TEST(HtmlReport, WinnersShowTheirRetimedFinalists) {
  std::string path = TempDir("report_finalists") + "/r.db";
  const Problem p{DType::kBF16, 64, false, 4, 1024, 1024, 8, 8};
  const Problem lone{DType::kBF16, 64, false, 4, 2048, 2048, 8, 8};
  const Variant a = Fa2Variant(DType::kBF16, 64, false, 128, 64, 4, 2);
  const Variant b = Fa2Variant(DType::kBF16, 64, false, 64, 64, 4, 2);
  {
    HandWritten db(path);
    db.Trial(p, a, 100.0, "search");
    db.Trial(p, b, 101.0, "search");
    for (double us : {101.5, 110.0, 111.0}) db.Trial(p, a, us, "retime");
    for (double us : {104.0, 103.0}) db.Trial(p, b, us, "retime");
    db.Trial(lone, a, 300.0, "search");
    db.Winner(p, b, 103.0);
  }
  auto db = Database::Open(path);
  ASSERT_TRUE(db.ok());
  auto page = RenderHtmlReport(**db);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  const std::string& h = *page;
  EXPECT_NE(h.find("<th>Re-timed finalists</th>"), std::string::npos);
  const std::string row_b = "64x64 w4 s2 103</span>", row_a = "128x64 w4 s2 110</span>";
  const size_t at_b = h.find(row_b), at_a = h.find(row_a);
  ASSERT_NE(at_b, std::string::npos) << h;
  ASSERT_NE(at_a, std::string::npos) << h;
  EXPECT_LT(at_b, at_a);  // fastest first; b's two rounds give 103 (the lower middle), a's three 110
  EXPECT_NE(h.find("<td>–</td>"), std::string::npos);  // the problem searched once, not re-timed
}

// A winner's row names the tile the GPU would launch untuned (DefaultVariantForGpu) and how the
// winner compares: its median re-timing round against the winner's, "the winner" where it won,
// "not measured" where the search skipped it.
TEST(HtmlReport, WinnersShowTheUntunedPlanAndTheGainOverIt) {
  std::string path = TempDir("report_untuned") + "/r.db";
  // Lengths past hopper_fwd's short-stream rule (DefaultFor: up to 2048 keys run the persistent
  // twin), where one untuned tile serves them all.
  const Problem p{DType::kBF16, 64, false, 4, 4096, 4096, 8, 8};
  Problem won = p, skipped = p;
  won.seqlen_q = won.seqlen_k = 8192;
  skipped.seqlen_q = skipped.seqlen_k = 16384;
  const Variant fa2 = Fa2Variant(DType::kBF16, 64, false, 128, 64, 4, 2);
  auto untuned = DefaultVariantForGpu(p, 9, 0);
  ASSERT_TRUE(untuned.ok()) << untuned.status().ToString();
  ASSERT_FALSE(*untuned == fa2);
  for (const Problem& q : {won, skipped}) {
    auto other = DefaultVariantForGpu(q, 9, 0);
    ASSERT_TRUE(other.ok() && *other == *untuned) << "the same untuned tile at every length of the class";
  }
  {
    HandWritten db(path);
    db.Trial(p, fa2, 100.0, "search");
    db.Trial(p, *untuned, 130.0, "search");
    for (double us : {128.0, 126.0}) db.Trial(p, *untuned, us, "retime");
    db.Winner(p, fa2, 103.0);
    db.Trial(won, *untuned, 200.0, "search");
    db.Winner(won, *untuned, 200.0);
    db.Trial(skipped, fa2, 400.0, "search");
    db.Winner(skipped, fa2, 400.0);
  }
  auto db = Database::Open(path);
  ASSERT_TRUE(db.ok());
  auto page = RenderHtmlReport(**db);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  const std::string& h = *page;
  EXPECT_NE(h.find("<th>Untuned plan</th>"), std::string::npos);
  // p: the re-timing's lower middle (126 of 126 and 128) against the winner's 103.
  EXPECT_EQ(Count(h, " 126</span><br>winner ×1.22</td>"), 1u) << h;
  EXPECT_EQ(Count(h, "</span><br>the winner</td>"), 1u) << h;
  EXPECT_EQ(Count(h, "</span><br><span class=\"muted\">not measured</span></td>"), 1u) << h;
}

// The CLI: `flashtune db report --html FILE`.
std::string Cli() { return FLASHTUNE_CLI_PATH; }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(DbReportCli, WritesThePage) {
  Filled f = FillDatabase("report_cli");
  std::string out = TempDir("report_cli_out") + "/report.html";
  ASSERT_EQ(RunShell(Cli() + " db report --db '" + f.db_path + "' --html '" + out + "' 2>/dev/null"), 0);
  std::string h = ReadFile(out);
  EXPECT_NE(h.find("flashtune tuning report"), std::string::npos);
  EXPECT_NE(h.find("id=\"fail-wrong_result\""), std::string::npos);
  // The CLI compares against this build's toolchain: the fixture's is another one.
  EXPECT_NE(h.find("stale toolchain"), std::string::npos);
  // '-' writes to stdout.
  std::string out2 = TempDir("report_cli_out2") + "/stdout.html";
  ASSERT_EQ(RunShell(Cli() + " db report --db '" + f.db_path + "' --html - > '" + out2 + "'"), 0);
  EXPECT_NE(ReadFile(out2).find("</html>"), std::string::npos);
}

TEST(DbReportCli, BadArgumentsExit2AndBadDatabasesExit1) {
  std::string dir = TempDir("report_cli_errors");
  std::string err = dir + "/err.txt";
  // --html missing.
  EXPECT_EQ(RunShell(Cli() + " db report --db '" + dir + "/x.db' 2>'" + err + "'"), 2);
  EXPECT_NE(ReadFile(err).find("--html FILE is required"), std::string::npos);
  // --html without a value; --html on another subcommand; a stray argument.
  EXPECT_EQ(RunShell(Cli() + " db report --html 2>/dev/null"), 2);
  EXPECT_EQ(RunShell(Cli() + " db list --html x.html --db '" + dir + "/x.db' 2>/dev/null"), 2);
  EXPECT_EQ(RunShell(Cli() + " db report extra --html x.html --db '" + dir + "/x.db' 2>/dev/null"), 2);
  // Database absent: exit 1, named.
  EXPECT_EQ(RunShell(Cli() + " db report --db '" + dir + "/absent.db' --html '" + dir + "/a.html' 2>'" + err + "'"), 1);
  EXPECT_NE(ReadFile(err).find("absent.db"), std::string::npos);
  // Not a database: exit 1 with the message; the file untouched and no page written.
  std::string junk = dir + "/junk.db";
  std::ofstream(junk) << "this is not an SQLite database, just some text long enough to have a header............";
  EXPECT_EQ(RunShell(Cli() + " db report --db '" + junk + "' --html '" + dir + "/j.html' 2>'" + err + "'"), 1);
  EXPECT_NE(ReadFile(err).find("not a flashtune database"), std::string::npos);
  EXPECT_FALSE(std::ifstream(dir + "/j.html").good());
  // Output not writable: exit 1.
  Filled f = FillDatabase("report_cli_unwritable");
  EXPECT_EQ(RunShell(Cli() + " db report --db '" + f.db_path + "' --html '" + dir + "/no/such/dir/r.html' 2>'" + err +
                     "'"),
            1);
  EXPECT_NE(ReadFile(err).find("cannot write"), std::string::npos);
}

}  // namespace
}  // namespace flashtune
