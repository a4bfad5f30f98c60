// flashtune/cubin_store.h — compiled kernels kept in the tuning database, so the runtime can
// launch a tuned problem's winner without NVRTC.
//
// A stored cubin is keyed by (source sha256, arch, NVRTC options, NVRTC version): a template
// change, another GPU arch or another NVRTC never reuses it.
//
// Thread safety: as the Database passed in (one thread per Database object).
#pragma once

#include <string>

#include "flashtune/compiler.h"
#include "flashtune/database.h"
#include "flashtune/variant.h"

namespace flashtune {

// Returns the variant's cubin for `arch` from the database, else compiles it (through the
// compiler's on-disk cache) and stores it. kInvalidArgument for an invalid variant or arch,
// kCompileError with NVRTC's log, kDatabaseError from SQLite.
Result<CubinRecord> LoadOrCompileCubin(Database& db, const Compiler& compiler, const Variant& variant,
                                       const std::string& arch);

// Converts between the database's record and the compiler's value type.
Cubin CubinFromRecord(const CubinRecord& record, const std::string& name);

}  // namespace flashtune
