// templates/ft_tile_schedule.cuh on the host: the persistent causal forward's tile order takes
// every tile exactly once at any grid, deals equal work, and keeps a round's rows few.
#include "templates/ft_tile_schedule.cuh"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

namespace {

// Block b's tile ids in order (skipped slots left out); fails the test past a sane slot count.
std::vector<int> TilesOf(int block, int blocks, int m, int rows) {
  std::vector<int> tiles;
  for (int slot = 0;; ++slot) {
    const int t = ft_sched::causal_pair_tile(slot, block, blocks, m, rows);
    if (t == ft_sched::kDone) {
      // Done stays done.
      for (int later = slot + 1; later < slot + 4; ++later)
        EXPECT_EQ(ft_sched::causal_pair_tile(later, block, blocks, m, rows), ft_sched::kDone);
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
  for (int m : {1, 2, 3, 4, 7, 8, 16, 17, 32})
    for (int rows : {1, 2, 3, 16, 128, 512})
      for (int blocks : {1, 2, 5, 132, 264, 1000}) {
        std::vector<int> seen(size_t(m) * rows, 0);
        for (int b = 0; b < blocks; ++b)
          for (int t : TilesOf(b, blocks, m, rows)) {
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
  for (int m : {4, 8, 16, 32, 64, 128}) {
    const int rows = 16 * 16384 / (m * 128);  // heads x batch
    for (int blocks : {132, 128}) {
      int most = 0;
      long total = 0;
      for (int b = 0; b < blocks; ++b) {
        int work = 0;
        for (int t : TilesOf(b, blocks, m, rows)) work += Cost(t, m);
        most = std::max(most, work);
        total += work;
      }
      const double mean = double(total) / blocks;
      EXPECT_LE(most, mean * 1.04) << "m " << m << ", blocks " << blocks;
      if (rows * ((m + 1) / 2) % blocks == 0) EXPECT_EQ(double(most), mean) << "m " << m << ", blocks " << blocks;
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

}  // namespace
