// The runtime's tuning database: lazy read connection, winner lookup, cubins (stored or compiled).
#include "runtime/runtime_database.h"

#include <filesystem>
#include <utility>

#include "flashtune/cubin_store.h"
#include "flashtune/source.h"

namespace flashtune {

RuntimeDatabase::RuntimeDatabase(std::string path, ToolchainInfo toolchain, std::string cache_dir)
    : path_(std::move(path)),
      toolchain_(std::move(toolchain)),
      nvrtc_version_(Compiler::NvrtcVersion()),
      compiler_(Compiler::Options{std::move(cache_dir), 1}) {}

Status RuntimeDatabase::OpenIfPresent() {
  std::lock_guard lock(mutex_);
  std::error_code ec;
  if (read_db_ || !std::filesystem::exists(path_, ec)) return Status::Ok();
  Database::OpenOptions ro;
  ro.read_only = true;
  auto db = Database::Open(path_, ro);
  if (db.ok()) {
    read_db_ = std::move(*db);
  } else if (db.status().code() != Code::kNotFound) {  // empty (being created): read it later
    return db.status();
  }
  return Status::Ok();
}

bool RuntimeDatabase::is_open() const {
  std::lock_guard lock(mutex_);
  return read_db_ != nullptr;
}

Database* RuntimeDatabase::ReadDb(LogBatch* logs) {
  if (read_db_) return read_db_.get();
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec)) return nullptr;
  Database::OpenOptions ro;
  ro.read_only = true;
  auto db = Database::Open(path_, ro);
  if (!db.ok()) {
    if (db.status().code() == Code::kNotFound) return nullptr;  // being created: try again later
    unreadable_ = true;
    if (!reported_error_) {
      reported_error_ = true;
      logs->push_back({LogLevel::kError, "cannot read the tuning database: " + db.status().ToString() +
                                             "; plans are heuristic"});
    }
    return nullptr;
  }
  unreadable_ = false;
  read_db_ = std::move(*db);
  return read_db_.get();
}

Result<bool> RuntimeDatabase::HasWinners(Database& db, const DeviceRecord& device) {
  auto winners = db.ListWinnersFor(device, toolchain_);
  if (!winners.ok()) return winners.status();
  return !winners->empty();
}

Result<RuntimeDatabase::Lookup> RuntimeDatabase::FindWinner(const DeviceRecord& device, const BucketKey& bucket,
                                                            const Target& target, bool check_tuned, LogBatch* logs) {
  std::lock_guard lock(mutex_);
  Lookup out;
  Database* db = ReadDb(logs);
  out.database_open = db != nullptr;
  out.database_unreadable = db == nullptr && unreadable_;
  if (db == nullptr || device.name.empty()) return out;
  auto exact = db->FindWinner(device, toolchain_, bucket);
  if (!exact.ok()) return exact.status();
  if (exact->has_value()) {
    out.winner = std::move(*exact);
    out.exact = true;
  } else {
    auto nearest = db->FindNearestWinner(device, toolchain_, bucket);
    if (!nearest.ok()) return nearest.status();
    out.winner = std::move(*nearest);
    auto stale = db->StaleWinnerToolchain(device, toolchain_, bucket);
    if (!stale.ok()) return stale.status();
    if (*stale) out.stale_toolchain = **stale;
  }
  if (!out.winner) {
    auto guess = GuessFromNeighbours(*db, device, toolchain_, bucket, target.arch, target.max_smem_bytes);
    if (!guess.ok()) return guess.status();
    out.guess = std::move(*guess);
  }
  if (check_tuned) {
    auto has = HasWinners(*db, device);
    if (!has.ok()) return has.status();
    out.device_has_winners = *has;
  }
  return out;
}

Result<bool> RuntimeDatabase::HasExactWinner(const DeviceRecord& device, const BucketKey& bucket, LogBatch* logs) {
  std::lock_guard lock(mutex_);
  Database* db = ReadDb(logs);
  if (db == nullptr || device.name.empty()) return false;
  auto exact = db->FindWinner(device, toolchain_, bucket);
  if (!exact.ok()) return exact.status();
  return exact->has_value();
}

Result<Cubin> RuntimeDatabase::CubinFor(const Variant& variant, const std::string& arch, LogBatch* logs) {
  auto source = GenerateSource(variant);
  if (!source.ok()) return source.status();
  std::lock_guard lock(mutex_);
  std::string why = "no tuning database";
  if (Database* db = ReadDb(logs)) {
    auto stored = db->GetCubin(source->sha256, arch, "", nvrtc_version_);
    if (stored.ok()) return CubinFromRecord(*stored, source->uri);
    if (stored.status().code() != Code::kNotFound)
      logs->push_back({LogLevel::kWarning, "reading a cubin from the database failed: " + stored.status().ToString()});
    why = "no cubin for it in the database";
  } else if (unreadable_) {
    why = "the tuning database cannot be read";
  }
  logs->push_back({LogLevel::kInfo, "compiling " + source->uri + " for " + arch + " on first use (" + why + ")"});
  std::error_code ec;
  if (!write_db_ && std::filesystem::exists(path_, ec)) {
    auto db = Database::Open(path_);
    if (db.ok()) {
      write_db_ = std::move(*db);
    } else if (!reported_store_error_) {
      reported_store_error_ = true;
      logs->push_back({LogLevel::kWarning, "cannot store compiled kernels in " + path_ + ": " + db.status().ToString() +
                                               "; they are compiled in each process that uses them"});
    }
  }
  if (!write_db_) return compiler_.Compile(GeneratedSourceRequest(source->uri, source->text, arch));
  auto record = LoadOrCompileCubin(*write_db_, compiler_, variant, arch);
  if (!record.ok()) return record.status();
  return CubinFromRecord(*record, source->uri);
}

}  // namespace flashtune
