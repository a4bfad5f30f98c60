#include "tests/support/old_database.h"

#include <sqlite3.h>

#include <cstdio>

namespace flashtune::testing {

bool WriteOldDatabase(const std::string& path, int version) {
  sqlite3* raw;
  if (sqlite3_open(path.c_str(), &raw) != SQLITE_OK) return false;
  const char* v1 = R"sql(
    CREATE TABLE devices(id INTEGER PRIMARY KEY, name TEXT NOT NULL, uuid TEXT NOT NULL, cc_major INTEGER NOT NULL,
      cc_minor INTEGER NOT NULL, sm_count INTEGER NOT NULL, driver_version TEXT NOT NULL, UNIQUE(uuid, driver_version));
    CREATE TABLE toolchains(id INTEGER PRIMARY KEY, nvrtc_version TEXT NOT NULL, generator_version TEXT NOT NULL,
      template_hash TEXT NOT NULL, UNIQUE(nvrtc_version, generator_version, template_hash));
    CREATE TABLE problems(id INTEGER PRIMARY KEY, dtype TEXT NOT NULL, head_dim INTEGER NOT NULL, causal INTEGER NOT NULL,
      batch INTEGER NOT NULL, seqlen_q INTEGER NOT NULL, seqlen_k INTEGER NOT NULL, heads_q INTEGER NOT NULL,
      heads_kv INTEGER NOT NULL, bucket TEXT NOT NULL, q_bucket INTEGER NOT NULL, k_bucket INTEGER NOT NULL,
      bh_bucket INTEGER NOT NULL, UNIQUE(dtype, head_dim, causal, batch, seqlen_q, seqlen_k, heads_q, heads_kv));
    CREATE TABLE variants(id INTEGER PRIMARY KEY, uri TEXT NOT NULL, params TEXT NOT NULL, source_hash TEXT NOT NULL,
      UNIQUE(uri, source_hash));
    CREATE TABLE trials(id INTEGER PRIMARY KEY, device_id INTEGER NOT NULL REFERENCES devices(id),
      toolchain_id INTEGER NOT NULL REFERENCES toolchains(id), problem_id INTEGER NOT NULL REFERENCES problems(id),
      variant_id INTEGER NOT NULL REFERENCES variants(id), status TEXT NOT NULL, message TEXT NOT NULL DEFAULT '',
      median_us REAL, iqr_us REAL, tflops REAL, reps INTEGER NOT NULL DEFAULT 0, registers INTEGER NOT NULL DEFAULT 0,
      smem_bytes INTEGER NOT NULL DEFAULT 0, spill_bytes INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL);
    CREATE TABLE winners(device_id INTEGER NOT NULL, toolchain_id INTEGER NOT NULL, bucket TEXT NOT NULL,
      dtype TEXT NOT NULL, head_dim INTEGER NOT NULL, causal INTEGER NOT NULL, q_bucket INTEGER NOT NULL,
      k_bucket INTEGER NOT NULL, bh_bucket INTEGER NOT NULL, problem_id INTEGER NOT NULL, variant_id INTEGER NOT NULL,
      median_us REAL NOT NULL, tflops REAL NOT NULL, updated_at TEXT NOT NULL, PRIMARY KEY(device_id, toolchain_id, bucket));
    CREATE TABLE cubins(source_hash TEXT NOT NULL, arch TEXT NOT NULL, options TEXT NOT NULL, nvrtc_version TEXT NOT NULL,
      image BLOB NOT NULL, registers INTEGER NOT NULL, smem_bytes INTEGER NOT NULL, spill_bytes INTEGER NOT NULL,
      log TEXT NOT NULL, created_at TEXT NOT NULL, PRIMARY KEY(source_hash, arch, options, nvrtc_version));
    INSERT INTO devices VALUES(1, 'NVIDIA H200', 'GPU-aaaa', 9, 0, 132, '580.65');
    INSERT INTO toolchains VALUES(1, '13.0', '0.1.0', 'tplhash1');
    INSERT INTO problems VALUES(1, 'bf16', 128, 0, 4, 4096, 4096, 16, 16, 'bf16/d128/full/q12/k12/bh6', 12, 12, 6);
    INSERT INTO variants VALUES(1, 'fa2_fwd_bf16_d128_br128_bc64_w4_s2_full', '{}', 'h');
    INSERT INTO trials(device_id, toolchain_id, problem_id, variant_id, status, median_us, iqr_us, tflops, reps, created_at)
      VALUES(1, 1, 1, 1, 'ok', 250.0, 2.0, 300.0, 20, '2026-01-01T00:00:00.000Z');
    INSERT INTO winners VALUES(1, 1, 'bf16/d128/full/q12/k12/bh6', 'bf16', 128, 0, 12, 12, 6, 1, 1, 250.0, 300.0,
      '2026-01-01T00:00:00.000Z');
    PRAGMA user_version = 1;)sql";
  const char* v3 = R"sql(
    ALTER TABLE trials ADD COLUMN compile_ms REAL NOT NULL DEFAULT 0;
    ALTER TABLE trials ADD COLUMN phase TEXT NOT NULL DEFAULT 'search';
    ALTER TABLE trials ADD COLUMN run_id INTEGER;
    CREATE TABLE tuning_runs(id INTEGER PRIMARY KEY, device_id INTEGER, toolchain_id INTEGER, strategy TEXT NOT NULL,
      started_at TEXT NOT NULL, ended_at TEXT, problems INTEGER NOT NULL DEFAULT 0, measured INTEGER NOT NULL DEFAULT 0,
      failed INTEGER NOT NULL DEFAULT 0, skipped INTEGER NOT NULL DEFAULT 0, winners INTEGER NOT NULL DEFAULT 0);
    ALTER TABLE variants ADD COLUMN family TEXT NOT NULL DEFAULT 'fa2_fwd';
    PRAGMA user_version = 3;)sql";
  bool ok = sqlite3_exec(raw, v1, nullptr, nullptr, nullptr) == SQLITE_OK &&
            (version == 1 || sqlite3_exec(raw, v3, nullptr, nullptr, nullptr) == SQLITE_OK);
  if (!ok) std::fprintf(stderr, "%s\n", sqlite3_errmsg(raw));
  sqlite3_close(raw);
  return ok;
}

}  // namespace flashtune::testing
