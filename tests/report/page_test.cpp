// The report's sections one by one (report/page.h): each stands alone on a loaded page.
#include "report/page.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/support/replay_fixture.h"

namespace flashtune {
namespace {

TEST(ReportPage, AnEmptyDatabaseShowsOnlyHowToFillIt) {
  auto db = Database::Open(testing::TempDir("report_page_empty") + "/t.db");
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  HtmlReportOptions options;
  options.generated_at = "2026-11-30T00:00:00Z";
  auto page = html::LoadPage(**db, options);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_TRUE(page->empty());
  EXPECT_EQ(page->generated, "2026-11-30T00:00:00Z");
  EXPECT_NE(html::EmptySection(*page).find("flashtune tune --db"), std::string::npos);
  EXPECT_EQ(html::WinnersSection(*page, options), "");
  EXPECT_EQ(html::HeatmapsSection(*page, options), "");
  EXPECT_EQ(html::FailuresSection(*page, options), "");
  const std::string runs = html::RunsSection(*page);
  EXPECT_NE(runs.find("No tuning runs"), std::string::npos) << runs;
  EXPECT_EQ(runs.rfind("</section>\n"), runs.size() - 11);  // each section closes itself
  EXPECT_EQ(html::HeaderSection(*page, options).find("<nav>"), std::string::npos);  // nothing to link to
}

}  // namespace
}  // namespace flashtune
