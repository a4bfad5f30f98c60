// Where the backward kernels' scratch lives inside the caller's workspace (BackwardArgs): the
// one layout the size query (BackwardWorkspaceBytes) and the backward families' packing share.
// Thread safety: pure functions.
#pragma once

#include <cstdint>

#include "flashtune/variant.h"

namespace flashtune::detail {

// The smallest query tile a backward family may use: the ordering counters are sized per tile
// of this many rows, so any larger tile fits.
inline constexpr int kMinBackwardQueryTile = 16;

struct BackwardWorkspaceLayout {
  // The dq accumulator, fp32 [B, Hq, Nq, D], starts at offset 0.
  int64_t delta_offset = 0;     // rowsum(d_o ∘ o), fp32 [B, Hq, Nq]
  int64_t counters_offset = 0;  // int32 [B, Hq, counters_per_head]
  int64_t counters_per_head = 0;
  int64_t total_bytes = 0;
};

// Precondition: ValidateProblem(problem) is OK.
BackwardWorkspaceLayout BackwardWorkspaceLayoutFor(const Problem& problem);

}  // namespace flashtune::detail
