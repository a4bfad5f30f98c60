// flashtune/arch.h — what flashtune knows about each GPU architecture it can target: one row per
// compute capability, the only table of GPU facts in the project.
//
// A row holds the NVRTC target name (arch-specific "sm_90a" from 9.0 on, where Hopper-only
// instructions need it; plain "sm_80" before), the opt-in shared memory one block may use, the
// SM limits that decide occupancy (registers, shared memory, threads and CTAs per SM) and the
// instructions a kernel family may rely on (cp.async from sm_80, wgmma on sm_90a only). Values
// are the CUDA programming guide's per-compute-capability table.
//
// One rule for every command and the runtime: an arch is known when its compute capability has a
// row; "sm_90" and "sm_90a" name the same row (the suffix is accepted from 9.0 on). An unknown
// arch is refused (ParseGpuArch) — a kernel compiled for a target without cp.async fails anyway.
//
// Thread safety: constant data and pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "flashtune/status.h"

namespace flashtune {

struct GpuArch {
  int cc_major = 0;
  int cc_minor = 0;
  int64_t max_smem_per_block_optin = 0;  // bytes a block may use after raising the attribute
  int registers_per_sm = 0;              // allocated per warp in units of 256
  int64_t smem_per_sm = 0;               // bytes for all resident CTAs' shared memory
  int threads_per_sm = 0;
  int ctas_per_sm = 0;
  bool cp_async = false;                 // asynchronous global→shared copies (sm_80+)
  bool wgmma = false;                    // warpgroup MMA (sm_90a)

  // The NVRTC target flashtune compiles for: ArchFor(cc_major, cc_minor).
  std::string Name() const;
};

// Every known arch, by compute capability ascending.
std::span<const GpuArch> KnownGpuArchs();
// The row of compute capability major.minor; nullptr when unknown.
const GpuArch* FindGpuArch(int cc_major, int cc_minor);
// The row an NVRTC target names ("sm_90a", "sm_90", "sm_86"); kInvalidArgument naming the
// target and the known ones when unknown or malformed.
Result<GpuArch> ParseGpuArch(std::string_view arch);

// The NVRTC target for a compute capability: arch-specific ("sm_90a") from 9.0 on, plain
// ("sm_80") before. Defined for any compute capability, known or not.
std::string ArchFor(int cc_major, int cc_minor);

// The opt-in dynamic shared-memory limit per block of a target ("sm_80", "sm_90a", ...):
// sm_80/sm_87: 166912, sm_86/sm_89/sm_120/sm_121: 101376, sm_90(a)/sm_100(a)/sm_103(a): 232448.
// 0 for an arch the table does not know.
int64_t MaxSharedMemoryForArch(std::string_view arch);
// The targets the table knows, comma-separated (for error messages): "sm_80, sm_86, ...".
std::string KnownArchs();

}  // namespace flashtune
