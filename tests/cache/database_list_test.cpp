// Database::ListDevices / ListToolchains / ListRuns (read accessors used by the HTML report).
#include <gtest/gtest.h>

#include "flashtune/database.h"
#include "tests/support/replay_fixture.h"

namespace flashtune {
namespace {

TEST(Database, ListsDevicesToolchainsAndRuns) {
  auto db = Database::Open(testing::TempDir("db_lists") + "/l.db");
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  auto none = (*db)->ListRuns();
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());

  DeviceRecord a{"NVIDIA H200", "GPU-a", 9, 0, 132, "580.65"}, b{"NVIDIA A100", "GPU-b", 8, 0, 108, "580.65"};
  auto da = (*db)->UpsertDevice(a), dbb = (*db)->UpsertDevice(b);
  auto tc = (*db)->UpsertToolchain({"13.0", "0.1.0", "abc"});
  ASSERT_TRUE(da.ok() && dbb.ok() && tc.ok());
  auto devices = (*db)->ListDevices();
  ASSERT_TRUE(devices.ok());
  ASSERT_EQ(devices->size(), 2u);
  EXPECT_EQ((*devices)[0].id, *da);
  EXPECT_EQ((*devices)[0].device.name, "NVIDIA H200");
  EXPECT_EQ((*devices)[1].device.uuid, "GPU-b");
  EXPECT_EQ((*devices)[1].device.cc_major, 8);
  EXPECT_EQ((*devices)[1].device.sm_count, 108);
  EXPECT_EQ((*devices)[1].device.driver_version, "580.65");
  auto tcs = (*db)->ListToolchains();
  ASSERT_TRUE(tcs.ok());
  ASSERT_EQ(tcs->size(), 1u);
  EXPECT_EQ((*tcs)[0].id, *tc);
  EXPECT_EQ((*tcs)[0].toolchain, (ToolchainInfo{"13.0", "0.1.0", "abc"}));

  auto r1 = (*db)->BeginRun(*da, *tc, "exhaustive");
  auto r2 = (*db)->BeginRun(*dbb, *tc, "budgeted");
  ASSERT_TRUE(r1.ok() && r2.ok());
  ASSERT_TRUE((*db)->EndRun(*r1, RunCounts{4, 100, 7, 1, 3}).ok());
  auto runs = (*db)->ListRuns();
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 2u);
  const RunRow& ended = (*runs)[0];
  EXPECT_EQ(ended.id, *r1);
  EXPECT_EQ(ended.device_id, *da);
  EXPECT_EQ(ended.toolchain_id, *tc);
  EXPECT_EQ(ended.strategy, "exhaustive");
  EXPECT_EQ(ended.counts.problems, 4);
  EXPECT_EQ(ended.counts.measured, 100);
  EXPECT_EQ(ended.counts.failed, 7);
  EXPECT_EQ(ended.counts.skipped, 1);
  EXPECT_EQ(ended.counts.winners, 3);
  EXPECT_EQ(ended.started_at.size(), 24u) << ended.started_at;  // 2026-11-30T12:34:56.789Z
  EXPECT_GE(ended.ended_at, ended.started_at);
  const RunRow& open = (*runs)[1];
  EXPECT_EQ(open.strategy, "budgeted");
  EXPECT_TRUE(open.ended_at.empty());
  EXPECT_EQ(open.counts.measured, 0);
}

}  // namespace
}  // namespace flashtune
