#include "generator/families/decode_fwd.h"
#include "generator/families/fa2_fwd.h"
#include "flashtune/replay_measurer.h"
#include "flashtune/database.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/old_database.h"
#include "tests/support/replay_fixture.h"

namespace flashtune {
namespace {

using testing::TempDir;
using testing::WriteOldDatabase;

const DeviceRecord kH200{"NVIDIA H200", "GPU-aaaa", 9, 0, 132, "580.65"};
const ToolchainInfo kTc{"13.0", "0.1.0", "tplhash1"};

Problem P(int64_t n, bool causal = false) { return Problem{DType::kBF16, 128, causal, 16384 / n, n, n, 16, 16}; }
Variant V(int bm, int bn, int w = 4, int s = 2, bool causal = false) {
  return Fa2Variant(DType::kBF16, 128, causal, bm, bn, w, s);
}

TrialRecord Ok(const Problem& p, const Variant& v, double us) {
  TrialRecord t;
  t.problem = p;
  t.variant = v;
  t.source_hash = "src-" + v.Uri();
  t.median_us = us;
  t.iqr_us = us * 0.01;
  t.reps = 20;
  return t;
}

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(Database, CreatesSchemaVersion2WithWal) {
  std::string path = TempDir("db_create") + "/t.db";
  auto db = Database::Open(path);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  EXPECT_EQ(*(*db)->SchemaVersion(), kSchemaVersion);
  sqlite3* raw;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  sqlite3_stmt* st;
  sqlite3_prepare_v2(raw, "PRAGMA journal_mode", -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "wal");
  sqlite3_finalize(st);
  for (const char* table : {"devices", "toolchains", "problems", "variants", "trials", "winners", "cubins", "tuning_runs"}) {
    sqlite3_prepare_v2(raw, "SELECT count(*) FROM sqlite_schema WHERE name = ?", -1, &st, nullptr);
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int(st, 0), 1) << table;
    sqlite3_finalize(st);
  }
  sqlite3_close(raw);
}

TEST(Database, MigratesVersion1File) {
  std::string path = TempDir("db_migrate") + "/v1.db";
  ASSERT_TRUE(WriteOldDatabase(path, 1));

  auto db = Database::Open(path);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  EXPECT_EQ(*(*db)->SchemaVersion(), 4);
  // The old trial survived with v2 defaults; v2 features work; v3 knows its family; v4 its
  // problem's layout (dense).
  auto rows = (*db)->TrialsForProblem(1);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].trial.phase, "search");
  EXPECT_DOUBLE_EQ((*rows)[0].trial.median_us, 250.0);
  EXPECT_EQ((*rows)[0].trial.problem.layout, Layout::kDense);
  auto run = (*db)->BeginRun(1, 1, "exhaustive");
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_TRUE((*db)->EndRun(*run, RunCounts{1, 2, 0, 0, 1}).ok());
  // Version 3: the variant stored before families existed is an fa2_fwd one.
  sqlite3* check = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &check, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(check, "SELECT family FROM variants WHERE id = 1", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "fa2_fwd");
  sqlite3_finalize(st);
  sqlite3_close(check);
}

TEST(Database, NewerSchemaIsUnsupported) {
  std::string path = TempDir("db_newer") + "/v9.db";
  sqlite3* raw;
  sqlite3_open(path.c_str(), &raw);
  sqlite3_exec(raw, "CREATE TABLE x(a); PRAGMA user_version = 9;", nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  auto db = Database::Open(path);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), Code::kUnsupported);
}

TEST(Database, CorruptFileIsClearErrorAndUntouched) {
  std::string dir = TempDir("db_corrupt");
  for (const std::string& content : {std::string("this is not a database\n"), std::string(4096, '\x17')}) {
    std::string path = dir + "/bad.db";
    std::ofstream(path, std::ios::binary) << content;
    auto db = Database::Open(path);
    ASSERT_FALSE(db.ok());
    EXPECT_EQ(db.status().code(), Code::kCorrupt);
    EXPECT_NE(db.status().message().find(path), std::string::npos) << db.status().message();
    EXPECT_EQ(Slurp(path), content);
    EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
  }
  // A SQLite file of some other program is not ours either.
  std::string other = dir + "/other.db";
  sqlite3* raw;
  sqlite3_open(other.c_str(), &raw);
  sqlite3_exec(raw, "CREATE TABLE notes(t TEXT); INSERT INTO notes VALUES('keep me');", nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  std::string before = Slurp(other);
  auto db = Database::Open(other);
  EXPECT_EQ(db.status().code(), Code::kCorrupt);
  EXPECT_EQ(Slurp(other), before);
}

TEST(Database, TrialsRankedOkFirst) {
  auto db = Database::Open(TempDir("db_rank") + "/t.db");
  ASSERT_TRUE(db.ok());
  int64_t dev = *(*db)->UpsertDevice(kH200), tc = *(*db)->UpsertToolchain(kTc);
  Problem p = P(4096);
  ASSERT_TRUE((*db)->RecordTrial(dev, tc, Ok(p, V(128, 64), 300)).ok());
  TrialRecord bad = Ok(p, V(64, 32), 0);
  bad.status = Code::kCompileError;
  bad.message = "nvrtc said no";
  ASSERT_TRUE((*db)->RecordTrial(dev, tc, bad).ok());
  ASSERT_TRUE((*db)->RecordTrial(dev, tc, Ok(p, V(128, 128), 250)).ok());
  auto pid = (*db)->FindProblem(p);
  ASSERT_TRUE(pid.ok());
  auto rows = (*db)->TrialsForProblem(*pid);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ((*rows)[0].trial.variant, V(128, 128));
  EXPECT_EQ((*rows)[1].trial.variant, V(128, 64));
  EXPECT_EQ((*rows)[2].status_name, "compile_error");
  EXPECT_EQ((*rows)[2].trial.message, "nvrtc said no");
  EXPECT_GT((*rows)[0].trial.tflops, 0);
  EXPECT_EQ((*rows)[2].trial.tflops, 0);
}

TEST(Database, WinnerNeedsOkTrial) {
  auto db = Database::Open(TempDir("db_winner_ok") + "/t.db");
  ASSERT_TRUE(db.ok());
  int64_t dev = *(*db)->UpsertDevice(kH200), tc = *(*db)->UpsertToolchain(kTc);
  Problem p = P(4096);
  TrialRecord wrong = Ok(p, V(128, 64), 100);
  wrong.status = Code::kWrongResult;
  ASSERT_TRUE((*db)->RecordTrial(dev, tc, wrong).ok());
  Status s = (*db)->SetWinner(dev, tc, p, V(128, 64), wrong.source_hash, 100, 1);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
}

TEST(Database, StaleRowsNeverWinners) {
  auto db = Database::Open(TempDir("db_stale") + "/t.db");
  ASSERT_TRUE(db.ok());
  Problem p = P(4096);
  BucketKey b = BucketOf(p);
  // Winners recorded on another model, another driver, and another template hash.
  DeviceRecord a100{"NVIDIA A100", "GPU-bbbb", 8, 0, 108, "580.65"};
  DeviceRecord old_driver = kH200;
  old_driver.driver_version = "550.10";
  ToolchainInfo old_tpl = kTc;
  old_tpl.template_hash = "tplhash0";
  struct Row { DeviceRecord d; ToolchainInfo t; double us; };
  for (const Row& r : {Row{a100, kTc, 10}, Row{old_driver, kTc, 11}, Row{kH200, old_tpl, 12}}) {
    int64_t dev = *(*db)->UpsertDevice(r.d), tc = *(*db)->UpsertToolchain(r.t);
    ASSERT_TRUE((*db)->RecordTrial(dev, tc, Ok(p, V(64, 64), r.us)).ok());
    ASSERT_TRUE((*db)->SetWinner(dev, tc, p, V(64, 64), "src-" + V(64, 64).Uri(), r.us, 1).ok());
  }
  auto none = (*db)->FindWinner(kH200, kTc, b);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  auto near = (*db)->FindNearestWinner(kH200, kTc, b);
  ASSERT_TRUE(near.ok());
  EXPECT_FALSE(near->has_value());
  // Of the three, only the same model and driver's, tuned with other templates, is this bucket's
  // stale winner; a bucket nobody tuned has none.
  auto stale = (*db)->StaleWinnerToolchain(kH200, kTc, b);
  ASSERT_TRUE(stale.ok()) << stale.status().ToString();
  ASSERT_TRUE(stale->has_value());
  EXPECT_EQ(**stale, "nvrtc " + kTc.nvrtc_version + " / generator " + kTc.generator_version + " / templates tplhash0");
  auto untuned = (*db)->StaleWinnerToolchain(kH200, kTc, BucketOf(P(512)));
  ASSERT_TRUE(untuned.ok());
  EXPECT_FALSE(untuned->has_value());
  // The current one, on a sibling GPU of the same model, is found.
  DeviceRecord sibling = kH200;
  sibling.uuid = "GPU-cccc";
  int64_t dev = *(*db)->UpsertDevice(sibling), tc = *(*db)->UpsertToolchain(kTc);
  ASSERT_TRUE((*db)->RecordTrial(dev, tc, Ok(p, V(128, 64), 20)).ok());
  ASSERT_TRUE((*db)->SetWinner(dev, tc, p, V(128, 64), "src-" + V(128, 64).Uri(), 20, 1).ok());
  auto found = (*db)->FindWinner(kH200, kTc, b);
  ASSERT_TRUE(found.ok());
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->variant, V(128, 64));
  EXPECT_DOUBLE_EQ((*found)->median_us, 20);
}

TEST(Database, NearestBucketSameClass) {
  auto db = Database::Open(TempDir("db_nearest") + "/t.db");
  ASSERT_TRUE(db.ok());
  int64_t dev = *(*db)->UpsertDevice(kH200), tc = *(*db)->UpsertToolchain(kTc);
  for (int64_t n : {1024, 8192}) {
    ASSERT_TRUE((*db)->RecordTrial(dev, tc, Ok(P(n), V(128, n == 1024 ? 32 : 128), 5)).ok());
    ASSERT_TRUE((*db)->SetWinner(dev, tc, P(n), V(128, n == 1024 ? 32 : 128),
                                 "src-" + V(128, n == 1024 ? 32 : 128).Uri(), 5, 1).ok());
  }
  auto near = (*db)->FindNearestWinner(kH200, kTc, BucketOf(P(4096)));  // q12: 8192 (q13) is 1+1+1 away
  ASSERT_TRUE(near.ok());
  ASSERT_TRUE(near->has_value());
  EXPECT_EQ((*near)->variant.Param("bc"), 128);
  EXPECT_GT((*near)->distance, 0);
  auto causal = (*db)->FindNearestWinner(kH200, kTc, BucketOf(P(4096, true)));
  ASSERT_TRUE(causal.ok());
  EXPECT_FALSE(causal->has_value());
}

// A GQA-8 call: its own group's winner when tuned; otherwise, at equal distance, the nearer
// group (the MHA winner of the same shape rather than a GQA-4 one is not nearer: gap 3 vs 1).
TEST(Database, NearestBucketPrefersTheNearerGqaGroup) {
  auto db = Database::Open(TempDir("db_nearest_gqa") + "/t.db");
  ASSERT_TRUE(db.ok());
  int64_t dev = *(*db)->UpsertDevice(kH200), tc = *(*db)->UpsertToolchain(kTc);
  auto with_kv = [](int64_t heads_kv) {
    Problem p = P(4096);
    p.heads_kv = heads_kv;
    return p;
  };
  // MHA (g0) is faster than GQA-4 (g2): the tie-break must not be the median alone.
  ASSERT_TRUE((*db)->RecordTrial(dev, tc, Ok(with_kv(16), V(128, 32), 5)).ok());
  ASSERT_TRUE((*db)->SetWinner(dev, tc, with_kv(16), V(128, 32), "src-" + V(128, 32).Uri(), 5, 1).ok());
  ASSERT_TRUE((*db)->RecordTrial(dev, tc, Ok(with_kv(4), V(128, 128), 9)).ok());
  ASSERT_TRUE((*db)->SetWinner(dev, tc, with_kv(4), V(128, 128), "src-" + V(128, 128).Uri(), 9, 1).ok());
  const BucketKey gqa8 = BucketOf(with_kv(2));
  auto exact = (*db)->FindWinner(kH200, kTc, gqa8);
  ASSERT_TRUE(exact.ok());
  EXPECT_FALSE(exact->has_value());  // GQA-8 is a bucket of its own
  auto near = (*db)->FindNearestWinner(kH200, kTc, gqa8);
  ASSERT_TRUE(near.ok());
  ASSERT_TRUE(near->has_value());
  EXPECT_EQ((*near)->distance, 0);
  EXPECT_EQ((*near)->bucket.kv_group_bucket, 2);  // GQA-4: gap 1, before MHA's gap 3
  EXPECT_EQ((*near)->variant.Param("bc"), 128);
  auto mha = (*db)->FindWinner(kH200, kTc, BucketOf(with_kv(16)));
  ASSERT_TRUE(mha.ok());
  ASSERT_TRUE(mha->has_value());
  EXPECT_EQ((*mha)->variant.Param("bc"), 32);
}

TEST(Database, CubinRoundTrip) {
  auto db = Database::Open(TempDir("db_cubin") + "/t.db");
  ASSERT_TRUE(db.ok());
  CubinRecord c{"srchash", "sm_90a", "-O3", "13.0", {'\x7f', 'E', 'L', 'F', '\0', 'x'}, 128, 1000, 0, "ptxas info"};
  ASSERT_TRUE((*db)->PutCubin(c).ok());
  auto got = (*db)->GetCubin("srchash", "sm_90a", "-O3", "13.0");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->image, c.image);
  EXPECT_EQ(got->registers, 128);
  EXPECT_EQ((*db)->GetCubin("srchash", "sm_80", "-O3", "13.0").status().code(), Code::kNotFound);
}

TEST(Database, ExportMergeRoundTrip) {
  std::string dir = TempDir("db_merge");
  auto a = Database::Open(dir + "/a.db");
  auto b = Database::Open(dir + "/b.db");
  ASSERT_TRUE(a.ok() && b.ok());
  int64_t dev = *(*a)->UpsertDevice(kH200), tc = *(*a)->UpsertToolchain(kTc);
  ASSERT_TRUE((*a)->RecordTrial(dev, tc, Ok(P(4096), V(128, 64), 300)).ok());
  ASSERT_TRUE((*a)->RecordTrial(dev, tc, Ok(P(4096), V(128, 128), 280)).ok());
  ASSERT_TRUE((*a)->SetWinner(dev, tc, P(4096), V(128, 128), "src-" + V(128, 128).Uri(), 280, 1).ok());
  ASSERT_TRUE((*a)->PutCubin(CubinRecord{"s", "sm_90a", "", "13.0", {'x'}, 1, 2, 0, ""}).ok());
  // b has its own row first, so ids differ between the files.
  DeviceRecord other = kH200;
  other.uuid = "GPU-zzzz";
  int64_t bdev = *(*b)->UpsertDevice(other), btc = *(*b)->UpsertToolchain(ToolchainInfo{"12.9", "0.0.1", "x"});
  ASSERT_TRUE((*b)->RecordTrial(bdev, btc, Ok(P(512), V(64, 64), 10)).ok());

  auto m1 = (*b)->Merge(dir + "/a.db");
  ASSERT_TRUE(m1.ok()) << m1.status().ToString();
  EXPECT_EQ(m1->trials_added, 2);
  EXPECT_EQ(m1->winners_added, 1);
  EXPECT_EQ(m1->cubins_added, 1);
  auto m2 = (*b)->Merge(dir + "/a.db");
  ASSERT_TRUE(m2.ok());
  EXPECT_EQ(m2->trials_added, 0);
  EXPECT_EQ(m2->winners_added, 0);
  auto w = (*b)->FindWinner(kH200, kTc, BucketOf(P(4096)));
  ASSERT_TRUE(w.ok() && w->has_value());
  EXPECT_EQ((*w)->variant, V(128, 128));

  // Export of a's rows appears in b's export (b also has its own row).
  auto ea = (*a)->Export(ExportFormat::kCsv);
  auto eb = (*b)->Export(ExportFormat::kCsv);
  ASSERT_TRUE(ea.ok() && eb.ok());
  EXPECT_NE(eb->find(V(128, 128).Uri()), std::string::npos);
  EXPECT_NE(eb->find(V(64, 64).Uri()), std::string::npos);
  auto json = (*b)->Export(ExportFormat::kJson);
  ASSERT_TRUE(json.ok());
  EXPECT_EQ(json->front(), '[');
  EXPECT_NE(json->find("\"variant\":\"" + V(128, 128).Uri() + "\""), std::string::npos);

  // Both export formats feed the replay measurer with the recorded values.
  for (const std::string& text : {*ea, *(*a)->Export(ExportFormat::kJson)}) {
    auto r = ReplayMeasurer::FromText(text, "export", {});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    auto m = (*r)->Measure(P(4096), V(128, 64));
    ASSERT_TRUE(m.ok());
    EXPECT_DOUBLE_EQ(m->median_us, 300);
    EXPECT_EQ(m->source_hash, "src-" + V(128, 64).Uri());
  }

  // Merging a corrupt file fails cleanly and leaves it alone.
  std::string bad = dir + "/bad.db";
  std::ofstream(bad) << "nope";
  auto m3 = (*b)->Merge(bad);
  EXPECT_EQ(m3.status().code(), Code::kCorrupt);
  EXPECT_EQ(Slurp(bad), "nope");

  // Merging a database into itself is refused by name (it would only lock against itself).
  auto self = (*b)->Merge((*b)->path());
  EXPECT_EQ(self.status().code(), Code::kInvalidArgument);
  EXPECT_NE(self.status().message().find("itself"), std::string::npos) << self.status().message();
}

// The winners export says what the runtime launches, which need not be the fastest trial: here
// the winner (kept by the noise rule) is V(128, 64) although V(128, 128) has a faster trial.
TEST(Database, ExportOfWinnersListsWhatTheRuntimeLaunches) {
  auto db = Database::Open(TempDir("db_export_winners") + "/t.db");
  ASSERT_TRUE(db.ok());
  int64_t dev = *(*db)->UpsertDevice(kH200), tc = *(*db)->UpsertToolchain(kTc);
  ASSERT_TRUE((*db)->RecordTrial(dev, tc, Ok(P(4096), V(128, 64), 300)).ok());
  ASSERT_TRUE((*db)->RecordTrial(dev, tc, Ok(P(4096), V(128, 128), 298)).ok());
  ASSERT_TRUE((*db)->RecordTrial(dev, tc, Ok(P(512), V(64, 64), 10)).ok());  // no winner: not exported
  ASSERT_TRUE((*db)->SetWinner(dev, tc, P(4096), V(128, 64), "src-" + V(128, 64).Uri(), 301.5, 2).ok());

  auto csv = (*db)->Export(ExportFormat::kCsv, ExportTable::kWinners);
  ASSERT_TRUE(csv.ok()) << csv.status().ToString();
  std::istringstream lines(*csv);
  std::string header, row, extra;
  std::getline(lines, header);
  std::getline(lines, row);
  EXPECT_FALSE(std::getline(lines, extra)) << *csv;  // one winner, one row
  EXPECT_EQ(header.rfind("dtype,head_dim,causal,batch,seqlen_q,seqlen_k,heads_q,heads_kv,layout,bucket,variant,median_us,", 0),
            0u) << header;
  EXPECT_NE(row.find("," + V(128, 64).Uri() + ",301.5,"), std::string::npos) << row;
  EXPECT_NE(row.find(BucketString(BucketOf(P(4096)))), std::string::npos) << row;
  EXPECT_NE(row.find(kH200.uuid), std::string::npos) << row;
  EXPECT_NE(row.find(kTc.template_hash), std::string::npos) << row;

  auto json = (*db)->Export(ExportFormat::kJson, ExportTable::kWinners);
  ASSERT_TRUE(json.ok());
  EXPECT_NE(json->find("\"variant\":\"" + V(128, 64).Uri() + "\""), std::string::npos) << *json;
  EXPECT_NE(json->find("\"median_us\":301.5"), std::string::npos) << *json;
  EXPECT_EQ(json->find(V(128, 128).Uri()), std::string::npos) << *json;

  EXPECT_EQ(ParseExportTable("winners").value(), ExportTable::kWinners);
  auto bad = ParseExportTable("best");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("allowed trials, winners"), std::string::npos);
}

TEST(Database, PruneAndCheck) {
  auto db = Database::Open(TempDir("db_prune") + "/t.db");
  ASSERT_TRUE(db.ok());
  ToolchainInfo old = kTc;
  old.template_hash = "old";
  int64_t dev = *(*db)->UpsertDevice(kH200), tc = *(*db)->UpsertToolchain(kTc), otc = *(*db)->UpsertToolchain(old);
  ASSERT_TRUE((*db)->RecordTrial(dev, tc, Ok(P(4096), V(128, 64), 300)).ok());
  ASSERT_TRUE((*db)->SetWinner(dev, tc, P(4096), V(128, 64), "src-" + V(128, 64).Uri(), 300, 1).ok());
  ASSERT_TRUE((*db)->RecordTrial(dev, otc, Ok(P(4096), V(128, 64), 310)).ok());
  ASSERT_TRUE((*db)->RecordTrial(dev, otc, Ok(P(1024), V(128, 64), 80)).ok());
  ASSERT_TRUE((*db)->SetWinner(dev, otc, P(1024), V(128, 64), "src-" + V(128, 64).Uri(), 80, 1).ok());
  auto check = (*db)->Check(kTc);
  ASSERT_TRUE(check.ok());
  EXPECT_TRUE(check->integrity_ok);
  EXPECT_EQ(check->trials, 3);
  EXPECT_EQ(check->stale_trials, 2);
  EXPECT_EQ(check->stale_winners, 1);
  ASSERT_EQ(check->stale_toolchains.size(), 1u);
  auto pruned = (*db)->Prune(kTc);
  ASSERT_TRUE(pruned.ok()) << pruned.status().ToString();
  EXPECT_EQ(pruned->trials_removed, 2);
  EXPECT_EQ(pruned->winners_removed, 1);
  EXPECT_EQ(pruned->toolchains_removed, 1);
  auto w = (*db)->FindWinner(kH200, kTc, BucketOf(P(4096)));
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(w->has_value());
  auto after = (*db)->Check(kTc);
  EXPECT_EQ(after->stale_trials, 0);
}

// Version 4 rebuilt the problems table: ids, trials and winners survive, foreign keys hold, and
// a paged problem of the same shape is then a row of its own.
TEST(Database, MigratesVersion3FileKeepingRowsAndAddingLayout) {
  const std::string path = TempDir("db_migrate3") + "/v3.db";
  ASSERT_TRUE(WriteOldDatabase(path, 3));
  auto db = Database::Open(path);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  EXPECT_EQ(*(*db)->SchemaVersion(), 4);
  const Problem dense{DType::kBF16, 128, false, 4, 4096, 4096, 16, 16};
  EXPECT_EQ(*(*db)->FindProblem(dense), 1);
  auto winner = (*db)->FindWinner(kH200, kTc, BucketOf(dense));
  ASSERT_TRUE(winner.ok() && winner->has_value()) << winner.status().ToString();
  EXPECT_EQ((*winner)->problem, dense);
  EXPECT_DOUBLE_EQ((*winner)->median_us, 250.0);
  Problem paged = dense;
  paged.layout = Layout::kPaged;
  EXPECT_EQ((*db)->FindProblem(paged).status().code(), Code::kNotFound);
  auto pid = (*db)->UpsertProblem(paged);
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  EXPECT_NE(*pid, 1);
  sqlite3* check = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &check, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(check, "PRAGMA foreign_key_check", -1, &st, nullptr), SQLITE_OK);
  EXPECT_EQ(sqlite3_step(st), SQLITE_DONE) << "a row refers to a missing one";
  sqlite3_finalize(st);
  sqlite3_close(check);
}

// Readers never migrate: a version-3 file read-only serves its (dense) winners, unchanged.
TEST(Database, ReadOnlyReaderOfVersion3FileSeesDenseProblems) {
  const std::string path = TempDir("db_ro3") + "/v3.db";
  ASSERT_TRUE(WriteOldDatabase(path, 3));
  const std::string before = Slurp(path);
  {
    auto db = Database::Open(path, Database::OpenOptions{true, 100});
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    EXPECT_EQ(*(*db)->SchemaVersion(), 3);
    const Problem dense{DType::kBF16, 128, false, 4, 4096, 4096, 16, 16};
    auto winner = (*db)->FindWinner(kH200, kTc, BucketOf(dense));
    ASSERT_TRUE(winner.ok() && winner->has_value()) << winner.status().ToString();
    EXPECT_EQ((*winner)->problem.layout, Layout::kDense);
    auto rows = (*db)->TrialsForProblem(1);
    ASSERT_TRUE(rows.ok()) << rows.status().ToString();
    EXPECT_EQ(rows->size(), 1u);
    auto problems = (*db)->ListProblems();
    ASSERT_TRUE(problems.ok()) << problems.status().ToString();
    ASSERT_EQ(problems->size(), 1u);
    EXPECT_EQ((*problems)[0].trials, 1);
    Problem paged = dense;
    paged.layout = Layout::kPaged;
    auto none = (*db)->FindWinner(kH200, kTc, BucketOf(paged));
    ASSERT_TRUE(none.ok());
    EXPECT_FALSE(none->has_value());
  }
  EXPECT_EQ(Slurp(path), before);
}

// A paged problem is timed on a page table: its trials, its problem row and its bucket are its
// own, and its bucket is never "near" a dense one (nor the reverse).
TEST(Database, PagedProblemIsARowAndABucketOfItsOwn) {
  const std::string dir = TempDir("db_paged");
  auto db = Database::Open(dir + "/t.db");
  ASSERT_TRUE(db.ok());
  int64_t dev = *(*db)->UpsertDevice(kH200), tc = *(*db)->UpsertToolchain(kTc);
  Problem dense{DType::kBF16, 128, false, 8, 1, 32768, 32, 8};
  Problem paged = dense;
  paged.layout = Layout::kPaged;
  const Variant a = DecodeVariant(DType::kBF16, 128, false, 128, 1, 4, 2, 2);
  const Variant b = DecodeVariant(DType::kBF16, 128, false, 32, 1, 2, 2, 4);
  ASSERT_TRUE((*db)->RecordTrial(dev, tc, Ok(dense, a, 100)).ok());
  ASSERT_TRUE((*db)->RecordTrial(dev, tc, Ok(dense, b, 120)).ok());
  ASSERT_TRUE((*db)->RecordTrial(dev, tc, Ok(paged, a, 140)).ok());
  ASSERT_TRUE((*db)->RecordTrial(dev, tc, Ok(paged, b, 110)).ok());
  auto dense_id = (*db)->FindProblem(dense), paged_id = (*db)->FindProblem(paged);
  ASSERT_TRUE(dense_id.ok() && paged_id.ok());
  EXPECT_NE(*dense_id, *paged_id);
  auto paged_rows = (*db)->TrialsForProblem(*paged_id);
  ASSERT_TRUE(paged_rows.ok());
  ASSERT_EQ(paged_rows->size(), 2u);
  EXPECT_EQ((*paged_rows)[0].trial.variant, b);
  EXPECT_EQ((*paged_rows)[0].trial.problem.layout, Layout::kPaged);
  ASSERT_TRUE((*db)->SetWinner(dev, tc, dense, a, "src-" + a.Uri(), 100, 1).ok());
  // A winner needs an ok trial of its own problem: b was timed dense, but not as the winner
  // of the paged bucket until it is recorded there.
  ASSERT_TRUE((*db)->SetWinner(dev, tc, paged, b, "src-" + b.Uri(), 110, 1).ok());
  EXPECT_EQ(BucketString(BucketOf(paged)), "bf16/d128/full/q0/k15/bh8/g2/paged");
  auto w_dense = (*db)->FindWinner(kH200, kTc, BucketOf(dense));
  auto w_paged = (*db)->FindWinner(kH200, kTc, BucketOf(paged));
  ASSERT_TRUE(w_dense.ok() && w_dense->has_value() && w_paged.ok() && w_paged->has_value());
  EXPECT_EQ((*w_dense)->variant, a);
  EXPECT_EQ((*w_paged)->variant, b);
  EXPECT_EQ((*w_paged)->problem.layout, Layout::kPaged);
  EXPECT_TRUE((*w_paged)->bucket.paged);
  // Another length: the nearest winner of the same layout, never the other layout's.
  Problem paged_long = paged, dense_long = dense;
  paged_long.seqlen_k = dense_long.seqlen_k = 131072;
  auto near_paged = (*db)->FindNearestWinner(kH200, kTc, BucketOf(paged_long));
  auto near_dense = (*db)->FindNearestWinner(kH200, kTc, BucketOf(dense_long));
  ASSERT_TRUE(near_paged.ok() && near_paged->has_value() && near_dense.ok() && near_dense->has_value());
  EXPECT_EQ((*near_paged)->variant, b);
  EXPECT_EQ((*near_dense)->variant, a);
  // The export names the layout; a replay of it keeps the two problems apart.
  auto csv = (*db)->Export(ExportFormat::kCsv);
  ASSERT_TRUE(csv.ok());
  auto replay = ReplayMeasurer::FromText(*csv, "export.csv", ReplayMeasurer::Options{});
  ASSERT_TRUE(replay.ok()) << replay.status().ToString();
  auto m = (*replay)->Measure(paged, b);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_DOUBLE_EQ(m->median_us, 110);
  EXPECT_DOUBLE_EQ((*replay)->Measure(dense, b)->median_us, 120);
  // A merge keeps the two problems, their trials and their winners apart.
  auto merged = Database::Open(dir + "/merged.db");
  ASSERT_TRUE(merged.ok());
  auto stats = (*merged)->Merge(dir + "/t.db");
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->trials_added, 4);
  EXPECT_EQ(stats->winners_added, 2);
  auto m_paged = (*merged)->FindWinner(kH200, kTc, BucketOf(paged));
  ASSERT_TRUE(m_paged.ok() && m_paged->has_value());
  EXPECT_EQ((*m_paged)->variant, b);
  EXPECT_EQ((*m_paged)->problem.layout, Layout::kPaged);
  auto m_id = (*merged)->FindProblem(paged);
  ASSERT_TRUE(m_id.ok());
  EXPECT_EQ((*merged)->TrialsForProblem(*m_id)->size(), 2u);
}

// Varlen calls share the dense buckets; a varlen problem is never stored as one of its own.
TEST(Database, VarlenProblemIsRefused) {
  auto db = Database::Open(TempDir("db_varlen") + "/t.db");
  ASSERT_TRUE(db.ok());
  Problem p = P(4096);
  p.layout = Layout::kVarlen;
  auto id = (*db)->UpsertProblem(p);
  EXPECT_EQ(id.status().code(), Code::kInvalidArgument);
  EXPECT_NE(id.status().message().find("allowed: dense, paged"), std::string::npos) << id.status().message();
}

TEST(Database, ReadOnlyMissingIsNotFound) {
  auto db = Database::Open(TempDir("db_ro") + "/absent.db", Database::OpenOptions{true, 100});
  EXPECT_EQ(db.status().code(), Code::kNotFound);
}

// `--db some/folder` (a path meant as the folder to put it in) is refused, naming the path, for
// writers and readers alike; nothing is created in the folder.
TEST(Database, AFolderIsRefusedAsTheDatabasePath) {
  const std::string dir = TempDir("db_folder");
  for (bool read_only : {false, true}) {
    auto db = Database::Open(dir, Database::OpenOptions{read_only, 100});
    ASSERT_FALSE(db.ok());
    EXPECT_EQ(db.status().code(), Code::kInvalidArgument);
    EXPECT_NE(db.status().message().find("database path '" + dir + "' is a directory"), std::string::npos)
        << db.status().message();
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir));
}

}  // namespace
}  // namespace flashtune
