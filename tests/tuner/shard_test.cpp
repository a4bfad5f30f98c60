// Sharding a problem set over machines: the parts, and N shards merged against one run, with
// replayed timings (one shard dies midway and resumes).
#include "flashtune/shard.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <map>
#include <set>
#include <string>

#include "flashtune/database.h"
#include "flashtune/space.h"
#include "flashtune/tuner.h"
#include "tests/support/replay_fixture.h"

namespace flashtune {
namespace {

using namespace flashtune::testing;

TEST(Shard, ParseAcceptsKOfNOnly) {
  auto s = ParseShard("2/8");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->index, 2);
  EXPECT_EQ(s->count, 8);
  for (const char* bad : {"0/3", "4/3", "3", "1/0", "a/3", "1/3x", "-1/3", "1/10001", ""}) {
    auto r = ParseShard(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_NE(r.status().message().find("--shard '" + std::string(bad) + "': allowed K/N"), std::string::npos);
  }
}

// The parts cover the set once, keep its order, and never split a bucket (exhaustive) or a
// class (budgeted); the same list always gives the same parts.
TEST(Shard, PartsCoverTheSetOnceAndKeepUnitsWhole) {
  ProblemSetOptions o;
  o.head_dims = {64, 96, 128};
  o.seqlens = {512, 1000, 1024, 4096};  // 1000 and 1024 share a bucket
  auto set = MakeProblemSet(o);
  ASSERT_TRUE(set.ok());
  for (const char* strategy : {"exhaustive", "budgeted"}) {
    const int n = 5;
    std::map<std::string, int> part_of_unit;
    size_t total = 0;
    for (int k = 1; k <= n; ++k) {
      auto part = SelectShard(*set, Shard{k, n}, strategy);
      ASSERT_TRUE(part.ok());
      EXPECT_EQ(SelectShard(*set, Shard{k, n}, strategy)->size(), part->size());
      EXPECT_FALSE(part->empty()) << strategy << " part " << k;
      total += part->size();
      size_t last = 0;
      for (const Problem& p : *part) {
        size_t at = std::find(set->begin(), set->end(), p) - set->begin();
        EXPECT_GE(at, last) << "order kept";
        last = at;
        // budgeted: a class with both 16-bit types (a search starts from its sibling type's results)
        Problem folded = p;
        folded.dtype = DType::kBF16;
        const std::string unit = std::string(strategy) == "budgeted" ? ClassOf(folded).ToString() : BucketString(BucketOf(p));
        auto [it, fresh] = part_of_unit.emplace(unit, k);
        EXPECT_EQ(it->second, k) << unit << " split over parts";
      }
    }
    EXPECT_EQ(total, set->size());
  }
  auto all = SelectShard(*set, Shard{1, 1}, "exhaustive");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, *set);
  EXPECT_EQ(SelectShard(*set, Shard{1, 1}, "random").status().code(), Code::kInvalidArgument);
  // 12 classes, 6 once bf16 and fp16 go together: parts 1 to 6, each with both types.
  auto sixth = SelectShard(*set, Shard{6, 100}, "budgeted");
  ASSERT_FALSE(sixth->empty());
  EXPECT_TRUE(std::any_of(sixth->begin(), sixth->end(), [](const Problem& p) { return p.dtype == DType::kBF16; }));
  EXPECT_TRUE(std::any_of(sixth->begin(), sixth->end(), [](const Problem& p) { return p.dtype == DType::kF16; }));
  EXPECT_TRUE(SelectShard(*set, Shard{7, 100}, "budgeted")->empty());
}

std::map<std::string, std::string> Winners(const std::string& path) {
  std::map<std::string, std::string> out;
  auto db = Database::Open(path);
  EXPECT_TRUE(db.ok()) << db.status().ToString();
  auto winners = (*db)->ListWinners();
  EXPECT_TRUE(winners.ok());
  for (const WinnerRow& w : *winners) out[BucketString(w.bucket)] = w.variant_uri;
  return out;
}

int64_t SearchTrials(const std::string& path) {
  sqlite3* raw = nullptr;
  sqlite3_stmt* st = nullptr;
  int64_t n = -1;
  if (sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK &&
      sqlite3_prepare_v2(raw, "SELECT count(*) FROM trials WHERE phase = 'search'", -1, &st, nullptr) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(raw);
  return n;
}

// Tunes `problems` over the candidates recorded in `rows`, measured from `measured` (the same
// rows, or fewer: a measurer that fails partway).
Result<TuneSummary> TuneFrom(const std::string& db, const std::vector<Problem>& problems,
                             const std::vector<RecordedRow>& rows, const std::string& strategy,
                             const std::vector<RecordedRow>* measured = nullptr) {
  auto space = ReplayMeasurer::FromText(ReplayCsv(rows), "rows", {});
  if (!space.ok()) return space.status();
  std::vector<std::unique_ptr<Measurer>> ms;
  auto m = ReplayMeasurer::FromText(ReplayCsv(measured ? *measured : rows), "rows", {});
  ms.push_back(std::move(*m));
  TuneOptions o = ReplayTuneOptions(db, problems, space->get());
  o.strategy = strategy;
  return Tune(o, std::move(ms));
}

// N shards, one of which dies midway and resumes, merged in any order and twice, give the
// winners of one run over the whole set.
TEST(Shard, MergedShardsGiveOneRunsWinnersEvenAfterAShardDiedMidway) {
  std::vector<RecordedRow> rows;
  const auto problems = SmallProblemSet();
  for (size_t i = 0; i < problems.size(); ++i) {
    auto r = SyntheticRows(problems[i], uint32_t(i + 1));
    rows.insert(rows.end(), r.begin(), r.end());
  }
  for (const char* strategy : {"exhaustive", "budgeted"}) {
    SCOPED_TRACE(strategy);
    const std::string dir = TempDir(std::string("shard_merge_") + strategy);
    auto one = TuneFrom(dir + "/one.db", problems, rows, strategy);
    ASSERT_TRUE(one.ok()) << one.status().ToString();
    ASSERT_EQ(one->errors, 0);
    const auto expected = Winners(dir + "/one.db");
    ASSERT_EQ(expected.size(), problems.size());

    const int n = 3;
    for (int k = 1; k <= n; ++k) {
      auto part = SelectShard(problems, Shard{k, n}, strategy);
      ASSERT_TRUE(part.ok());
      ASSERT_FALSE(part->empty());
      const std::string db = dir + "/shard" + std::to_string(k) + ".db";
      if (k == 2) {
        // The machine dies midway: its recording ends partway through its last problem, so the
        // measurer fails there and this device's run stops with that problem untuned.
        std::vector<RecordedRow> cut;
        const Problem& last = part->back();
        size_t kept_of_last = 0;
        for (const RecordedRow& r : rows)
          if (!(r.problem == last) || kept_of_last++ < 5) cut.push_back(r);
        auto died = TuneFrom(db, *part, rows, strategy, &cut);
        ASSERT_TRUE(died.ok()) << died.status().ToString();
        EXPECT_GT(died->errors, 0);
        EXPECT_EQ(Winners(db).count(BucketString(BucketOf(last))), 0u);
      }
      auto done = TuneFrom(db, *part, rows, strategy);
      ASSERT_TRUE(done.ok()) << done.status().ToString();
      EXPECT_EQ(done->errors, 0);
    }
    const std::string merged = dir + "/merged.db";
    {
      auto target = Database::Open(merged);
      ASSERT_TRUE(target.ok());
      for (int k : {3, 1, 2, 1}) {  // any order; merging a part twice adds nothing
        auto stats = (*target)->Merge(dir + "/shard" + std::to_string(k) + ".db");
        ASSERT_TRUE(stats.ok()) << stats.status().ToString();
      }
    }
    EXPECT_EQ(Winners(merged), expected);
    EXPECT_EQ(SearchTrials(merged), SearchTrials(dir + "/one.db"));
  }
}

}  // namespace
}  // namespace flashtune
