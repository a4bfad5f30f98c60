// The order in which a persistent causal forward block walks its tiles: one function for both
// sides, like ft_kernel_abi.cuh. hopper_fwd.cuh includes it (the generator inlines it into the
// NVRTC source); host tests include it to check that every tile is taken exactly once and how
// evenly the work is dealt. Plain C++ (no CUDA types); no state; safe from any thread.
//
// A causal tile's cost grows with its query block: the last of m query blocks sees m K/V
// blocks (square attention), the first one. Pairing query block m-1-i with query block i of
// the same (head, batch) row makes units of equal cost (m + 1 K/V blocks), so a block that
// takes one unit per round does the same work as every other block, however the rounds fall;
// and the blocks of one round work on few rows (m/2 units each), so the K/V they read is shared
// in L2. The schedule before this one dealt the tiles longest first (every row's last query
// block, then the one before), which balanced as well but ran one tile of every row at once:
// at N 2k, 132 rows of K/V (128 MB at d128) for a 50 MB L2.
// Units left over after the whole rounds (fewer than the blocks) are split into their two
// tiles: the long ones first, then the short ones, dealt one to a block and back, so that no
// block takes a whole unit's work in the tail where others idle.
#ifndef FT_TILE_SCHEDULE_CUH_
#define FT_TILE_SCHEDULE_CUH_

#if defined(__CUDACC__)
#define FT_SCHED_FN __host__ __device__ __forceinline__
#else
#define FT_SCHED_FN inline
#endif

namespace ft_sched {

constexpr int kSkip = -1;  // this slot holds no tile (an odd m's middle unit has one): take the next slot
constexpr int kDone = -2;  // the block has no tile left

// The tile of slot `slot` (0, 1, ...) of block `block` of `blocks`, for `rows` (head, batch)
// rows of `m` query blocks each: the tile id row * m + query block (the order the rows'
// tiles are numbered in), kSkip, or kDone (then every later slot is kDone too).
FT_SCHED_FN int causal_pair_tile(int slot, int block, int blocks, int m, int rows) {
  const int per_row = (m + 1) / 2;  // units per row: unit i = query blocks m-1-i and i
  const int units = rows * per_row;
  const int whole = units / blocks;  // rounds in which every block takes one unit
  const int left = units - whole * blocks;
  int unit, half;                    // half 0: the long tile (query block m-1-i); 1: the short one
  if (slot < 2 * whole) {
    unit = (slot / 2) * blocks + block;
    half = slot & 1;
  } else {
    // The tail: the left units' long tiles (q < left), then their short tiles in reverse
    // (q >= left), dealt to blocks 0, 1, ... and then back from the last block.
    const int j = slot - 2 * whole;
    if (j > 1) return kDone;
    const int q = j == 0 ? block : 2 * blocks - 1 - block;
    if (q >= 2 * left) return kDone;
    unit = whole * blocks + (q < left ? q : 2 * left - 1 - q);
    half = q < left ? 0 : 1;
  }
  const int row = unit / per_row, i = unit % per_row;
  if (half == 1 && i == m - 1 - i) return kSkip;
  return row * m + (half == 0 ? m - 1 - i : i);
}

}  // namespace ft_sched

#endif  // FT_TILE_SCHEDULE_CUH_
