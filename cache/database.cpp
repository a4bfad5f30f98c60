// The SQLite tuning database; see include/flashtune/database.h. Opening, schema and
// migrations, and the rows the tuner and the runtime read and write; the admin half (export,
// merge, prune, check) is cache/database_admin.cpp. Over 600 lines because Open's refusals
// (read-only, immutable, damaged, foreign, future schema) need one place that sees them all.
#include "flashtune/database.h"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <cerrno>
#include <cstring>

#include <unistd.h>

#include "cache/sqlite_util.h"

namespace flashtune {

using detail::Exec;
using detail::SqliteError;
using detail::Stmt;
using detail::ToolchainText;
using detail::Transaction;

namespace {

constexpr const char* kNow = "strftime('%Y-%m-%dT%H:%M:%fZ','now')";

// Version 1: the first released schema. Fresh files are created as version 1 and migrated, so
// the migration path runs on every new database, not only on old files.
const char* kSchemaV1 = R"sql(
CREATE TABLE devices(
  id INTEGER PRIMARY KEY, name TEXT NOT NULL, uuid TEXT NOT NULL, cc_major INTEGER NOT NULL,
  cc_minor INTEGER NOT NULL, sm_count INTEGER NOT NULL, driver_version TEXT NOT NULL,
  UNIQUE(uuid, driver_version));
CREATE TABLE toolchains(
  id INTEGER PRIMARY KEY, nvrtc_version TEXT NOT NULL, generator_version TEXT NOT NULL,
  template_hash TEXT NOT NULL, UNIQUE(nvrtc_version, generator_version, template_hash));
CREATE TABLE problems(
  id INTEGER PRIMARY KEY, dtype TEXT NOT NULL, head_dim INTEGER NOT NULL, causal INTEGER NOT NULL,
  batch INTEGER NOT NULL, seqlen_q INTEGER NOT NULL, seqlen_k INTEGER NOT NULL,
  heads_q INTEGER NOT NULL, heads_kv INTEGER NOT NULL, bucket TEXT NOT NULL,
  q_bucket INTEGER NOT NULL, k_bucket INTEGER NOT NULL, bh_bucket INTEGER NOT NULL,
  UNIQUE(dtype, head_dim, causal, batch, seqlen_q, seqlen_k, heads_q, heads_kv));
CREATE TABLE variants(
  id INTEGER PRIMARY KEY, uri TEXT NOT NULL, params TEXT NOT NULL, source_hash TEXT NOT NULL,
  UNIQUE(uri, source_hash));
CREATE TABLE trials(
  id INTEGER PRIMARY KEY,
  device_id INTEGER NOT NULL REFERENCES devices(id),
  toolchain_id INTEGER NOT NULL REFERENCES toolchains(id),
  problem_id INTEGER NOT NULL REFERENCES problems(id),
  variant_id INTEGER NOT NULL REFERENCES variants(id),
  status TEXT NOT NULL, message TEXT NOT NULL DEFAULT '',
  median_us REAL, iqr_us REAL, tflops REAL, reps INTEGER NOT NULL DEFAULT 0,
  registers INTEGER NOT NULL DEFAULT 0, smem_bytes INTEGER NOT NULL DEFAULT 0,
  spill_bytes INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL);
CREATE INDEX trials_by_key ON trials(device_id, toolchain_id, problem_id);
CREATE TABLE winners(
  device_id INTEGER NOT NULL REFERENCES devices(id),
  toolchain_id INTEGER NOT NULL REFERENCES toolchains(id),
  bucket TEXT NOT NULL, dtype TEXT NOT NULL, head_dim INTEGER NOT NULL, causal INTEGER NOT NULL,
  q_bucket INTEGER NOT NULL, k_bucket INTEGER NOT NULL, bh_bucket INTEGER NOT NULL,
  problem_id INTEGER NOT NULL REFERENCES problems(id),
  variant_id INTEGER NOT NULL REFERENCES variants(id),
  median_us REAL NOT NULL, tflops REAL NOT NULL, updated_at TEXT NOT NULL,
  PRIMARY KEY(device_id, toolchain_id, bucket));
CREATE TABLE cubins(
  source_hash TEXT NOT NULL, arch TEXT NOT NULL, options TEXT NOT NULL, nvrtc_version TEXT NOT NULL,
  image BLOB NOT NULL, registers INTEGER NOT NULL, smem_bytes INTEGER NOT NULL,
  spill_bytes INTEGER NOT NULL, log TEXT NOT NULL, created_at TEXT NOT NULL,
  PRIMARY KEY(source_hash, arch, options, nvrtc_version));
PRAGMA user_version = 1;
)sql";

// Version 2 adds: compile time, measurement phase (search / retime) and run id on trials, and
// the tuning_runs table (how long tuning took).
const char* kMigrate1To2 = R"sql(
ALTER TABLE trials ADD COLUMN compile_ms REAL NOT NULL DEFAULT 0;
ALTER TABLE trials ADD COLUMN phase TEXT NOT NULL DEFAULT 'search';
ALTER TABLE trials ADD COLUMN run_id INTEGER;
CREATE TABLE tuning_runs(
  id INTEGER PRIMARY KEY, device_id INTEGER, toolchain_id INTEGER, strategy TEXT NOT NULL,
  started_at TEXT NOT NULL, ended_at TEXT, problems INTEGER NOT NULL DEFAULT 0,
  measured INTEGER NOT NULL DEFAULT 0, failed INTEGER NOT NULL DEFAULT 0,
  skipped INTEGER NOT NULL DEFAULT 0, winners INTEGER NOT NULL DEFAULT 0);
PRAGMA user_version = 2;
)sql";

// Version 3 adds the kernel family of every variant (the first field of its URI); every variant
// stored before version 3 is an fa2_fwd one, the only family there was.
const char* kMigrate2To3 = R"sql(
ALTER TABLE variants ADD COLUMN family TEXT NOT NULL DEFAULT 'fa2_fwd';
PRAGMA user_version = 3;
)sql";

// Version 4 adds the layout of every problem (dense or paged): a paged problem is timed on a
// page table and has a winner of its own, so it is a row of its own, and the natural key gains
// the layout. SQLite cannot change a UNIQUE constraint in place: the table is rebuilt with its
// ids kept (trials and winners refer to them), foreign keys off meanwhile (the caller). Every
// problem stored before version 4 was timed on dense tensors.
const char* kMigrate3To4 = R"sql(
CREATE TABLE problems_v4(
  id INTEGER PRIMARY KEY, dtype TEXT NOT NULL, head_dim INTEGER NOT NULL, causal INTEGER NOT NULL,
  batch INTEGER NOT NULL, seqlen_q INTEGER NOT NULL, seqlen_k INTEGER NOT NULL,
  heads_q INTEGER NOT NULL, heads_kv INTEGER NOT NULL, bucket TEXT NOT NULL,
  q_bucket INTEGER NOT NULL, k_bucket INTEGER NOT NULL, bh_bucket INTEGER NOT NULL,
  layout TEXT NOT NULL DEFAULT 'dense',
  UNIQUE(dtype, head_dim, causal, batch, seqlen_q, seqlen_k, heads_q, heads_kv, layout));
INSERT INTO problems_v4(id, dtype, head_dim, causal, batch, seqlen_q, seqlen_k, heads_q, heads_kv, bucket, q_bucket,
                        k_bucket, bh_bucket)
  SELECT id, dtype, head_dim, causal, batch, seqlen_q, seqlen_k, heads_q, heads_kv, bucket, q_bucket, k_bucket,
         bh_bucket FROM problems;
DROP TABLE problems;
ALTER TABLE problems_v4 RENAME TO problems;
PRAGMA user_version = 4;
)sql";

// What a reader of a file older than version 4 sees as `problems` (readers never migrate): every row of
// such a file is dense. A temp view shadows main.problems for every unqualified query.
const char* kDenseLayoutView =
    "CREATE TEMP VIEW problems AS SELECT *, 'dense' AS layout FROM main.problems";

Code CodeFromName(std::string_view name) {
  for (int c = 0; c <= int(Code::kInternal); ++c)
    if (CodeName(Code(c)) == name) return Code(c);
  return Code::kInternal;
}

// {"family":"fa2_fwd","dtype":"bf16","head_dim":128,"causal":false,"br":128,...}: the URI's
// fields as JSON, for people and tools reading the database. Names are [a-z0-9_], no escaping.
std::string VariantParams(const Variant& v) {
  std::string s = "{\"family\":\"" + v.family + "\",\"dtype\":\"" + std::string(DTypeName(v.dtype)) +
                  "\",\"head_dim\":" + std::to_string(v.head_dim) + ",\"causal\":" + (v.causal ? "true" : "false");
  for (const VariantParam& p : v.params) s += ",\"" + p.name + "\":" + std::to_string(p.value);
  return s + "}";
}

// problems columns p.dtype .. p.heads_kv, p.layout starting at `c`.
Problem ReadProblem(const Stmt& s, int c) {
  Problem p;
  auto dt = ParseDType(s.Text(c));
  p.dtype = dt.ok() ? *dt : DType::kBF16;
  p.head_dim = int(s.Int(c + 1));
  p.causal = s.Int(c + 2) != 0;
  p.batch = s.Int(c + 3);
  p.seqlen_q = s.Int(c + 4);
  p.seqlen_k = s.Int(c + 5);
  p.heads_q = s.Int(c + 6);
  p.heads_kv = s.Int(c + 7);
  auto layout = ParseLayout(s.Text(c + 8));
  p.layout = layout.ok() ? *layout : Layout::kDense;
  return p;
}

constexpr const char* kProblemCols =
    "p.dtype, p.head_dim, p.causal, p.batch, p.seqlen_q, p.seqlen_k, p.heads_q, p.heads_kv, p.layout";

// The id in the first row of `q`; `missing` when there is no row, the SQLite error otherwise.
Result<int64_t> IdFrom(Stmt& q, Status missing) {
  Status st;
  if (q.Step(&st)) return q.Int(0);
  if (!st.ok()) return st;
  return missing;
}

// The row ids of problems, devices and toolchains, looked up by their natural keys: one query
// each, shared by the upserts and the Find* lookups.
Result<int64_t> FindProblemIn(sqlite3* db, const Problem& p, Status missing) {
  Stmt q(db,
         "SELECT id FROM problems WHERE dtype=? AND head_dim=? AND causal=? AND batch=? AND seqlen_q=?"
         " AND seqlen_k=? AND heads_q=? AND heads_kv=? AND layout=?");
  q.Bind(1, std::string(DTypeName(p.dtype))).Bind(2, p.head_dim).Bind(3, p.causal).Bind(4, p.batch)
      .Bind(5, p.seqlen_q).Bind(6, p.seqlen_k).Bind(7, p.heads_q).Bind(8, p.heads_kv)
      .Bind(9, std::string(LayoutName(p.layout)));
  return IdFrom(q, std::move(missing));
}

Result<int64_t> FindDeviceIn(sqlite3* db, const DeviceRecord& d, Status missing) {
  Stmt q(db, "SELECT id FROM devices WHERE uuid=? AND driver_version=?");
  q.Bind(1, d.uuid).Bind(2, d.driver_version);
  return IdFrom(q, std::move(missing));
}

Result<int64_t> FindToolchainIn(sqlite3* db, const ToolchainInfo& t, Status missing) {
  Stmt q(db, "SELECT id FROM toolchains WHERE nvrtc_version=? AND generator_version=? AND template_hash=?");
  q.Bind(1, t.nvrtc_version).Bind(2, t.generator_version).Bind(3, t.template_hash);
  return IdFrom(q, std::move(missing));
}

Result<int64_t> UpsertProblemIn(sqlite3* db, const Problem& p) {
  Status s = ValidateProblem(p);
  if (!s.ok()) return s;
  if (p.layout == Layout::kVarlen)  // varlen calls share the dense buckets (problem_set.h)
    return Status(Code::kInvalidArgument, "problem " + p.ToString() +
                                              ": layout varlen is not stored; allowed: dense, paged (a varlen call is "
                                              "tuned as its dense shape)");
  BucketKey b = BucketOf(p);
  Stmt ins(db,
           "INSERT INTO problems(dtype, head_dim, causal, batch, seqlen_q, seqlen_k, heads_q, heads_kv,"
           " bucket, q_bucket, k_bucket, bh_bucket, layout) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING");
  ins.Bind(1, std::string(DTypeName(p.dtype))).Bind(2, p.head_dim).Bind(3, p.causal).Bind(4, p.batch)
      .Bind(5, p.seqlen_q).Bind(6, p.seqlen_k).Bind(7, p.heads_q).Bind(8, p.heads_kv)
      .Bind(9, BucketString(b)).Bind(10, b.seqlen_q_bucket).Bind(11, b.seqlen_k_bucket)
      .Bind(12, b.batch_heads_bucket).Bind(13, std::string(LayoutName(p.layout)));
  FT_RETURN_IF_ERROR(ins.Run());
  return FindProblemIn(db, p, Status(Code::kInternal, "problem row vanished after insert"));
}

Result<int64_t> UpsertVariantIn(sqlite3* db, const Variant& v, const std::string& source_hash) {
  std::string uri = v.Uri();
  Stmt ins(db, "INSERT INTO variants(uri, params, source_hash, family) VALUES(?,?,?,?) ON CONFLICT DO NOTHING");
  ins.Bind(1, uri).Bind(2, VariantParams(v)).Bind(3, source_hash).Bind(4, v.family);
  FT_RETURN_IF_ERROR(ins.Run());
  Stmt q(db, "SELECT id FROM variants WHERE uri=? AND source_hash=?");
  q.Bind(1, uri).Bind(2, source_hash);
  return IdFrom(q, Status(Code::kInternal, "variant row vanished after insert"));
}

}  // namespace

std::string DefaultDatabasePath() {
  const char* env = std::getenv("FLASHTUNE_DB");
  return env && *env ? std::string(env) : std::string("./flashtune.db");
}

namespace {

bool CanWrite(const std::string& path) { return ::access(path.c_str(), W_OK) == 0; }
// Why `path` cannot be written ("Permission denied", "Read-only file system").
std::string WhyNotWritable(const std::string& path) {
  return ::access(path.c_str(), W_OK) == 0 ? "writable" : std::strerror(errno);
}

std::string DirectoryOf(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

int64_t SizeOf(const std::string& path) {
  std::error_code ec;
  const auto n = std::filesystem::file_size(path, ec);
  return ec ? -1 : int64_t(n);
}

// `path` as an SQLite URI (opened with SQLITE_OPEN_URI): '%', '?' and '#' escaped.
std::string FileUri(const std::string& path, const std::string& query) {
  std::string uri = path.rfind('/', 0) == 0 ? "file://" : "file:";
  for (char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", static_cast<unsigned char>(c));
      uri += buf;
    } else {
      uri += c;
    }
  }
  return query.empty() ? uri : uri + "?" + query;
}

}  // namespace

Result<std::unique_ptr<Database>> Database::Open(const std::string& path, OpenOptions options) {
  if (path.empty()) return Status(Code::kInvalidArgument, "database path is empty");
  std::error_code ec;
  const bool exists = std::filesystem::exists(path, ec);
  if (options.read_only && !exists) return Status(Code::kNotFound, "database '" + path + "' does not exist");
  if (exists && std::filesystem::is_directory(path, ec))
    return Status(Code::kInvalidArgument, "database path '" + path + "' is a directory");
  const std::string dir = DirectoryOf(path);
  // A writer that cannot write finds out here, before it starts work, not after a run. SQLite
  // keeps its -wal and -shm files beside the database, so the directory must be writable too.
  if (!options.read_only) {
    if (exists && !CanWrite(path))
      return Status(Code::kIoError, "database '" + path + "' is read-only (" + WhyNotWritable(path) +
                                        "); this command writes to it: make it writable, or use another --db");
    if (!CanWrite(dir))
      return Status(Code::kIoError, "database '" + path + "' cannot be " + (exists ? "written" : "created") +
                                        ": its directory '" + dir + "' is not writable (" + WhyNotWritable(dir) +
                                        "), and SQLite keeps its -wal and -shm files there");
  }
  // A reader that cannot write the file or its directory cannot create the -wal/-shm files of a
  // WAL database either: it opens the file immutable (nothing changes it while it is read: true
  // of a database shipped read-only). A non-empty -wal holds committed rows the file lacks, which
  // immutable would not see: then the reader opens it normally and, should SQLite not manage,
  // says how to fold the -wal in.
  const bool reader_can_write = CanWrite(path) && CanWrite(dir);
  const bool wal_pending = SizeOf(path + "-wal") > 0;
  const bool immutable = options.read_only && !reader_can_write && !wal_pending;
  int flags = SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX;
  if (!options.read_only)
    flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  else if (reader_can_write)
    flags |= SQLITE_OPEN_READWRITE;  // + query_only: the last reader to close removes -wal and -shm
  else
    flags |= SQLITE_OPEN_READONLY;
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(FileUri(path, immutable ? "immutable=1" : "").c_str(), &raw, flags, nullptr);
  std::unique_ptr<Database> db(new Database(path, raw));
  if (rc != SQLITE_OK) return SqliteError(raw, "open");
  // Until the file is accepted, closing must not checkpoint rows of a -wal found beside it into
  // it: a refused file is left as it was found. (With no such rows, the checkpoint on close
  // writes nothing to the file and removes the -wal and -shm this open created.)
  if (wal_pending) sqlite3_db_config(raw, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  sqlite3_busy_timeout(raw, options.busy_timeout_ms);
  sqlite3_extended_result_codes(raw, 1);
  if (!options.read_only && sqlite3_db_readonly(raw, "main") == 1)
    return Status(Code::kIoError, "database '" + path + "' could only be opened read-only; this command writes to it");
  if (options.read_only && reader_can_write) FT_RETURN_IF_ERROR(Exec(raw, "PRAGMA query_only = ON"));

  // Read before any write: a file that is not SQLite fails here, untouched.
  auto corrupt = [&](const std::string& why) {
    return Status(Code::kCorrupt, "database '" + path + "' is not a flashtune database: " + why +
                                      " (the file was left unchanged)");
  };
  int version = 0;
  int64_t tables = 0;
  {
    Stmt v(raw, "PRAGMA user_version");
    Status st;
    if (!v.Step(&st)) {
      if (st.code() == Code::kCorrupt) return corrupt(st.message());
      if (options.read_only && !reader_can_write && wal_pending)
        return Status(st.code(), st.message() + "; '" + path + "-wal' holds rows not yet in the file and this reader "
                                 "cannot write beside it: open the database once where it is writable (e.g. "
                                 "`flashtune db check --db FILE` as its owner), which folds them in");
      return st;
    }
    version = int(v.Int(0));
    Stmt t(raw, "SELECT count(*) FROM sqlite_schema WHERE type='table'");
    if (!t.Step(&st)) return st.code() == Code::kCorrupt ? corrupt(st.message()) : st;
    tables = t.Int(0);
  }
  if (version == 0 && tables > 0) return corrupt("it has tables but no flashtune schema version");
  if (version > kSchemaVersion)
    return Status(Code::kUnsupported, "database '" + path + "' has schema version " + std::to_string(version) +
                                          "; this flashtune knows up to " + std::to_string(kSchemaVersion));
  // Damage inside a file whose header is intact shows only when a damaged page is read: a
  // writer would add rows to it, and a reader serve winners from it, until then. quick_check
  // reads every page (milliseconds per MB) before anything is read or written.
  if (options.check_integrity && version > 0) {
    Stmt q(raw, "PRAGMA quick_check(3)");
    Status st;
    std::string complaints;
    while (q.Step(&st)) {
      const std::string line = q.Text(0);
      if (line == "ok") break;
      complaints += (complaints.empty() ? "" : "; ") + line;
    }
    if (!st.ok()) complaints = sqlite3_errmsg(raw);
    if (!complaints.empty())
      return Status(Code::kCorrupt, "database '" + path + "' is damaged: " + complaints +
                                        " (the file was left unchanged; `flashtune db check --db " + path +
                                        "` reports the damage: restore a copy, or tune into a new file)");
  }
  if (options.read_only) {
    // An empty SQLite file is what a reader sees while a tuner is creating the schema: not
    // corrupt, just nothing to read yet.
    if (version == 0)
      return Status(Code::kNotFound, "database '" + path + "' holds no flashtune schema yet (empty, or being created)");
    FT_RETURN_IF_ERROR(Exec(raw, "PRAGMA foreign_keys = ON"));
    sqlite3_db_config(raw, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, nullptr);
    if (version < 4) {  // a temp view writes nothing to the file, but query_only refuses it too
      if (reader_can_write) FT_RETURN_IF_ERROR(Exec(raw, "PRAGMA query_only = OFF"));
      FT_RETURN_IF_ERROR(Exec(raw, kDenseLayoutView));
      if (reader_can_write) FT_RETURN_IF_ERROR(Exec(raw, "PRAGMA query_only = ON"));
    }
    return db;
  }
  // WAL lets readers proceed while a tuner writes; it persists in the file.
  // Switching to WAL needs a moment of exclusive access and does not wait on busy_timeout: when
  // another process is opening the same new file, retry until the timeout.
  for (int waited = 0;; waited += 10) {
    Status wal = Exec(raw, "PRAGMA journal_mode = WAL");
    if (wal.ok()) break;
    int rc = sqlite3_errcode(raw) & 0xff;
    if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || waited >= options.busy_timeout_ms) return wal;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  sqlite3_db_config(raw, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, nullptr);
  FT_RETURN_IF_ERROR(Exec(raw, "PRAGMA foreign_keys = ON"));
  // NORMAL in WAL mode: a killed process loses nothing committed; only a power cut may lose the
  // last transactions. FULL would fsync every trial.
  FT_RETURN_IF_ERROR(Exec(raw, "PRAGMA synchronous = NORMAL"));
  if (version < kSchemaVersion) {
    // Version 4 rebuilds a table that others refer to: foreign keys off until it is in place
    // (the pragma is a no-op inside a transaction), checked before the commit.
    FT_RETURN_IF_ERROR(Exec(raw, "PRAGMA foreign_keys = OFF"));
    Transaction tx(raw);
    FT_RETURN_IF_ERROR(tx.status());
    {  // Re-read under the write lock: another process may have migrated meanwhile. (Scoped: a
       // statement left open blocks version 4's DROP TABLE.)
      Stmt v(raw, "PRAGMA user_version");
      Status st;
      if (!v.Step(&st)) return st;
      version = int(v.Int(0));
    }
    if (version == 0) {
      FT_RETURN_IF_ERROR(Exec(raw, kSchemaV1));
      version = 1;
    }
    if (version == 1) {
      Status m = Exec(raw, kMigrate1To2);
      if (!m.ok()) return Status(m.code(), "migrating '" + path + "' from schema 1 to 2: " + m.message());
      version = 2;
    }
    if (version == 2) {
      Status m = Exec(raw, kMigrate2To3);
      if (!m.ok()) return Status(m.code(), "migrating '" + path + "' from schema 2 to 3: " + m.message());
      version = 3;
    }
    if (version == 3) {
      Status m = Exec(raw, kMigrate3To4);
      if (!m.ok()) return Status(m.code(), "migrating '" + path + "' from schema 3 to 4: " + m.message());
      Stmt fk(raw, "PRAGMA foreign_key_check");
      Status st;
      if (fk.Step(&st) || !st.ok())
        return Status(Code::kCorrupt, "migrating '" + path + "' from schema 3 to 4: " +
                                          (st.ok() ? "a row of table " + fk.Text(0) + " refers to a missing row"
                                                   : st.message()) +
                                          " (the file was left unchanged)");
      version = 4;
    }
    FT_RETURN_IF_ERROR(tx.Commit());
    FT_RETURN_IF_ERROR(Exec(raw, "PRAGMA foreign_keys = ON"));
  }
  return db;
}

Database::~Database() {
  if (db_) sqlite3_close_v2(db_);
}

Result<int> Database::SchemaVersion() {
  Stmt v(db_, "PRAGMA user_version");
  Status st;
  if (v.Step(&st)) return int(v.Int(0));
  return st;
}

Result<int64_t> Database::UpsertDevice(const DeviceRecord& d) {
  if (d.uuid.empty()) return Status(Code::kInvalidArgument, "device uuid is empty");
  Transaction tx(db_);
  FT_RETURN_IF_ERROR(tx.status());
  Stmt ins(db_,
           "INSERT INTO devices(name, uuid, cc_major, cc_minor, sm_count, driver_version) VALUES(?,?,?,?,?,?)"
           " ON CONFLICT DO NOTHING");
  ins.Bind(1, d.name).Bind(2, d.uuid).Bind(3, d.cc_major).Bind(4, d.cc_minor).Bind(5, d.sm_count)
      .Bind(6, d.driver_version);
  FT_RETURN_IF_ERROR(ins.Run());
  auto id = FindDeviceIn(db_, d, Status(Code::kInternal, "device row vanished"));
  if (!id.ok()) return id;
  FT_RETURN_IF_ERROR(tx.Commit());
  return id;
}

Result<int64_t> Database::UpsertToolchain(const ToolchainInfo& t) {
  Transaction tx(db_);
  FT_RETURN_IF_ERROR(tx.status());
  Stmt ins(db_,
           "INSERT INTO toolchains(nvrtc_version, generator_version, template_hash) VALUES(?,?,?)"
           " ON CONFLICT DO NOTHING");
  ins.Bind(1, t.nvrtc_version).Bind(2, t.generator_version).Bind(3, t.template_hash);
  FT_RETURN_IF_ERROR(ins.Run());
  auto id = FindToolchainIn(db_, t, Status(Code::kInternal, "toolchain row vanished"));
  if (!id.ok()) return id;
  FT_RETURN_IF_ERROR(tx.Commit());
  return id;
}

Result<int64_t> Database::UpsertProblem(const Problem& p) {
  Transaction tx(db_);
  FT_RETURN_IF_ERROR(tx.status());
  auto id = UpsertProblemIn(db_, p);
  if (!id.ok()) return id;
  FT_RETURN_IF_ERROR(tx.Commit());
  return id;
}

Result<int64_t> Database::FindProblem(const Problem& p) {
  return FindProblemIn(db_, p, Status(Code::kNotFound, "problem " + p.ToString() + " is not in '" + path_ + "'"));
}

Result<int64_t> Database::FindDevice(const DeviceRecord& d) {
  return FindDeviceIn(db_, d,
                      Status(Code::kNotFound, "device " + d.uuid + " (driver " + d.driver_version + ") is not in '" +
                                                  path_ + "'"));
}

Result<int64_t> Database::FindToolchain(const ToolchainInfo& t) {
  return FindToolchainIn(db_, t, Status(Code::kNotFound, "toolchain is not in '" + path_ + "'"));
}

Result<int64_t> Database::RecordTrial(int64_t device_id, int64_t toolchain_id, const TrialRecord& t) {
  if (t.phase != "search" && t.phase != "retime")
    return Status(Code::kInvalidArgument, "trial phase '" + t.phase + "': allowed search, retime");
  Transaction tx(db_);
  FT_RETURN_IF_ERROR(tx.status());
  auto pid = UpsertProblemIn(db_, t.problem);
  if (!pid.ok()) return pid.status();
  auto vid = UpsertVariantIn(db_, t.variant, t.source_hash);
  if (!vid.ok()) return vid.status();
  double tflops = t.tflops;
  if (t.status == Code::kOk && tflops == 0 && t.median_us > 0) tflops = t.problem.Flops() / (t.median_us * 1e6);
  Stmt ins(db_,
           (std::string("INSERT INTO trials(device_id, toolchain_id, problem_id, variant_id, status, message,"
                        " median_us, iqr_us, tflops, reps, registers, smem_bytes, spill_bytes, compile_ms,"
                        " phase, run_id, created_at) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,") +
            kNow + ")").c_str());
  ins.Bind(1, device_id).Bind(2, toolchain_id).Bind(3, *pid).Bind(4, *vid)
      .Bind(5, std::string(CodeName(t.status))).Bind(6, t.message).Bind(7, t.median_us).Bind(8, t.iqr_us)
      .Bind(9, t.status == Code::kOk ? tflops : 0.0).Bind(10, t.reps).Bind(11, t.registers)
      .Bind(12, t.smem_bytes).Bind(13, t.spill_bytes).Bind(14, t.compile_ms).Bind(15, t.phase);
  if (t.run_id > 0) ins.Bind(16, t.run_id);
  FT_RETURN_IF_ERROR(ins.Run());
  int64_t id = sqlite3_last_insert_rowid(db_);
  FT_RETURN_IF_ERROR(tx.Commit());
  return id;
}

Result<std::vector<TrialRow>> Database::TrialsForProblem(int64_t problem_id, int64_t device_id,
                                                         int64_t toolchain_id) {
  Stmt q(db_, (std::string("SELECT t.id, t.problem_id, t.device_id, t.toolchain_id, d.name, v.uri, v.source_hash,"
                           " t.status, t.message, t.median_us, t.iqr_us, t.tflops, t.reps, t.registers,"
                           " t.smem_bytes, t.spill_bytes, t.compile_ms, t.phase, coalesce(t.run_id, 0),"
                           " t.created_at, ") + kProblemCols +
                   " FROM trials t JOIN variants v ON v.id = t.variant_id JOIN devices d ON d.id = t.device_id"
                   " JOIN problems p ON p.id = t.problem_id"
                   " WHERE t.problem_id = ?1 AND (?2 = 0 OR t.device_id = ?2) AND (?3 = 0 OR t.toolchain_id = ?3)"
                   " ORDER BY (t.status = 'ok') DESC, CASE WHEN t.status = 'ok' THEN t.median_us END ASC, t.id")
                      .c_str());
  q.Bind(1, problem_id).Bind(2, device_id).Bind(3, toolchain_id);
  std::vector<TrialRow> rows;
  Status st;
  while (q.Step(&st)) {
    TrialRow r;
    r.id = q.Int(0);
    r.problem_id = q.Int(1);
    r.device_id = q.Int(2);
    r.toolchain_id = q.Int(3);
    r.device_name = q.Text(4);
    r.variant_uri = q.Text(5);
    auto v = Variant::FromUri(r.variant_uri);
    if (v.ok()) r.trial.variant = *v;
    r.trial.source_hash = q.Text(6);
    r.status_name = q.Text(7);
    r.trial.status = CodeFromName(r.status_name);
    r.trial.message = q.Text(8);
    r.trial.median_us = q.Double(9);
    r.trial.iqr_us = q.Double(10);
    r.trial.tflops = q.Double(11);
    r.trial.reps = int(q.Int(12));
    r.trial.registers = int(q.Int(13));
    r.trial.smem_bytes = int(q.Int(14));
    r.trial.spill_bytes = int(q.Int(15));
    r.trial.compile_ms = q.Double(16);
    r.trial.phase = q.Text(17);
    r.trial.run_id = q.Int(18);
    r.created_at = q.Text(19);
    r.trial.problem = ReadProblem(q, 20);
    rows.push_back(std::move(r));
  }
  if (!st.ok()) return st;
  return rows;
}

Status Database::SetWinner(int64_t device_id, int64_t toolchain_id, const Problem& problem, const Variant& variant,
                           const std::string& source_hash, double median_us, double tflops) {
  if (!(median_us > 0)) return Status(Code::kInvalidArgument, "winner median_us must be > 0");
  Transaction tx(db_);
  FT_RETURN_IF_ERROR(tx.status());
  auto pid = UpsertProblemIn(db_, problem);
  if (!pid.ok()) return pid.status();
  auto vid = UpsertVariantIn(db_, variant, source_hash);
  if (!vid.ok()) return vid.status();
  // A winner must be backed by an ok trial of this device, toolchain, problem and variant.
  Stmt ok(db_, "SELECT count(*) FROM trials WHERE device_id=? AND toolchain_id=? AND problem_id=? AND variant_id=?"
               " AND status='ok'");
  ok.Bind(1, device_id).Bind(2, toolchain_id).Bind(3, *pid).Bind(4, *vid);
  Status st;
  if (!ok.Step(&st)) return st;
  if (ok.Int(0) == 0)
    return Status(Code::kInvalidArgument, "winner " + variant.Uri() + " has no ok trial for " + problem.ToString());
  BucketKey b = BucketOf(problem);
  Stmt ins(db_, (std::string("INSERT OR REPLACE INTO winners(device_id, toolchain_id, bucket, dtype, head_dim, causal,"
                             " q_bucket, k_bucket, bh_bucket, problem_id, variant_id, median_us, tflops, updated_at)"
                             " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,") + kNow + ")").c_str());
  ins.Bind(1, device_id).Bind(2, toolchain_id).Bind(3, BucketString(b)).Bind(4, std::string(DTypeName(b.dtype)))
      .Bind(5, b.head_dim).Bind(6, b.causal).Bind(7, b.seqlen_q_bucket).Bind(8, b.seqlen_k_bucket)
      .Bind(9, b.batch_heads_bucket).Bind(10, *pid).Bind(11, *vid).Bind(12, median_us).Bind(13, tflops);
  FT_RETURN_IF_ERROR(ins.Run());
  return tx.Commit();
}

namespace {

constexpr const char* kWinnerSelect =
    "SELECT w.device_id, w.toolchain_id, w.problem_id, w.bucket, v.uri, v.source_hash, w.median_us, w.tflops,"
    " w.updated_at, p.dtype, p.head_dim, p.causal, p.batch, p.seqlen_q, p.seqlen_k, p.heads_q, p.heads_kv,"
    " p.layout FROM winners w JOIN variants v ON v.id = w.variant_id JOIN problems p ON p.id = w.problem_id"
    " JOIN devices d ON d.id = w.device_id JOIN toolchains t ON t.id = w.toolchain_id ";

WinnerRow ReadWinner(const Stmt& q) {
  WinnerRow w;
  w.device_id = q.Int(0);
  w.toolchain_id = q.Int(1);
  w.problem_id = q.Int(2);
  auto b = ParseBucketKey(q.Text(3));
  if (b.ok()) w.bucket = *b;
  w.variant_uri = q.Text(4);
  auto v = Variant::FromUri(w.variant_uri);
  if (v.ok()) w.variant = *v;
  w.source_hash = q.Text(5);
  w.median_us = q.Double(6);
  w.tflops = q.Double(7);
  w.updated_at = q.Text(8);
  w.problem = ReadProblem(q, 9);
  w.problem.operation = w.bucket.operation;  // problems rows are shapes; the bucket says which pass
  return w;
}

// "w.device_id IN (...)" over the devices rows of `device`'s model: which GPUs count as one
// model is SameGpuModel's decision, not the SQL's. The ids are integers formatted here.
Result<std::string> SameModelDevices(Database& db, const DeviceRecord& device) {
  auto devices = db.ListDevices();
  if (!devices.ok()) return devices.status();
  std::string clause = "w.device_id IN (";
  bool first = true;
  for (const DeviceRow& d : *devices) {
    if (!SameGpuModel(d.device, device)) continue;
    if (!first) clause += ',';
    clause += std::to_string(d.id);
    first = false;
  }
  clause += ')';
  return clause;
}

}  // namespace

Result<std::optional<WinnerRow>> Database::FindWinner(const DeviceRecord& d, const ToolchainInfo& t, const BucketKey& b) {
  auto model = SameModelDevices(*this, d);
  if (!model.ok()) return model.status();
  Stmt q(db_, (std::string(kWinnerSelect) + "WHERE " + *model +
               " AND t.nvrtc_version=? AND t.generator_version=? AND t.template_hash=? AND w.bucket=?"
               " ORDER BY w.median_us LIMIT 1").c_str());
  q.Bind(1, t.nvrtc_version).Bind(2, t.generator_version).Bind(3, t.template_hash).Bind(4, BucketString(b));
  Status st;
  if (q.Step(&st)) return std::optional<WinnerRow>(ReadWinner(q));
  if (!st.ok()) return st;
  return std::optional<WinnerRow>();
}

Result<std::optional<WinnerRow>> Database::FindNearestWinner(const DeviceRecord& d, const ToolchainInfo& t,
                                                             const BucketKey& b) {
  auto model = SameModelDevices(*this, d);
  if (!model.ok()) return model.status();
  Stmt q(db_, (std::string(kWinnerSelect) + "WHERE " + *model +
               " AND t.nvrtc_version=? AND t.generator_version=? AND t.template_hash=?"
               " AND w.dtype=? AND w.head_dim=? AND w.causal=?").c_str());
  q.Bind(1, t.nvrtc_version).Bind(2, t.generator_version).Bind(3, t.template_hash)
      .Bind(4, std::string(DTypeName(b.dtype))).Bind(5, b.head_dim).Bind(6, b.causal);
  std::optional<WinnerRow> best;
  Status st;
  while (q.Step(&st)) {
    WinnerRow w = ReadWinner(q);
    w.distance = BucketDistance(b, w.bucket);
    if (w.distance < 0) continue;
    // Ties: the nearer GQA group, then the faster winner.
    const int gap = GroupGap(b, w.bucket), best_gap = best ? GroupGap(b, best->bucket) : 0;
    if (!best || w.distance < best->distance ||
        (w.distance == best->distance && (gap < best_gap || (gap == best_gap && w.median_us < best->median_us))))
      best = w;
  }
  if (!st.ok()) return st;
  return best;
}

Result<std::optional<std::string>> Database::StaleWinnerToolchain(const DeviceRecord& d, const ToolchainInfo& t,
                                                                  const BucketKey& b) {
  auto model = SameModelDevices(*this, d);
  if (!model.ok()) return model.status();
  Stmt q(db_, ("SELECT t.nvrtc_version, t.generator_version, t.template_hash FROM winners w"
               " JOIN devices d ON d.id = w.device_id JOIN toolchains t ON t.id = w.toolchain_id WHERE " +
               *model + " AND w.bucket=? AND NOT (t.nvrtc_version=? AND t.generator_version=? AND t.template_hash=?)"
               " ORDER BY w.updated_at DESC, w.toolchain_id DESC LIMIT 1").c_str());
  q.Bind(1, BucketString(b)).Bind(2, t.nvrtc_version).Bind(3, t.generator_version).Bind(4, t.template_hash);
  Status st;
  if (q.Step(&st)) return std::optional<std::string>(ToolchainText(q, 0));
  if (!st.ok()) return st;
  return std::optional<std::string>();
}

Result<std::vector<WinnerRow>> Database::ListWinners() {
  Stmt q(db_, (std::string(kWinnerSelect) + "ORDER BY w.bucket, w.device_id").c_str());
  std::vector<WinnerRow> out;
  Status st;
  while (q.Step(&st)) out.push_back(ReadWinner(q));
  if (!st.ok()) return st;
  return out;
}

Result<std::vector<ProblemRow>> Database::ListProblems() {
  Stmt q(db_, (std::string("SELECT p.id, p.bucket, ") + kProblemCols +
               ", (SELECT count(*) FROM trials t WHERE t.problem_id = p.id),"
               " (SELECT count(*) FROM trials t WHERE t.problem_id = p.id AND t.status = 'ok'),"
               " (SELECT v.uri FROM trials t JOIN variants v ON v.id = t.variant_id WHERE t.problem_id = p.id"
               "   AND t.status = 'ok' ORDER BY t.median_us LIMIT 1),"
               " (SELECT min(t.median_us) FROM trials t WHERE t.problem_id = p.id AND t.status = 'ok')"
               " FROM problems p ORDER BY p.id").c_str());
  std::vector<ProblemRow> out;
  Status st;
  while (q.Step(&st)) {
    ProblemRow r;
    r.id = q.Int(0);
    r.bucket = q.Text(1);
    r.problem = ReadProblem(q, 2);
    r.trials = q.Int(11);
    r.ok_trials = q.Int(12);
    r.best_variant = q.Text(13);
    r.best_median_us = q.Double(14);
    out.push_back(std::move(r));
  }
  if (!st.ok()) return st;
  return out;
}

Result<std::vector<DeviceRow>> Database::ListDevices() {
  Stmt q(db_, "SELECT id, name, uuid, cc_major, cc_minor, sm_count, driver_version FROM devices ORDER BY id");
  std::vector<DeviceRow> out;
  Status st;
  while (q.Step(&st)) {
    DeviceRow r;
    r.id = q.Int(0);
    r.device = DeviceRecord{q.Text(1), q.Text(2), int(q.Int(3)), int(q.Int(4)), int(q.Int(5)), q.Text(6)};
    out.push_back(std::move(r));
  }
  if (!st.ok()) return st;
  return out;
}

Result<std::vector<ToolchainRow>> Database::ListToolchains() {
  Stmt q(db_, "SELECT id, nvrtc_version, generator_version, template_hash FROM toolchains ORDER BY id");
  std::vector<ToolchainRow> out;
  Status st;
  while (q.Step(&st)) out.push_back(ToolchainRow{q.Int(0), ToolchainInfo{q.Text(1), q.Text(2), q.Text(3)}});
  if (!st.ok()) return st;
  return out;
}

Result<std::vector<RunRow>> Database::ListRuns() {
  Stmt q(db_, "SELECT id, coalesce(device_id, 0), coalesce(toolchain_id, 0), strategy, started_at,"
              " coalesce(ended_at, ''), problems, measured, failed, skipped, winners FROM tuning_runs ORDER BY id");
  std::vector<RunRow> out;
  Status st;
  while (q.Step(&st)) {
    RunRow r;
    r.id = q.Int(0);
    r.device_id = q.Int(1);
    r.toolchain_id = q.Int(2);
    r.strategy = q.Text(3);
    r.started_at = q.Text(4);
    r.ended_at = q.Text(5);
    r.counts = RunCounts{q.Int(6), q.Int(7), q.Int(8), q.Int(9), q.Int(10)};
    out.push_back(std::move(r));
  }
  if (!st.ok()) return st;
  return out;
}

Status Database::PutCubin(const CubinRecord& c) {
  Transaction tx(db_);
  FT_RETURN_IF_ERROR(tx.status());
  Stmt ins(db_, (std::string("INSERT OR REPLACE INTO cubins(source_hash, arch, options, nvrtc_version, image,"
                             " registers, smem_bytes, spill_bytes, log, created_at) VALUES(?,?,?,?,?,?,?,?,?,") +
                 kNow + ")").c_str());
  ins.Bind(1, c.source_hash).Bind(2, c.arch).Bind(3, c.options).Bind(4, c.nvrtc_version).BindBlob(5, c.image)
      .Bind(6, c.registers).Bind(7, c.smem_bytes).Bind(8, c.spill_bytes).Bind(9, c.log);
  FT_RETURN_IF_ERROR(ins.Run());
  return tx.Commit();
}

Result<CubinRecord> Database::GetCubin(const std::string& source_hash, const std::string& arch,
                                       const std::string& options, const std::string& nvrtc_version) {
  Stmt q(db_, "SELECT image, registers, smem_bytes, spill_bytes, log FROM cubins WHERE source_hash=? AND arch=?"
              " AND options=? AND nvrtc_version=?");
  q.Bind(1, source_hash).Bind(2, arch).Bind(3, options).Bind(4, nvrtc_version);
  Status st;
  if (!q.Step(&st)) {
    if (!st.ok()) return st;
    return Status(Code::kNotFound, "no cubin for source " + source_hash + " arch " + arch + " nvrtc " + nvrtc_version);
  }
  CubinRecord c{source_hash, arch, options, nvrtc_version, q.Blob(0), int(q.Int(1)), int(q.Int(2)), int(q.Int(3)),
                q.Text(4)};
  return c;
}

Result<int64_t> Database::BeginRun(int64_t device_id, int64_t toolchain_id, const std::string& strategy) {
  Stmt ins(db_, (std::string("INSERT INTO tuning_runs(device_id, toolchain_id, strategy, started_at) VALUES(?,?,?,") +
                 kNow + ")").c_str());
  ins.Bind(1, device_id).Bind(2, toolchain_id).Bind(3, strategy);
  FT_RETURN_IF_ERROR(ins.Run());
  return int64_t(sqlite3_last_insert_rowid(db_));
}

Status Database::EndRun(int64_t run_id, const RunCounts& c) {
  Stmt up(db_, (std::string("UPDATE tuning_runs SET ended_at=") + kNow +
                ", problems=?, measured=?, failed=?, skipped=?, winners=? WHERE id=?").c_str());
  up.Bind(1, c.problems).Bind(2, c.measured).Bind(3, c.failed).Bind(4, c.skipped).Bind(5, c.winners).Bind(6, run_id);
  return up.Run();
}

Result<std::vector<CubinRecord>> Database::ListCubins() {
  Stmt q(db_, "SELECT source_hash, arch, options, nvrtc_version, image, registers, smem_bytes, spill_bytes, log"
              " FROM cubins ORDER BY source_hash, arch, options, nvrtc_version");
  std::vector<CubinRecord> out;
  Status st;
  while (q.Step(&st))
    out.push_back(CubinRecord{q.Text(0), q.Text(1), q.Text(2), q.Text(3), q.Blob(4), int(q.Int(5)), int(q.Int(6)),
                              int(q.Int(7)), q.Text(8)});
  if (!st.ok()) return st;
  return out;
}

}  // namespace flashtune
