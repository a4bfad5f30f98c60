// flashtune/neighbour_guess.h — a plan for a class nobody tuned (dtype, head dim, causal), taken
// from the winners of the classes next to it, before a family's fixed default tile.
//
// Why: a tuned tile carries what the GPU showed (tile shape, warps, pipeline depth) for that
// size of problem; the same tile on a class one step away is usually closer to that class's
// optimum than a default fixed for every GPU (issue 17: d256 ran at 0.64x FA-2 on the default
// tile, 0.88x tuned). Neighbours, nearest first:
//   1. the same head dim and causal flag, the other dtype (same instructions, same resources);
//   2. the next larger tuned head dim, up to 2x, same causal flag (same dtype first): a tile
//      that fitted a larger head dim fits a smaller one (shared memory and registers grow
//      with D). Never a smaller head dim: its tiles are sized for less work per row;
//   3. the same, with the other causal flag.
// Measured on recorded H200 timings (tests/cache/neighbour_guess_test.cpp, every fa2_fwd
// candidate of d64 and d128): the other dtype's winner is within 0.3% of the tuned optimum
// (geometric mean; worst 1.4%), d128's winner on d64 within 3.1% (FA-2's default tile: 4.5-
// 8.8%); d64's winner on d128 was 11-22% off, hence rule 2.
// Within a neighbour class, the winner of the bucket nearest the requested one (BucketDistance
// with the class fields aligned; ties, and several rows of one bucket: the smaller median).
// The winner's variant is then re-specialised to the requested class and kept only when its family serves that class on the
// target and accepts it (Family::Check: its rules and the target's shared memory); otherwise the
// next neighbour is tried. No neighbour fits: nullopt, and the caller takes the default tile.
//
// Thread safety: pure functions, except the Database overload, which uses `db` like any other
// Database call (one thread at a time per connection).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "flashtune/database.h"
#include "flashtune/problem_set.h"
#include "flashtune/status.h"
#include "flashtune/variant.h"

namespace flashtune {

struct NeighbourGuess {
  Variant variant;     // the neighbour's winner re-specialised to the requested class
  WinnerRow from;      // the winner it came from
  std::string reason;  // "other dtype", "next larger head dim", ... (for plan.why)
};

// The guess for `bucket` from `winners` (measured on this GPU model with this toolchain; the
// caller filters), on NVRTC target `arch` with `max_smem_bytes` of shared memory per block.
// Winners of the requested class itself are ignored (that is the nearest-bucket rule's job).
std::optional<NeighbourGuess> GuessFromNeighbours(const std::vector<WinnerRow>& winners, const BucketKey& bucket,
                                                  std::string_view arch, int64_t max_smem_bytes);

// The same over `db`'s winners for `device`'s model and `toolchain` (Database::ListWinnersFor).
// A neighbour whose winner's family does not serve the class (hopper_fwd has no d96) offers
// instead the fastest verified variant of each other family measured on its tuned problem.
// The database's error when it cannot be read.
Result<std::optional<NeighbourGuess>> GuessFromNeighbours(Database& db, const DeviceRecord& device,
                                                          const ToolchainInfo& toolchain, const BucketKey& bucket,
                                                          std::string_view arch, int64_t max_smem_bytes);

}  // namespace flashtune
