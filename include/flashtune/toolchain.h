// flashtune/toolchain.h — the identity of what this build compiles kernels with: NVRTC's
// version, flashtune's version and the hash of the embedded kernel templates. The database
// keys trials, winners and cubins on it (ToolchainInfo, database.h): a change in any field makes
// earlier timings stale, so the tuner and the runtime must compute it the same way — here.
//
// Thread safety: a pure function of the build; safe from any thread.
#pragma once

#include "flashtune/database.h"
#include "flashtune/export.h"

FLASHTUNE_API_BEGIN
namespace flashtune {

// This build's toolchain: NVRTC version, flashtune version, TemplateHash() (source.h).
ToolchainInfo CurrentToolchain();

}  // namespace flashtune
FLASHTUNE_API_END
