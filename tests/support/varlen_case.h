// tests/support/varlen_case.h — one packed varlen call for the GPU tests (kernels and runtime):
// random q/k/v of the given per-sequence lengths, their device copies, the poisoned o (with
// canary rows past total_q) and lse, and the float64 reference answer, sequence by sequence.
//
// Contract: MakeVarlenCase builds a valid call (cu_seqlens checked on the host); CheckVarlen
// reads o and lse back after a launch and says "" when they match the reference and no row
// past total_q was written, else why not. PoisonVarlen fills o (canary rows too) and lse with
// NaN bytes so an unwritten row fails.
// Thread safety: none; one gtest thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "flashtune/driver.h"
#include "flashtune/forward_args.h"
#include "flashtune/space.h"
#include "flashtune/variant.h"
#include "tests/support/gpu_fixture.h"

namespace flashtune::testing {

inline constexpr int64_t kVarlenCanaryRows = 64;  // poisoned rows of o after total_q

struct VarlenCase {
  std::string name;
  ForwardArgs device;
  std::vector<int32_t> cu_q, cu_k;
  std::vector<uint16_t> q, k, v;
  std::vector<double> expected_o, expected_lse;  // o [total_q, Hq, D], lse [Hq, total_q]
  std::vector<DeviceBuffer> buffers;             // q, k, v, o (+ canary rows), lse, cu_q, cu_k, workspace
  DeviceBuffer& o() { return buffers[3]; }
  DeviceBuffer& lse() { return buffers[4]; }
};

// Sequence b has len_q[b] queries and len_k[b] keys; problem Nq, Nk are the longest (at least 1);
// the workspace is WorkspaceBytes(problem) on the GPU.
VarlenCase MakeVarlenCase(Gpu& gpu, const ProblemClass& cls, int64_t hq, int64_t hkv, const std::vector<int32_t>& len_q,
                          const std::vector<int32_t>& len_k, uint64_t seed);

// 48 sequence lengths of 0 to 299 (37 i mod 300): over 32 query heads, the packed batch with
// tiles enough for a p3 kernel to claim them (HopperClaimsRepay), where smaller cases get the
// static deal.
std::vector<int32_t> ShortSequenceLengths();

// o (with its canary rows) and lse filled with 0xFF bytes; false when a memset failed or the
// case has no device buffers (an upload failed).
bool PoisonVarlen(VarlenCase& c);

// "" when o and lse match the reference and the canary rows are untouched, else why not.
std::string CheckVarlen(VarlenCase& c);

}  // namespace flashtune::testing
