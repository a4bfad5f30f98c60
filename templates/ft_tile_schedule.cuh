// The order in which a persistent causal forward block walks its tiles, which K/V blocks of a
// tile its consumer warpgroups read, and which tiles deal their blocks among them: functions
// for both sides, like ft_kernel_abi.cuh.
// hopper_fwd.cuh includes it (the generator inlines it into the NVRTC source); host tests
// include it to check that every tile is taken exactly once, how evenly the work is dealt, and
// that a warpgroup skips only blocks none of its rows sees. Plain C++ (no CUDA types); no
// state; safe from any thread.
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

// The tile of slot `slot` of block `block` of `blocks` for non-causal tiles (equal cost but for
// a sequence's last query block, which may hold fewer rows): round `slot` takes tiles
// [slot * blocks, (slot + 1) * blocks), the query blocks of few (head, batch) rows, whose K/V
// they share in L2, rotated by one block a round. Without the rotation a block took tiles
// block, block + blocks, ...: with 132 blocks and 3, 6 or 11 query blocks a row (N 512, 1k, 2k
// in 192-row tiles), which divide 132, every last query block fell to the same few blocks and
// the others' full tiles set the time (session 31: N 1024 took 24 / 20 the time of N 960).
FT_SCHED_FN int full_tile(int slot, int block, int blocks) { return slot * blocks + (block + slot) % blocks; }

// The tile of slot `slot` (0, 1, ...) of block `block` of `blocks`, for `rows` (head, batch)
// rows of `m` query blocks each: the tile id row * m + query block (the order the rows'
// tiles are numbered in), kSkip, or kDone (then every later slot is kDone too).
// `rotate`: a whole round's units go to the blocks rotated by one a round, as full_tile does
// for non-causal tiles. Units are of equal cost but for a row's first pair when the split tail
// makes its last query block cheaper; without the rotation, where the (m + 1) / 2 units of a
// row divide the grid, those cheap units all fall to the same blocks. (hopper_fwd rotates:
// its FT_HOPPER_CAUSAL_ROTATE knob, on since a GPU A/B in session 33.)
FT_SCHED_FN int causal_pair_tile(int slot, int block, int blocks, int m, int rows, bool rotate = false) {
  const int per_row = (m + 1) / 2;  // units per row: unit i = query blocks m-1-i and i
  const int units = rows * per_row;
  const int whole = units / blocks;  // rounds in which every block takes one unit
  const int left = units - whole * blocks;
  int unit, half;                    // half 0: the long tile (query block m-1-i); 1: the short one
  if (slot < 2 * whole) {
    unit = rotate ? full_tile(slot / 2, block, blocks) : (slot / 2) * blocks + block;
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

// The tile of claim `claim` (0, 1, ... m * rows - 1) when blocks claim their tiles at run time
// from a counter (hopper_fwd on packed sequences: their lengths live on the device, so no static
// deal can weigh them); the tile id row * m + query block. Causal: query block first, from the
// last (the most keys, and held only by the longest sequences) down, across every (head, batch)
// row: the expensive tiles are taken first and the cheap ones fill the end, which is what
// longest-first list scheduling needs to keep every block busy to the last round. Not causal:
// a row's tiles cost the same, so claims go row by row (tile id order), as the static deal's
// rounds do: the blocks in flight share their rows' K/V in L2 (query block first over every row
// took d64 B8 x 2048 4.7% longer, session 49).
FT_SCHED_FN int claim_tile(int claim, int m, int rows, bool causal) {
  if (!causal) return claim;
  const int level = claim / rows;
  return (claim - level * rows) * m + (m - 1 - level);
}

// The K/V blocks a forward tile visits: keys [0, tile_blocks * block_n) of a sequence of nq
// queries and nk keys, for the tile's rows [m0, m0 + rows) (query i sees keys j <= i + diag when
// causal). Rows at or past nq see nothing. The kernel visits them from the last to the first.
FT_SCHED_FN int tile_blocks(int m0, int rows, int nq, int nk, int diag, int block_n, bool causal) {
  if (m0 >= nq) return 0;
  const int all = (nk + block_n - 1) / block_n;
  if (!causal) return all;
  const int last_key = (m0 + rows < nq ? m0 + rows : nq) - 1 + diag;
  if (last_key < 0) return 0;
  return last_key / block_n + 1 < all ? last_key / block_n + 1 : all;
}

// How many of a tile's n_blocks first visits (blocks n_blocks - 1, n_blocks - 2, ...) no row of
// the warpgroup owning rows [wg_row0, wg_row0 + wg_rows) sees: the blocks past its causal
// diagonal (a tile's lower rows see fewer keys than the tile), or all of them when its rows all
// lie past nq. Skipping them is exact: a block whose every score is masked leaves a row's
// running softmax state as it found it, and these come before any block the rows see.
FT_SCHED_FN int unseen_blocks(int wg_row0, int wg_rows, int nq, int diag, int n_blocks, int block_n, bool causal) {
  int seen = wg_row0 < nq ? n_blocks : 0;
  if (causal && seen > 0) {
    const int last_key = (wg_row0 + wg_rows < nq ? wg_row0 + wg_rows : nq) - 1 + diag;
    seen = last_key < 0 ? 0 : (last_key / block_n + 1 < seen ? last_key / block_n + 1 : seen);
  }
  return n_blocks - seen;
}

// Whether a forward tile starting at query row m0 runs as a split tail: all its rows below nq lie
// in its first warpgroup's wg_rows (a sequence's last tile when nq - m0 <= 64), and it visits
// at least two K/V blocks, so its other warpgroups, whose rows are past the end, can take a
// share of the blocks instead of idling (visit `it` is warpgroup it % warpgroups's).
FT_SCHED_FN bool split_tail_tile(int m0, int nq, int n_blocks, int wg_rows) {
  return m0 < nq && nq - m0 <= wg_rows && n_blocks >= 2;
}

}  // namespace ft_sched

#endif  // FT_TILE_SCHEDULE_CUH_
