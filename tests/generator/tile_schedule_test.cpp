// templates/ft_tile_schedule.cuh on the host: the persistent causal forward's tile order takes
// every tile exactly once at any grid, deals equal work, and keeps a round's rows few; a tile
// visits exactly the K/V blocks its rows see, and a consumer warpgroup skips exactly the first
// visits none of its rows sees.
#include "templates/ft_tile_schedule.cuh"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

namespace {

// Block b's tile ids in order (skipped slots left out); fails the test past a sane slot count.
std::vector<int> TilesOf(int block, int blocks, int m, int rows, bool rotate = false) {
  std::vector<int> tiles;
  for (int slot = 0;; ++slot) {
    const int t = ft_sched::causal_pair_tile(slot, block, blocks, m, rows, rotate);
    if (t == ft_sched::kDone) {
      // Done stays done.
      for (int later = slot + 1; later < slot + 4; ++later)
        EXPECT_EQ(ft_sched::causal_pair_tile(later, block, blocks, m, rows, rotate), ft_sched::kDone);
      return tiles;
    }
    if (t != ft_sched::kSkip) tiles.push_back(t);
    if (slot > 2 * m * rows + 4) {
      ADD_FAILURE() << "block " << block << " of " << blocks << " never finishes (m " << m << ", rows " << rows << ")";
      return tiles;
    }
  }
}

// A square causal tile's K/V blocks: query block q sees q + 1 of them.
int Cost(int tile, int m) { return tile % m + 1; }

TEST(TileSchedule, EveryCausalTileExactlyOnceAtAnyGrid) {
  for (bool rotate : {false, true})
  for (int m : {1, 2, 3, 4, 7, 8, 16, 17, 32})
    for (int rows : {1, 2, 3, 16, 128, 512})
      for (int blocks : {1, 2, 5, 132, 264, 1000}) {
        std::vector<int> seen(size_t(m) * rows, 0);
        for (int b = 0; b < blocks; ++b)
          for (int t : TilesOf(b, blocks, m, rows, rotate)) {
            ASSERT_GE(t, 0);
            ASSERT_LT(t, m * rows);
            ++seen[size_t(t)];
          }
        for (size_t t = 0; t < seen.size(); ++t)
          ASSERT_EQ(seen[t], 1) << "tile " << t << " taken " << seen[t] << " times (m " << m << ", rows " << rows
                                << ", blocks " << blocks << ")";
      }
}

// The default grid's causal shapes (B * N = 16k at 132 SMs; query blocks of 128 rows): the
// busiest block does at most 4% more K/V blocks than the mean, and where the units divide
// evenly into the blocks, every block does the same.
TEST(TileSchedule, CausalBlocksDoNearlyEqualWork) {
  for (bool rotate : {false, true})
  for (int m : {4, 8, 16, 32, 64, 128}) {
    const int rows = 16 * 16384 / (m * 128);  // heads x batch
    for (int blocks : {132, 128}) {
      int most = 0;
      long total = 0;
      for (int b = 0; b < blocks; ++b) {
        int work = 0;
        for (int t : TilesOf(b, blocks, m, rows, rotate)) work += Cost(t, m);
        most = std::max(most, work);
        total += work;
      }
      const double mean = double(total) / blocks;
      EXPECT_LE(most, mean * 1.04) << "m " << m << ", blocks " << blocks;
      if (rows * ((m + 1) / 2) % blocks == 0) {
        EXPECT_EQ(double(most), mean) << "m " << m << ", blocks " << blocks;
      }
    }
  }
}

// L2 reuse: the tiles of one round (every block's first unit) come from about blocks / (m / 2)
// rows, not one row per block as longest-first dealt them.
TEST(TileSchedule, ARoundWorksOnFewRows) {
  const int m = 16, rows = 128, blocks = 132;
  std::set<int> round_rows;
  for (int b = 0; b < blocks; ++b)
    for (int slot : {0, 1}) round_rows.insert(ft_sched::causal_pair_tile(slot, b, blocks, m, rows) / m);
  EXPECT_LE(round_rows.size(), size_t(blocks / (m / 2) + 1));
  // Each block's two tiles of a round are one row's query blocks m-1-i and i: equal cost m + 1.
  for (int b = 0; b < blocks; ++b) {
    const int a = ft_sched::causal_pair_tile(0, b, blocks, m, rows), c = ft_sched::causal_pair_tile(1, b, blocks, m, rows);
    EXPECT_EQ(a / m, c / m);
    EXPECT_EQ(Cost(a, m) + Cost(c, m), m + 1);
  }
}

// Rotated, a round takes the same units (the same rows in flight), and each row's first pair
// (query blocks m-1 and 0: the one a split tail makes cheaper) spreads over the blocks even where
// a row's (m + 1) / 2 units divide the grid (m = 6, 3 units a row, 132 blocks: N 1k in 192-row
// tiles); unrotated, it falls to every third block only.
TEST(TileSchedule, RotatedCausalRoundsSpreadEachRowsFirstPair) {
  const int m = 6, rows = 512, blocks = 132;
  const int per_row = (m + 1) / 2, units = rows * per_row, whole = units / blocks;
  for (int slot = 0; slot < 2 * whole; slot += 2) {
    std::set<int> plain, rotated;
    for (int b = 0; b < blocks; ++b) {
      plain.insert(ft_sched::causal_pair_tile(slot, b, blocks, m, rows));
      rotated.insert(ft_sched::causal_pair_tile(slot, b, blocks, m, rows, true));
    }
    EXPECT_EQ(plain, rotated) << "round " << slot / 2;
  }
  auto most_first_pairs = [&](bool rotate) {
    int most = 0;
    for (int b = 0; b < blocks; ++b) {
      int first = 0;
      for (int t : TilesOf(b, blocks, m, rows, rotate)) first += t % m == m - 1;
      most = std::max(most, first);
    }
    return most;
  };
  EXPECT_LE(most_first_pairs(true), (rows + blocks - 1) / blocks + 1);
  EXPECT_GT(most_first_pairs(false), 2 * ((rows + blocks - 1) / blocks));  // what the rotation fixes
}

// Whether any of rows [r0, r1) below nq sees a key of block b (keys below nk; causal: j <= i + diag).
bool BlockSeen(int r0, int r1, int b, int block_n, int nq, int nk, int diag, bool causal) {
  for (int i = r0; i < std::min(r1, nq); ++i)
    for (int j = b * block_n; j < std::min((b + 1) * block_n, nk); ++j)
      if (!causal || j <= i + diag) return true;
  return false;
}

// By brute force over ragged shapes (Nq < Nk, Nq > Nk with rows that see no key, one-row and
// one-key sequences): a tile visits blocks 0 .. tile_blocks - 1, the last of which its rows see
// (nothing past it); a warpgroup's skipped visits are blocks none of its rows sees, and the
// first visit it keeps is one that some row sees (or it keeps none).
TEST(TileSchedule, WarpgroupsSkipExactlyTheBlocksTheirRowsDoNotSee) {
  int skipping = 0, dead = 0;
  for (bool causal : {false, true})
    for (int nq : {1, 17, 127, 200, 512, 1000})
      for (int nk : {1, 63, 130, 512, 1000})
        for (int block_m : {64, 128, 192})
          for (int block_n : {16, 64, 80, 112, 128, 192}) {
            const int diag = nk - nq;
            for (int m0 = 0; m0 < nq; m0 += block_m) {
              const int n = ft_sched::tile_blocks(m0, block_m, nq, nk, diag, block_n, causal);
              ASSERT_LE(n, (nk + block_n - 1) / block_n);
              const char* where = causal ? "causal" : "full";
              if (n > 0) {
                EXPECT_TRUE(BlockSeen(m0, m0 + block_m, n - 1, block_n, nq, nk, diag, causal))
                    << where << " nq " << nq << " nk " << nk << " m0 " << m0 << " bm " << block_m << " bn " << block_n;
              }
              EXPECT_FALSE(BlockSeen(m0, m0 + block_m, n, block_n, nq, nk, diag, causal)) << where << " nq " << nq << " m0 " << m0;
              for (int wg0 = m0; wg0 < m0 + block_m; wg0 += 64) {
                const int skip = ft_sched::unseen_blocks(wg0, 64, nq, diag, n, block_n, causal);
                ASSERT_GE(skip, 0);
                ASSERT_LE(skip, n);
                for (int it = 0; it < skip; ++it)
                  EXPECT_FALSE(BlockSeen(wg0, wg0 + 64, n - 1 - it, block_n, nq, nk, diag, causal))
                      << where << " nq " << nq << " nk " << nk << " tile " << m0 << " rows " << wg0 << " bn " << block_n;
                if (skip < n) {
                  EXPECT_TRUE(BlockSeen(wg0, wg0 + 64, n - 1 - skip, block_n, nq, nk, diag, causal))
                      << where << " nq " << nq << " nk " << nk << " tile " << m0 << " rows " << wg0 << " bn " << block_n;
                }
                skipping += skip > 0 && skip < n;
                dead += n > 0 && skip == n;
              }
            }
          }
  // Both kinds of skipping occur in these shapes (the test would pass vacuously otherwise).
  EXPECT_GT(skipping, 100);
  EXPECT_GT(dead, 100);
}

// Non-causal persistent tiles: every tile exactly once, round by round (a round's tiles are the
// next `blocks` tiles), and a row's last query block spread over the blocks instead of falling
// to the same ones when the query blocks a row divide the grid (N 1024 in 192-row tiles: 6 a
// row, 132 blocks).
TEST(TileSchedule, FullTilesOnceAndLastQueryBlocksSpread) {
  for (int blocks : {1, 7, 132})
    for (int m : {1, 3, 6, 11})
      for (int rows : {1, 5, 512}) {
        const int tiles = m * rows;
        std::vector<int> seen(tiles, 0);
        int most_last = 0;
        for (int b = 0; b < blocks; ++b) {
          int last = 0;
          for (int slot = 0;; ++slot) {
            const int t = ft_sched::full_tile(slot, b, blocks);
            ASSERT_GE(t, slot * blocks);
            ASSERT_LT(t, (slot + 1) * blocks);
            if (t >= tiles) break;
            ++seen[t];
            last += t % m == m - 1;
          }
          most_last = std::max(most_last, last);
        }
        for (int t = 0; t < tiles; ++t) ASSERT_EQ(seen[t], 1) << "tile " << t << " blocks " << blocks << " m " << m;
        // Each block takes at most its share of last query blocks, rounded up, plus one.
        EXPECT_LE(most_last, (rows + blocks - 1) / blocks + 1) << "blocks " << blocks << " m " << m << " rows " << rows;
      }
}

// A split tail (its blocks dealt to all warpgroups, each computing the first warpgroup's rows)
// is exactly a tile of two or more blocks whose every warpgroup but the first has all its rows
// past nq; the first then sees every block the tile visits, so no block is dealt that none of
// the tile's rows sees.
TEST(TileSchedule, SplitTailsAreTheTilesOfOneLiveWarpgroup) {
  int splits = 0;
  for (bool causal : {false, true})
    for (int nq : {1, 17, 64, 65, 127, 200, 512, 1000, 1024})
      for (int nk : {1, 63, 130, 512, 1000})
        for (int block_m : {128, 192})
          for (int block_n : {64, 80, 128}) {
            const int diag = nk - nq;
            for (int m0 = 0; m0 < nq; m0 += block_m) {
              const int n = ft_sched::tile_blocks(m0, block_m, nq, nk, diag, block_n, causal);
              bool others_dead = true;
              for (int wg0 = m0 + 64; wg0 < m0 + block_m; wg0 += 64)
                others_dead = others_dead && ft_sched::unseen_blocks(wg0, 64, nq, diag, n, block_n, causal) == n;
              const bool split = ft_sched::split_tail_tile(m0, nq, n, 64);
              EXPECT_EQ(split, others_dead && n >= 2) << "nq " << nq << " nk " << nk << " m0 " << m0 << " bm " << block_m;
              if (split) {
                EXPECT_EQ(ft_sched::unseen_blocks(m0, 64, nq, diag, n, block_n, causal), 0)
                    << "nq " << nq << " nk " << nk << " m0 " << m0 << " bn " << block_n;
                ++splits;
              }
            }
          }
  EXPECT_GT(splits, 50);
}

// Claims take every tile once: causal from the last query block down across the rows, not
// causal row by row (a row's tiles in a run, as the static rounds take them).
TEST(TileSchedule, ClaimsTakeEveryTileOnceInTheirOrder) {
  for (bool causal : {false, true})
    for (int m : {1, 2, 7, 13, 64})
      for (int rows : {1, 3, 32, 256}) {
        std::vector<int> seen(size_t(m) * rows, 0);
        int last_block = m;
        for (int c = 0; c < m * rows; ++c) {
          const int t = ft_sched::claim_tile(c, m, rows, causal);
          ASSERT_GE(t, 0);
          ASSERT_LT(t, m * rows);
          ++seen[size_t(t)];
          if (causal) {
            EXPECT_LE(t % m, last_block) << "claim " << c << " (m " << m << ", rows " << rows << ")";
            last_block = t % m;
          } else {
            EXPECT_EQ(t, c);
          }
        }
        for (size_t t = 0; t < seen.size(); ++t) ASSERT_EQ(seen[t], 1) << "tile " << t << " (m " << m << ")";
      }
}

// The causal work (K/V blocks times rows) of packed sequences `lens`, `heads` heads each, in
// tiles of block_m x block_n, over `blocks` persistent blocks: the busiest block's share over the
// mean, when each free block claims the next tile (the kernel's counter, in claim order, tiles
// past a sequence's end skipped), or with the static pair deal of a grid of the longest length.
double BusiestOverMean(const std::vector<int>& lens, int heads, int block_m, int block_n, int blocks, bool claims) {
  const int longest = *std::max_element(lens.begin(), lens.end());
  const int m = (longest + block_m - 1) / block_m, rows = heads * int(lens.size());
  auto cost = [&](int t) {
    const int len = lens[size_t(t / m / heads)];
    return double(ft_sched::tile_blocks(t % m * block_m, block_m, len, len, 0, block_n, true)) * block_m;
  };
  std::vector<double> load(size_t(blocks), 0.0);
  if (claims) {
    for (int c = 0; c < m * rows; ++c) {
      const int t = ft_sched::claim_tile(c, m, rows, true);
      if (t % m * block_m >= lens[size_t(t / m / heads)]) continue;
      *std::min_element(load.begin(), load.end()) += cost(t);
    }
  } else {
    for (int b = 0; b < blocks; ++b)
      for (int t : TilesOf(b, blocks, m, rows, true)) load[size_t(b)] += cost(t);
  }
  double sum = 0.0;
  for (double l : load) sum += l;
  return *std::max_element(load.begin(), load.end()) / (sum / blocks);
}

// Packed sequences of different lengths: the static pair deal assumes every row has the
// longest one's query blocks, so the blocks that draw the long sequences' pairs do up to 1.6x
// the mean; claimed in order, every block stays within 2% of it (10% for many short sequences
// of few heads, where a tile is a large part of a block's work, against 1.5x or more dealt).
TEST(TileSchedule, ClaimedTilesBalancePackedSequencesOfDifferentLengths) {
  const std::vector<int> ragged = {512, 1024, 1536, 2048, 2560, 3072, 2304, 3328};
  const std::vector<int> mixed = {4096, 17, 1000, 1, 0, 2048, 333, 4097};
  std::vector<int> many;
  for (int i = 0; i < 64; ++i) many.push_back(37 * i % 900 + 64);
  for (auto [block_m, block_n] : {std::pair{256, 64}, {192, 128}, {128, 128}}) {
    EXPECT_LE(BusiestOverMean(ragged, 32, block_m, block_n, 132, true), 1.02) << block_m;
    EXPECT_LE(BusiestOverMean(mixed, 32, block_m, block_n, 132, true), 1.02) << block_m;
    EXPECT_LE(BusiestOverMean(many, 4, block_m, block_n, 132, true), 1.10) << block_m;
    EXPECT_GE(BusiestOverMean(many, 4, block_m, block_n, 132, false), 1.5) << block_m;
    EXPECT_GE(BusiestOverMean(ragged, 32, block_m, block_n, 132, false), 1.15) << block_m;
  }
  EXPECT_GE(BusiestOverMean(ragged, 32, 256, 64, 132, false), 1.5);
}

}  // namespace
