// forward()'s lock-free launch cache: lookups, swaps and growth while readers search it.
#include "runtime/launch_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace flashtune {
namespace {

const void* Context(int i) { return reinterpret_cast<const void*>(static_cast<uintptr_t>(0x1000 * (i + 1))); }

TEST(LaunchTable, FindsWhatWasPublishedAndNothingElse) {
  LaunchTable<int> table;
  int a = 1, b = 2;
  EXPECT_EQ(table.Find(Context(0), 7), nullptr);
  table.Publish(Context(0), 7, &a);
  table.Publish(Context(1), 7, &b);
  EXPECT_EQ(table.Find(Context(0), 7), &a);
  EXPECT_EQ(table.Find(Context(1), 7), &b);
  EXPECT_EQ(table.Find(Context(0), 8), nullptr);
  table.Publish(Context(0), 7, &b);  // a swap replaces, it does not add
  EXPECT_EQ(table.Find(Context(0), 7), &b);
  int entries = 0;
  table.ForEach([&](const void*, uint64_t, const int*) { ++entries; });
  EXPECT_EQ(entries, 2);
}

TEST(LaunchTable, GrowsPastItsFirstSizeKeepingEveryEntry) {
  LaunchTable<int> table;
  std::vector<int> values(5000);
  for (int i = 0; i < 5000; ++i) table.Publish(Context(i % 3), static_cast<uint64_t>(i), &values[i]);
  for (int i = 0; i < 5000; ++i) ASSERT_EQ(table.Find(Context(i % 3), static_cast<uint64_t>(i)), &values[i]) << i;
  EXPECT_EQ(table.Find(Context(3), 0), nullptr);
}

// Readers search keys that are present from the start while the writer swaps their values
// between two objects and grows the table with new keys: a reader must always find one of the
// two values (never null, never another key's), and see the last swap once the writer is done.
TEST(LaunchTable, ReadersSeeTheOldOrTheNewValueDuringSwapsAndGrowth) {
  LaunchTable<int> table;
  constexpr int kKeys = 16;
  std::vector<int> old_values(kKeys), new_values(kKeys), extra(4000);
  for (int k = 0; k < kKeys; ++k) table.Publish(Context(0), static_cast<uint64_t>(k), &old_values[k]);
  std::atomic<bool> done{false};
  std::atomic<long> bad{0}, reads{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&] {
      while (!done.load(std::memory_order_acquire)) {
        for (int k = 0; k < kKeys; ++k) {
          const int* v = table.Find(Context(0), static_cast<uint64_t>(k));
          if (v != &old_values[k] && v != &new_values[k]) ++bad;
        }
        ++reads;
      }
    });
  }
  // The writer starts once the readers run, and swaps until they have searched 300 times more
  // (a loaded machine may schedule them late; at most 20 s); growth comes in the first 200 rounds.
  while (reads.load() < 3) std::this_thread::yield();
  const long reads_at_start = reads.load();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (int round = 0;
       round < 200 || (reads.load() < reads_at_start + 300 && std::chrono::steady_clock::now() < deadline); ++round) {
    for (int k = 0; k < kKeys; ++k)
      table.Publish(Context(0), static_cast<uint64_t>(k), round % 2 ? &old_values[k] : &new_values[k]);
    if (round < 200)
      for (int e = round * 20; e < round * 20 + 20; ++e) table.Publish(Context(1), static_cast<uint64_t>(e), &extra[e]);
  }
  for (int k = 0; k < kKeys; ++k) table.Publish(Context(0), static_cast<uint64_t>(k), &old_values[k]);
  done.store(true, std::memory_order_release);
  for (auto& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GE(reads.load(), reads_at_start + 300);
  for (int k = 0; k < kKeys; ++k) EXPECT_EQ(table.Find(Context(0), static_cast<uint64_t>(k)), &old_values[k]);
}

}  // namespace
}  // namespace flashtune
