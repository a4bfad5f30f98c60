// runtime_database.h — the runtime's tuning database: a read-only connection for plans and
// stored cubins, opened when the file appears (a tuner may be creating it), and a writer opened
// on demand to store kernels compiled on first use. Errors reading the database degrade plans to
// the heuristic and are reported once; they never fail a forward() that can still compile.
//
// Thread safety: every method takes the object's mutex (a Database connection is
// single-threaded). Messages are appended to the caller's LogBatch, to be emitted unlocked.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "flashtune/compiler.h"
#include "flashtune/database.h"
#include "flashtune/neighbour_guess.h"
#include "flashtune/variant.h"
#include "generator/family.h"  // Target
#include "runtime/runtime_log.h"

namespace flashtune {

class RuntimeDatabase {
 public:
  RuntimeDatabase(std::string path, ToolchainInfo toolchain, std::string cache_dir);

  // Opens the read connection if the file exists. kCorrupt / kUnsupported when it exists but
  // cannot be used; OK for a missing or still-empty file (read later).
  Status OpenIfPresent();

  const std::string& path() const { return path_; }
  const ToolchainInfo& toolchain() const { return toolchain_; }
  bool is_open() const;

  // The winner of `bucket` for `device` and this toolchain (exact = true), else of the nearest
  // bucket of the same class (exact = false); nullopt when there is none or no database.
  struct Lookup {
    std::optional<WinnerRow> winner;
    bool exact = false;
    // When the class has no winner: a neighbouring class's, re-specialised (neighbour_guess.h).
    std::optional<NeighbourGuess> guess;
    bool database_open = false;
    bool database_unreadable = false;  // the file is there but does not open (ReadDb logged why)
    bool device_has_winners = true;  // only computed when asked (check_tuned)
    // Not exact: the toolchain of the bucket's own winner, tuned with another build (never
    // served; `flashtune tune` re-tunes it), "" when it has none.
    std::string stale_toolchain;
  };
  // `target` is what a neighbour's tile must fit (its family's rules, its shared memory).
  Result<Lookup> FindWinner(const DeviceRecord& device, const BucketKey& bucket, const Target& target,
                            bool check_tuned, LogBatch* logs);

  // Whether `bucket` has its own winner for `device`'s model and this toolchain (false without a
  // database). Online tuning asks it to see a worker's result.
  Result<bool> HasExactWinner(const DeviceRecord& device, const BucketKey& bucket, LogBatch* logs);

  // The cubin of `variant` for `arch`: the database's stored one, else compiled (and stored when
  // the database file exists and is writable).
  Result<Cubin> CubinFor(const Variant& variant, const std::string& arch, LogBatch* logs);

 private:
  Database* ReadDb(LogBatch* logs);  // caller holds mutex_
  Result<bool> HasWinners(Database& db, const DeviceRecord& device);

  const std::string path_;
  const ToolchainInfo toolchain_;
  const std::string nvrtc_version_;
  Compiler compiler_;
  mutable std::mutex mutex_;
  std::unique_ptr<Database> read_db_;
  std::unique_ptr<Database> write_db_;
  bool unreadable_ = false;            // the last attempt to open the file for reading failed
  bool reported_error_ = false;        // ... and that was logged (once)
  bool reported_store_error_ = false;  // kernels could not be stored: logged once
};

}  // namespace flashtune
