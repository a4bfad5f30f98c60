// The tuning database's admin half (see include/flashtune/database.h): export, merge, prune
// and check. Opening, schema and the tuner's and runtime's rows are cache/database.cpp.
#include "flashtune/database.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "cache/csv.h"
#include "cache/sqlite_util.h"

namespace flashtune {

using detail::CsvField;
using detail::Exec;
using detail::Stmt;
using detail::ToolchainText;
using detail::Transaction;

namespace {

// Shared by Export: every trial with its context, replay columns first.
constexpr const char* kExportSelect = R"sql(
SELECT p.dtype AS dtype, p.head_dim AS head_dim, p.causal AS causal, p.batch AS batch,
       p.seqlen_q AS seqlen_q, p.seqlen_k AS seqlen_k, p.heads_q AS heads_q, p.heads_kv AS heads_kv,
       p.layout AS layout, v.uri AS variant, t.status AS status, t.median_us AS median_us, t.iqr_us AS iqr_us,
       t.reps AS reps, t.registers AS registers, t.smem_bytes AS smem_bytes,
       t.spill_bytes AS spill_bytes, t.message AS message, t.tflops AS tflops,
       t.compile_ms AS compile_ms, t.phase AS phase, v.source_hash AS source_hash,
       p.bucket AS bucket, d.name AS device, d.uuid AS device_uuid, d.cc_major AS cc_major,
       d.cc_minor AS cc_minor, d.sm_count AS sm_count, d.driver_version AS driver_version,
       tc.nvrtc_version AS nvrtc_version, tc.generator_version AS generator_version,
       tc.template_hash AS template_hash, t.created_at AS created_at, t.id AS trial_id
FROM trials t JOIN problems p ON p.id = t.problem_id JOIN variants v ON v.id = t.variant_id
     JOIN devices d ON d.id = t.device_id JOIN toolchains tc ON tc.id = t.toolchain_id
ORDER BY t.id)sql";

// The winners, one per device x toolchain x bucket, with the problem that was tuned for it.
constexpr const char* kWinnersSelect = R"sql(
SELECT p.dtype AS dtype, p.head_dim AS head_dim, p.causal AS causal, p.batch AS batch,
       p.seqlen_q AS seqlen_q, p.seqlen_k AS seqlen_k, p.heads_q AS heads_q, p.heads_kv AS heads_kv,
       p.layout AS layout, w.bucket AS bucket, v.uri AS variant, w.median_us AS median_us, w.tflops AS tflops,
       v.source_hash AS source_hash, d.name AS device, d.uuid AS device_uuid,
       d.driver_version AS driver_version, tc.nvrtc_version AS nvrtc_version,
       tc.generator_version AS generator_version, tc.template_hash AS template_hash,
       w.updated_at AS updated_at
FROM winners w JOIN problems p ON p.id = w.problem_id JOIN variants v ON v.id = w.variant_id
     JOIN devices d ON d.id = w.device_id JOIN toolchains tc ON tc.id = w.toolchain_id
ORDER BY w.device_id, w.toolchain_id, w.bucket)sql";

}  // namespace

Result<ExportTable> ParseExportTable(std::string_view text) {
  if (text == "trials") return ExportTable::kTrials;
  if (text == "winners") return ExportTable::kWinners;
  return Status(Code::kInvalidArgument, "--table '" + std::string(text) + "': allowed trials, winners");
}

Result<ExportFormat> ParseExportFormat(std::string_view text) {
  if (text == "csv") return ExportFormat::kCsv;
  if (text == "json") return ExportFormat::kJson;
  return Status(Code::kInvalidArgument, "--format '" + std::string(text) + "': allowed csv, json");
}

Result<std::string> Database::Export(ExportFormat format, ExportTable table) {
  const char* select = table == ExportTable::kWinners ? kWinnersSelect : kExportSelect;
  if (format == ExportFormat::kJson) {
    // One object per row, keyed by the select's column names, built by SQLite's JSON functions.
    std::string pairs;
    {
      Stmt names(db_, select);
      for (int c = 0; c < names.Columns(); ++c)
        pairs += std::string(c ? ", " : "") + "'" + names.ColumnName(c) + "', " + names.ColumnName(c);
    }
    Stmt q(db_, ("SELECT coalesce(json_group_array(json_object(" + pairs + ")), '[]') FROM (" + select + ")").c_str());
    Status st;
    if (!q.Step(&st)) return st.ok() ? Status(Code::kInternal, "export returned no row") : st;
    return q.Text(0) + "\n";
  }
  Stmt q(db_, select);
  std::string out;
  for (int c = 0; c < q.Columns(); ++c) {
    if (c) out += ',';
    out += q.ColumnName(c);
  }
  out += "\n";
  Status st;
  while (q.Step(&st)) {
    for (int c = 0; c < q.Columns(); ++c) {
      if (c) out += ',';
      out += CsvField(q.Text(c));
    }
    out += "\n";
  }
  if (!st.ok()) return st;
  return out;
}


Result<MergeStats> Database::Merge(const std::string& other_path, const MergeOptions& options) {
  {
    std::error_code ec;
    if (std::filesystem::equivalent(path_, other_path, ec))
      return Status(Code::kInvalidArgument, "merge: '" + other_path + "' is this database itself");
    // Validates the other file (kCorrupt, kNotFound) without writing to it.
    auto other = Database::Open(other_path, OpenOptions{true, 10000});
    if (!other.ok()) return other.status();
    auto v = (*other)->SchemaVersion();
    if (!v.ok()) return v.status();
    if (*v != kSchemaVersion)
      return Status(Code::kUnsupported, "merge: '" + other_path + "' has schema version " + std::to_string(*v) +
                                            "; open it with this flashtune once (it migrates) and merge again");
  }
  // Only read from: every statement below writes to main.
  Stmt attach(db_, "ATTACH DATABASE ? AS other");
  attach.Bind(1, other_path);
  FT_RETURN_IF_ERROR(attach.Run());
  MergeStats stats;
  Status result = [&]() -> Status {
    Transaction tx(db_);
    FT_RETURN_IF_ERROR(tx.status());
    FT_RETURN_IF_ERROR(Exec(db_,
        "INSERT OR IGNORE INTO devices(name, uuid, cc_major, cc_minor, sm_count, driver_version)"
        " SELECT name, uuid, cc_major, cc_minor, sm_count, driver_version FROM other.devices;"
        "INSERT OR IGNORE INTO toolchains(nvrtc_version, generator_version, template_hash)"
        " SELECT nvrtc_version, generator_version, template_hash FROM other.toolchains;"
        "INSERT OR IGNORE INTO problems(dtype, head_dim, causal, batch, seqlen_q, seqlen_k, heads_q, heads_kv,"
        " bucket, q_bucket, k_bucket, bh_bucket, layout) SELECT dtype, head_dim, causal, batch, seqlen_q, seqlen_k,"
        " heads_q, heads_kv, bucket, q_bucket, k_bucket, bh_bucket, layout FROM other.problems;"
        "INSERT OR IGNORE INTO variants(uri, params, source_hash) SELECT uri, params, source_hash FROM other.variants;"));
    // Maps the other file's ids to ours through the natural keys.
    const std::string joins =
        " JOIN other.devices od ON od.id = o.device_id JOIN main.devices d ON d.uuid = od.uuid AND "
        "d.driver_version = od.driver_version"
        " JOIN other.toolchains otc ON otc.id = o.toolchain_id JOIN main.toolchains tc ON"
        " tc.nvrtc_version = otc.nvrtc_version AND tc.generator_version = otc.generator_version AND"
        " tc.template_hash = otc.template_hash"
        " JOIN other.problems op ON op.id = o.problem_id JOIN main.problems p ON p.dtype = op.dtype AND"
        " p.head_dim = op.head_dim AND p.causal = op.causal AND p.batch = op.batch AND p.seqlen_q = op.seqlen_q"
        " AND p.seqlen_k = op.seqlen_k AND p.heads_q = op.heads_q AND p.heads_kv = op.heads_kv"
        " AND p.layout = op.layout"
        " JOIN other.variants ov ON ov.id = o.variant_id JOIN main.variants v ON v.uri = ov.uri AND"
        " v.source_hash = ov.source_hash ";
    Stmt trials(db_, ("INSERT INTO main.trials(device_id, toolchain_id, problem_id, variant_id, status, message,"
                      " median_us, iqr_us, tflops, reps, registers, smem_bytes, spill_bytes, compile_ms, phase,"
                      " created_at) SELECT d.id, tc.id, p.id, v.id, o.status, o.message, o.median_us, o.iqr_us,"
                      " o.tflops, o.reps, o.registers, o.smem_bytes, o.spill_bytes, o.compile_ms, o.phase,"
                      " o.created_at FROM other.trials o" + joins +
                      "WHERE NOT EXISTS (SELECT 1 FROM main.trials x WHERE x.device_id = d.id AND"
                      " x.toolchain_id = tc.id AND x.problem_id = p.id AND x.variant_id = v.id AND"
                      " x.phase = o.phase AND x.created_at = o.created_at AND x.status = o.status AND"
                      " x.median_us IS o.median_us)").c_str());
    FT_RETURN_IF_ERROR(trials.Run());
    stats.trials_added = sqlite3_changes(db_);
    Stmt winners(db_, ("INSERT OR IGNORE INTO main.winners(device_id, toolchain_id, bucket, dtype, head_dim, causal,"
                       " q_bucket, k_bucket, bh_bucket, problem_id, variant_id, median_us, tflops, updated_at)"
                       " SELECT d.id, tc.id, o.bucket, o.dtype, o.head_dim, o.causal, o.q_bucket, o.k_bucket,"
                       " o.bh_bucket, p.id, v.id, o.median_us, o.tflops, o.updated_at FROM other.winners o" +
                       joins).c_str());
    FT_RETURN_IF_ERROR(winners.Run());
    stats.winners_added = sqlite3_changes(db_);
    if (!options.admit_cubin) {
      FT_RETURN_IF_ERROR(Exec(db_,
          "INSERT OR IGNORE INTO main.cubins SELECT source_hash, arch, options, nvrtc_version, image, registers,"
          " smem_bytes, spill_bytes, log, created_at FROM other.cubins"));
      stats.cubins_added = sqlite3_changes(db_);
    } else {
      // One by one, each offered to admit_cubin as it is read here (the very bytes inserted).
      Stmt q(db_, "SELECT source_hash, arch, options, nvrtc_version, image, registers, smem_bytes, spill_bytes, log,"
                  " created_at FROM other.cubins");
      Status st;
      while (q.Step(&st)) {
        const CubinRecord c{q.Text(0), q.Text(1), q.Text(2), q.Text(3), q.Blob(4), int(q.Int(5)), int(q.Int(6)),
                            int(q.Int(7)), q.Text(8)};
        if (!options.admit_cubin(c)) {
          ++stats.cubins_left_out;
          continue;
        }
        Stmt ins(db_, "INSERT OR IGNORE INTO main.cubins(source_hash, arch, options, nvrtc_version, image, registers,"
                      " smem_bytes, spill_bytes, log, created_at) VALUES(?,?,?,?,?,?,?,?,?,?)");
        ins.Bind(1, c.source_hash).Bind(2, c.arch).Bind(3, c.options).Bind(4, c.nvrtc_version).BindBlob(5, c.image)
            .Bind(6, c.registers).Bind(7, c.smem_bytes).Bind(8, c.spill_bytes).Bind(9, c.log).Bind(10, q.Text(9));
        FT_RETURN_IF_ERROR(ins.Run());
        stats.cubins_added += sqlite3_changes(db_);
      }
      FT_RETURN_IF_ERROR(st);
    }
    return tx.Commit();
  }();
  Exec(db_, "DETACH DATABASE other");
  if (!result.ok()) return result;
  return stats;
}

Result<PruneStats> Database::Prune(const ToolchainInfo& current) {
  Transaction tx(db_);
  FT_RETURN_IF_ERROR(tx.status());
  PruneStats s;
  const std::string cur =
      "(SELECT id FROM toolchains WHERE nvrtc_version = ?1 AND generator_version = ?2 AND template_hash = ?3)";
  auto run = [&](const std::string& sql, int64_t* count) -> Status {
    Stmt st(db_, sql.c_str());
    st.Bind(1, current.nvrtc_version).Bind(2, current.generator_version).Bind(3, current.template_hash);
    FT_RETURN_IF_ERROR(st.Run());
    if (count) *count += sqlite3_changes(db_);
    return Status::Ok();
  };
  FT_RETURN_IF_ERROR(run("DELETE FROM trials WHERE toolchain_id IS NOT " + cur +
                             " OR device_id NOT IN (SELECT id FROM devices)", &s.trials_removed));
  FT_RETURN_IF_ERROR(run("DELETE FROM winners WHERE toolchain_id IS NOT " + cur +
                             " OR device_id NOT IN (SELECT id FROM devices)", &s.winners_removed));
  FT_RETURN_IF_ERROR(run("DELETE FROM cubins WHERE nvrtc_version != ?1 AND ?2 = ?2 AND ?3 = ?3", &s.cubins_removed));
  FT_RETURN_IF_ERROR(run("DELETE FROM toolchains WHERE id IS NOT " + cur, &s.toolchains_removed));
  FT_RETURN_IF_ERROR(tx.Commit());
  return s;
}

Result<CheckReport> Database::Check(const ToolchainInfo& current) {
  CheckReport r;
  Status st;
  {
    // integrity_check, unlike quick_check, also checks indexes against their tables.
    Stmt q(db_, "PRAGMA integrity_check(20)");
    std::string msg;
    while (q.Step(&st)) {
      if (!msg.empty()) msg += "; ";
      msg += q.Text(0);
    }
    if (!st.ok()) msg = st.message();
    r.integrity_ok = msg == "ok";
    r.integrity_message = msg;
    // The counts of a damaged file would be whatever its readable pages say: none are given.
    if (!r.integrity_ok) return r;
  }
  auto v = SchemaVersion();
  if (!v.ok()) return v.status();
  r.schema_version = *v;
  const std::string cur =
      "(SELECT id FROM toolchains WHERE nvrtc_version = ?1 AND generator_version = ?2 AND template_hash = ?3)";
  auto count = [&](const std::string& sql, int64_t* out) -> Status {
    Stmt q(db_, sql.c_str());
    q.Bind(1, current.nvrtc_version).Bind(2, current.generator_version).Bind(3, current.template_hash);
    Status s;
    if (q.Step(&s)) *out = q.Int(0);
    return s;
  };
  FT_RETURN_IF_ERROR(count("SELECT count(*) FROM trials WHERE ?1 = ?1 AND ?2 = ?2 AND ?3 = ?3", &r.trials));
  FT_RETURN_IF_ERROR(count("SELECT count(*) FROM trials WHERE toolchain_id IS NOT " + cur, &r.stale_trials));
  FT_RETURN_IF_ERROR(count("SELECT count(*) FROM winners WHERE ?1 = ?1 AND ?2 = ?2 AND ?3 = ?3", &r.winners));
  FT_RETURN_IF_ERROR(count("SELECT count(*) FROM winners WHERE toolchain_id IS NOT " + cur, &r.stale_winners));
  Stmt q(db_, "SELECT nvrtc_version, generator_version, template_hash FROM toolchains WHERE NOT"
              " (nvrtc_version = ?1 AND generator_version = ?2 AND template_hash = ?3) ORDER BY id");
  q.Bind(1, current.nvrtc_version).Bind(2, current.generator_version).Bind(3, current.template_hash);
  while (q.Step(&st)) r.stale_toolchains.push_back(ToolchainText(q, 0));
  if (!st.ok()) return st;
  return r;
}

}  // namespace flashtune
