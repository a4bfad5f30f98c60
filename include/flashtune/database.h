// flashtune/database.h — the tuning database: one SQLite file holding devices, toolchains,
// problems, variants, every trial the tuner ran, the winners per device × toolchain × bucket,
// compiled cubins, and the tuning runs.
//
// File: the path given, else $FLASHTUNE_DB, else ./flashtune.db (DefaultDatabasePath()).
// Schema: versioned with PRAGMA user_version (kSchemaVersion); older files are migrated on open
// (read-write) inside one transaction; a newer version than this build knows is kUnsupported.
// Journal: WAL, busy_timeout 10 s, foreign keys on. Every write is its own transaction, so a
// killed tuner loses at most the trial in flight, and several processes may write one file.
// A file that is not a flashtune SQLite database is kCorrupt naming the path; it is never
// modified. Every error names the database file.
//
// Read-only databases: a reader (OpenOptions::read_only) that may write the file and its
// directory opens it normally, so it sees a running tuner's commits, and the last connection
// to close removes the -wal and -shm files. A reader that may not (a database shipped
// read-only: `chmod a-w` on the file or its directory, or a read-only mount) opens it
// immutable: SQLite then assumes nothing changes it while it is read and creates no files.
// Ship the .db file alone, after every tuner on it has exited (the last writer to close folds
// the -wal into the file); a non-empty -wal beside an unwritable file is read if SQLite can,
// and otherwise refused with the cure.
//
// Winners are keyed by the physical device and the toolchain that measured them; FindWinner
// matches on the GPU model (name, compute capability, SM count) and driver version and on the
// whole toolchain (NVRTC version, generator version, template hash), so rows measured on another
// GPU model, driver or template are never returned.
//
// Thread safety: a Database object owns one SQLite connection and is NOT thread-safe; use one
// object per thread (each Open() makes a new connection; many may share one file).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "flashtune/export.h"
#include "flashtune/problem_set.h"
#include "flashtune/status.h"
#include "flashtune/variant.h"

struct sqlite3;

FLASHTUNE_API_BEGIN
namespace flashtune {

inline constexpr int kSchemaVersion = 4;

// The GPU a trial ran on. Identity of a physical GPU: uuid + driver_version.
struct DeviceRecord {
  std::string name;  // "NVIDIA H200"
  std::string uuid;  // "GPU-..."
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  std::string driver_version;  // "13.0" / "580.65"
};

// Whether two GPUs count as one model, whose tuned winners serve each other: same name, compute
// capability, SM count and driver version (the uuid, one physical GPU's, does not matter). The
// one rule for FindWinner, the runtime, `flashtune plan` and the tuner's per-model work queues.
bool SameGpuModel(const DeviceRecord& a, const DeviceRecord& b);

// What produced the kernels: a change in any field makes earlier timings stale.
struct ToolchainInfo {
  std::string nvrtc_version;      // "13.0"
  std::string generator_version;  // flashtune's version
  std::string template_hash;      // sha256 over the embedded templates
  bool operator==(const ToolchainInfo&) const = default;
};

// One measured (or failed) candidate, as recorded.
struct TrialRecord {
  Problem problem;
  Variant variant;
  std::string source_hash;  // sha256 of the emitted source ("" when unknown, e.g. replay)
  Code status = Code::kOk;
  std::string message;      // error text for failures
  double median_us = 0;
  double iqr_us = 0;
  double tflops = 0;        // 0 for failures; computed from Problem::Flops() when 0 and ok
  int reps = 0;
  int registers = 0;
  int smem_bytes = 0;
  int spill_bytes = 0;      // spill stores + loads
  double compile_ms = 0;
  std::string phase = "search";  // "search" (first measurement) or "retime" (re-timing of finalists)
  int64_t run_id = 0;       // tuning_runs.id, 0 for none
};

// A trial as read back, with its ids and context.
struct TrialRow {
  int64_t id = 0;
  int64_t problem_id = 0;
  int64_t device_id = 0;
  int64_t toolchain_id = 0;
  std::string device_name;
  TrialRecord trial;
  std::string variant_uri;
  std::string status_name;  // CodeName(trial.status)
  std::string created_at;
};

struct WinnerRow {
  int64_t device_id = 0;
  int64_t toolchain_id = 0;
  int64_t problem_id = 0;
  BucketKey bucket;
  Problem problem;  // the problem that was tuned for this bucket
  Variant variant;
  std::string variant_uri;
  std::string source_hash;
  double median_us = 0;
  double tflops = 0;
  std::string updated_at;
  int distance = 0;  // BucketDistance from the requested bucket (FindNearestWinner)
};

struct ProblemRow {
  int64_t id = 0;
  Problem problem;
  std::string bucket;
  int64_t trials = 0;
  int64_t ok_trials = 0;
  std::string best_variant;  // fastest ok search/retime trial, "" when none
  double best_median_us = 0;
};

struct CubinRecord {
  std::string source_hash;
  std::string arch;          // "sm_90a"
  std::string options;       // NVRTC options joined by spaces
  std::string nvrtc_version;
  std::vector<char> image;
  int registers = 0;
  int smem_bytes = 0;
  int spill_bytes = 0;
  std::string log;
};

struct RunCounts {
  int64_t problems = 0;
  int64_t measured = 0;
  int64_t failed = 0;
  int64_t skipped = 0;
  int64_t winners = 0;
};

struct MergeStats {
  int64_t trials_added = 0;
  int64_t winners_added = 0;
  int64_t cubins_added = 0;
  int64_t cubins_left_out = 0;  // not admitted by MergeOptions::admit_cubin
};

struct MergeOptions {
  // Which of the other file's cubins come in; every one when empty. Cubins are code the
  // runtime runs: `db merge` admits only those verified (flashtune/cubin_verify.h).
  std::function<bool(const CubinRecord&)> admit_cubin;
};

struct PruneStats {
  int64_t trials_removed = 0;
  int64_t winners_removed = 0;
  int64_t cubins_removed = 0;
  int64_t toolchains_removed = 0;
};

struct CheckReport {
  bool integrity_ok = false;
  std::string integrity_message;  // "ok" or SQLite's first complaints
  int schema_version = 0;
  int64_t trials = 0;
  int64_t stale_trials = 0;   // measured with another toolchain than the current one
  int64_t winners = 0;
  int64_t stale_winners = 0;
  std::vector<std::string> stale_toolchains;  // "nvrtc 12.4 / gen 0.0.9 / tpl abcd…"
};

// Rows of the small tables, as read back (ListDevices / ListToolchains / ListRuns).
struct DeviceRow {
  int64_t id = 0;
  DeviceRecord device;
};

struct ToolchainRow {
  int64_t id = 0;
  ToolchainInfo toolchain;
};

struct RunRow {
  int64_t id = 0;
  int64_t device_id = 0;     // 0 when unknown
  int64_t toolchain_id = 0;  // 0 when unknown
  std::string strategy;
  std::string started_at;    // ISO 8601 UTC, "2026-11-30T12:34:56.789Z"
  std::string ended_at;      // "" when the run never ended (still running, or killed)
  RunCounts counts;          // zeros until EndRun
};

enum class ExportFormat { kCsv, kJson };
// Parses "csv" / "json"; kInvalidArgument naming the allowed values.
Result<ExportFormat> ParseExportFormat(std::string_view text);
enum class ExportTable { kTrials, kWinners };
// Parses "trials" / "winners"; kInvalidArgument naming the allowed values.
Result<ExportTable> ParseExportTable(std::string_view text);

// $FLASHTUNE_DB when set and non-empty, else "./flashtune.db".
std::string DefaultDatabasePath();

class Database {
 public:
  struct OpenOptions {
    bool read_only = false;     // read-only never creates, never migrates
    int busy_timeout_ms = 10000;
    // Refuse a damaged file (PRAGMA quick_check: every page read once) before reading or
    // writing it. Off only for `db check`, which reports the damage itself.
    bool check_integrity = true;
  };

  // Opens (read-write: creating if absent) and migrates to kSchemaVersion.
  // Errors: kCorrupt (not a SQLite file, not a flashtune schema, or damaged) naming the path,
  // the file untouched; kNotFound (read-only, and absent or empty — a tuner may be creating
  // it); kUnsupported (newer schema); kIoError (read-write, and the file or its directory is
  // not writable: found before any work starts); kInvalidArgument (empty path, a directory);
  // kDatabaseError otherwise.
  static Result<std::unique_ptr<Database>> Open(const std::string& path, OpenOptions options);
  static Result<std::unique_ptr<Database>> Open(const std::string& path) { return Open(path, OpenOptions{}); }
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  const std::string& path() const { return path_; }
  Result<int> SchemaVersion();

  // Insert-or-find. Return the row id.
  Result<int64_t> UpsertDevice(const DeviceRecord& device);
  Result<int64_t> UpsertToolchain(const ToolchainInfo& toolchain);
  Result<int64_t> UpsertProblem(const Problem& problem);
  Result<int64_t> FindProblem(const Problem& problem);  // kNotFound when absent
  Result<int64_t> FindDevice(const DeviceRecord& device);  // by uuid + driver; kNotFound when absent
  Result<int64_t> FindToolchain(const ToolchainInfo& toolchain);  // kNotFound when absent

  // Records one trial in its own transaction (problem and variant rows created as needed).
  // Returns the trial id.
  Result<int64_t> RecordTrial(int64_t device_id, int64_t toolchain_id, const TrialRecord& trial);

  // Trials of one problem, ranked: ok trials by median ascending, then failures by time.
  // device_id / toolchain_id 0 means any.
  Result<std::vector<TrialRow>> TrialsForProblem(int64_t problem_id, int64_t device_id = 0,
                                                 int64_t toolchain_id = 0);

  // Writes (replaces) the winner of `bucket` for this device and toolchain.
  // kInvalidArgument when the trial data says the winner is not ok.
  Status SetWinner(int64_t device_id, int64_t toolchain_id, const Problem& problem,
                   const Variant& variant, const std::string& source_hash, double median_us,
                   double tflops);
  // The fastest winner for `bucket` measured on a GPU of the same model (name, cc, SM count)
  // and driver version, with exactly this toolchain; nullopt when none.
  Result<std::optional<WinnerRow>> FindWinner(const DeviceRecord& device, const ToolchainInfo& toolchain,
                                              const BucketKey& bucket);
  // Like FindWinner but, when the exact bucket has none, the winner of the nearest bucket of the
  // same dtype, D and causal (ties: the nearer GQA group, then the smaller median); nullopt
  // when the class has none.
  Result<std::optional<WinnerRow>> FindNearestWinner(const DeviceRecord& device,
                                                     const ToolchainInfo& toolchain,
                                                     const BucketKey& bucket);
  // When `bucket` has a winner on a GPU of `device`'s model measured with another toolchain than
  // `toolchain` (NVRTC, generator or templates differ; such winners are never served): the newest
  // one's toolchain, "nvrtc V / generator V / templates <12 hex>"; nullopt when none. The runtime
  // names it when it plans around a stale winner.
  Result<std::optional<std::string>> StaleWinnerToolchain(const DeviceRecord& device, const ToolchainInfo& toolchain,
                                                          const BucketKey& bucket);
  Result<std::vector<WinnerRow>> ListWinners();
  // The winners measured on a GPU of `device`'s model (SameGpuModel) with exactly `toolchain`:
  // every winner the runtime may serve on that device.
  Result<std::vector<WinnerRow>> ListWinnersFor(const DeviceRecord& device, const ToolchainInfo& toolchain);

  Result<std::vector<ProblemRow>> ListProblems();

  // Every device / toolchain / tuning run, by id ascending. Read-only; empty when none.
  Result<std::vector<DeviceRow>> ListDevices();
  Result<std::vector<ToolchainRow>> ListToolchains();
  Result<std::vector<RunRow>> ListRuns();

  // Cubin cache. GetCubin: kNotFound when absent.
  Status PutCubin(const CubinRecord& cubin);
  Result<CubinRecord> GetCubin(const std::string& source_hash, const std::string& arch,
                               const std::string& options, const std::string& nvrtc_version);

  // Tuning runs: BeginRun returns the run id; EndRun stores the end time and counts.
  Result<int64_t> BeginRun(int64_t device_id, int64_t toolchain_id, const std::string& strategy);
  Status EndRun(int64_t run_id, const RunCounts& counts);

  // kTrials: all trials joined with problem, variant, device and toolchain. The CSV/JSON has the
  // replay columns (dtype, head_dim, causal, batch, seqlen_q, seqlen_k, heads_q, heads_kv,
  // layout, variant, status, median_us, iqr_us, reps, registers, smem_bytes, spill_bytes, message, ...)
  // so an export can be fed back to the replay measurer.
  // kWinners: what the runtime launches, one row per device x toolchain x bucket: the tuned
  // problem's columns as above, then bucket, variant, median_us (the time that decided it),
  // tflops, source_hash, device, device_uuid, driver_version, nvrtc_version,
  // generator_version, template_hash, updated_at.
  // Returns the text (a header line and one line per row, or one JSON array); an SQLite error
  // otherwise.
  Result<std::string> Export(ExportFormat format, ExportTable table = ExportTable::kTrials);

  // Brings in every row of another flashtune database (ATTACH; insert-or-ignore on natural
  // keys), its cubins only where options.admit_cubin accepts them (all when it is empty).
  // Idempotent: merging the same file twice adds nothing the second time. One transaction.
  // kCorrupt/kNotFound for a bad `other_path`.
  Result<MergeStats> Merge(const std::string& other_path, const MergeOptions& options = {});

  // Every stored cubin, images included, ordered by source hash and arch.
  Result<std::vector<CubinRecord>> ListCubins();

  // Removes trials, winners and cubins not made by `current` (and trials of devices no longer
  // in the devices table); winners of the current toolchain are kept.
  Result<PruneStats> Prune(const ToolchainInfo& current);

  // PRAGMA integrity_check plus the staleness of trials and winners relative to `current`.
  // A damaged file gives integrity_ok false, the first complaints, and no counts (zeros).
  // Open the file with check_integrity = false to report on a damaged one.
  Result<CheckReport> Check(const ToolchainInfo& current);

 private:
  Database(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}
  std::string path_;
  sqlite3* db_ = nullptr;
};

}  // namespace flashtune
FLASHTUNE_API_END
