// tests/support/old_database.h — a tuning database as an older flashtune wrote it, for the
// tests of migration and of what reads or merges such a file.
#pragma once

#include <string>

namespace flashtune::testing {

// A version-1 file written by hand (no compile_ms/phase/run_id columns, no tuning_runs, no
// variant family, no problem layout) with one dense problem, trial and winner; `version` 3 adds
// what versions 2 and 3 added, as those migrations wrote it. Its rows: device 'NVIDIA H200'
// GPU-aaaa (driver 580.65), toolchain 13.0 / 0.1.0 / tplhash1. False, with SQLite's message on
// stderr, when it cannot be written.
bool WriteOldDatabase(const std::string& path, int version);

}  // namespace flashtune::testing
