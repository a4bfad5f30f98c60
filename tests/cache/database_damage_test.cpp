// A database damaged inside (its SQLite header intact, pages overwritten) is refused by every
// reader and writer, left byte for byte as it was, and reported plainly by `db check`.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "flashtune/database.h"
#include "flashtune/flashtune.h"
#include "flashtune/runtime.h"
#include "tests/runtime/tuned_db.h"
#include "tests/support/replay_fixture.h"

namespace flashtune {
namespace {

using namespace flashtune::testing;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Overwrites the middle half of the file, whole pages, page 1 (the header and the schema) kept.
void Damage(const std::string& path) {
  const auto size = int64_t(std::filesystem::file_size(path));
  constexpr int64_t kPage = 4096;
  const int64_t from = std::max(kPage, size / 4 / kPage * kPage), to = size * 3 / 4 / kPage * kPage;
  ASSERT_GT(to, from) << "database too small to damage: " << size << " bytes";
  std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
  f.seekp(from);
  const std::string garbage(size_t(to - from), '\xa5');
  f.write(garbage.data(), std::streamsize(garbage.size()));
}

struct Damaged {
  std::string dir, path, bytes;
};

Damaged MakeDamaged(const std::string& name) {
  Damaged d;
  d.dir = TempDir(name);
  d.path = MakeTunedDatabase(d.dir);
  Damage(d.path);
  d.bytes = ReadAll(d.path);
  return d;
}

TEST(DatabaseDamage, OpenRefusesADamagedFileReadingOrWriting) {
  const Damaged d = MakeDamaged("db_damage_open");
  for (bool read_only : {true, false}) {
    Database::OpenOptions options;
    options.read_only = read_only;
    auto db = Database::Open(d.path, options);
    ASSERT_FALSE(db.ok()) << "read_only " << read_only;
    EXPECT_EQ(db.status().code(), Code::kCorrupt) << db.status().ToString();
    EXPECT_NE(db.status().message().find("'" + d.path + "' is damaged"), std::string::npos) << db.status().ToString();
  }
  // Runtime::Open and ft_runtime_open refuse it too, naming the file.
  RuntimeOptions options;
  options.db_path = d.path;
  auto runtime = Runtime::Open(options);
  ASSERT_FALSE(runtime.ok());
  EXPECT_NE(runtime.status().message().find(d.path), std::string::npos) << runtime.status().ToString();
  ft_runtime* handle = nullptr;
  EXPECT_NE(ft_runtime_open(d.path.c_str(), &handle), FT_OK);
  EXPECT_EQ(handle, nullptr);
  EXPECT_NE(std::string(ft_last_error()).find("is damaged"), std::string::npos) << ft_last_error();
  EXPECT_EQ(ReadAll(d.path), d.bytes);
  // A report on it is still possible: check_integrity off, then Check says it is damaged.
  Database::OpenOptions report;
  report.read_only = true;
  report.check_integrity = false;
  auto db = Database::Open(d.path, report);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  auto check = (*db)->Check(CurrentToolchain());
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  EXPECT_FALSE(check->integrity_ok);
  EXPECT_NE(check->integrity_message, "ok");
}

TEST(DatabaseDamage, CliRefusesToTuneIntoItAndCheckSaysDamaged) {
  const Damaged d = MakeDamaged("db_damage_cli");
  const std::string replay = d.dir + "/rows.csv";
  std::ofstream(replay) << ReplayCsv(TunedRows());
  const std::string out = d.dir + "/out.txt";
  auto run = [&](const std::string& args) {
    return RunShell("'" FLASHTUNE_CLI_PATH "' " + args + " > '" + out + "' 2>&1");
  };
  const Problem p = TunedProblems()[0];
  EXPECT_EQ(run("tune --replay '" + replay + "' --db '" + d.path + "' --dtypes bf16 --head-dims 128 --causal 0 "
                "--seqlens-q " + std::to_string(p.seqlen_q) + " --retune"),
            1);
  EXPECT_NE(ReadAll(out).find("'" + d.path + "' is damaged"), std::string::npos) << ReadAll(out);
  EXPECT_EQ(ReadAll(d.path), d.bytes);

  EXPECT_EQ(run("db check --db '" + d.path + "'"), 1);
  const std::string check = ReadAll(out);
  EXPECT_NE(check.find("integrity: DAMAGED"), std::string::npos) << check;
  EXPECT_NE(check.find("database '" + d.path + "' is damaged"), std::string::npos) << check;
  EXPECT_EQ(check.find("trials:"), std::string::npos) << check;  // no counts read from a damaged file

  for (const std::string& reader : {std::string("db list"), std::string("db export --format csv")}) {
    EXPECT_EQ(run(reader + " --db '" + d.path + "'"), 1) << reader;
    EXPECT_NE(ReadAll(out).find("'" + d.path + "' is damaged"), std::string::npos) << ReadAll(out);
  }
  EXPECT_EQ(ReadAll(d.path), d.bytes);
}

// Every SQLite error names the file, and quotes no more than the start of its statement.
TEST(DatabaseDamage, SqliteErrorsNameTheFile) {
  const std::string dir = TempDir("db_damage_errors");
  auto db = Database::Open(dir + "/t.db");
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  // A trial pointing at a device row that does not exist breaks a foreign key: an SQLite error.
  TrialRecord t;
  t.problem = TunedProblems()[0];
  t.variant = *Variant::FromUri("fa2_fwd_bf16_d128_br128_bc64_w4_s2_full");
  t.median_us = 10;
  auto id = (*db)->RecordTrial(999, 999, t);
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.status().message().find(dir + "/t.db"), std::string::npos) << id.status().ToString();
  EXPECT_LT(id.status().message().size(), 300u) << id.status().ToString();
}

}  // namespace
}  // namespace flashtune
