// CPU tests of the cache of encoded tensor maps (jit/tensor_map_cache.h): what makes two
// requests the same map, what eviction keeps, and that concurrent readers never see a torn map.
#include "jit/tensor_map_cache.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

namespace flashtune::detail {
namespace {

TensorMapRequest Request(uintptr_t base) {
  TensorMapRequest r;
  r.offset = 0;
  r.rank = 4;
  r.base = reinterpret_cast<const void*>(base);
  const uint64_t dims[4] = {128, 8, 1000, 2};
  for (int i = 0; i < 4; ++i) r.dims[i] = dims[i];
  r.strides_bytes[0] = 256;
  r.strides_bytes[1] = 2048;
  r.strides_bytes[2] = 2048000;
  r.box[0] = 64;
  r.box[1] = 1;
  r.box[2] = 128;
  r.box[3] = 1;
  r.swizzle = TensorMapRequest::Swizzle::k128B;
  return r;
}

// A stand-in for an encoded map whose every word says which key it belongs to.
struct alignas(64) Map {
  std::array<uint64_t, 16> words{};
};
Map MapFor(const TensorMapCache::Key& key) {
  Map m;
  for (int i = 0; i < 16; ++i) m.words[i] = key.hash * 31 + uint64_t(i);
  return m;
}

TEST(TensorMapCache, HitReturnsTheInsertedBytes) {
  auto cache = std::make_unique<TensorMapCache>();
  const auto key = TensorMapCache::KeyOf(Request(0x10000));
  Map out;
  EXPECT_FALSE(cache->Lookup(key, &out));
  const Map in = MapFor(key);
  cache->Insert(key, &in);
  ASSERT_TRUE(cache->Lookup(key, &out));
  EXPECT_EQ(out.words, in.words);
}

TEST(TensorMapCache, EveryEncodedFieldIsPartOfTheKey) {
  const TensorMapRequest base = Request(0x10000);
  const auto k0 = TensorMapCache::KeyOf(base);
  std::vector<TensorMapRequest> changed(12, base);
  changed[0].base = reinterpret_cast<const void*>(uintptr_t(0x10010));
  changed[1].bf16 = false;
  changed[2].rank = 3;
  changed[3].dims[2] = 999;
  changed[4].strides_bytes[1] = 4096;
  changed[5].box[2] = 64;
  changed[6].box[0] = 32;
  changed[7].element_strides[1] = 2;
  changed[8].swizzle = TensorMapRequest::Swizzle::k64B;
  changed[9].oob_zero = false;
  changed[10].l2_promotion = 128;
  changed[11].dims[3] = 3;
  for (size_t i = 0; i < changed.size(); ++i) EXPECT_FALSE(TensorMapCache::KeyOf(changed[i]) == k0) << i;
  // Where the map goes in the parameters does not change its bytes.
  TensorMapRequest moved = base;
  moved.offset = 256;
  EXPECT_TRUE(TensorMapCache::KeyOf(moved) == k0);
  EXPECT_EQ(TensorMapCache::KeyOf(moved).hash, k0.hash);
}

TEST(TensorMapCache, DifferentKeysDoNotAlias) {
  auto cache = std::make_unique<TensorMapCache>();
  const auto a = TensorMapCache::KeyOf(Request(0x10000));
  TensorMapRequest rb = Request(0x10000);
  rb.dims[2] = 1001;
  const auto b = TensorMapCache::KeyOf(rb);
  const Map ma = MapFor(a);
  cache->Insert(a, &ma);
  Map out;
  EXPECT_FALSE(cache->Lookup(b, &out));
}

TEST(TensorMapCache, CapacityIsBoundedAndRecentEntriesStay) {
  auto cache = std::make_unique<TensorMapCache>();
  constexpr int kCapacity = TensorMapCache::kSets * TensorMapCache::kWays;
  std::vector<TensorMapCache::Key> keys;
  for (int i = 0; i < 4 * kCapacity; ++i) keys.push_back(TensorMapCache::KeyOf(Request(0x100000 + 16 * uintptr_t(i))));
  for (const auto& k : keys) {
    const Map m = MapFor(k);
    cache->Insert(k, &m);
  }
  int hits = 0;
  for (const auto& k : keys) {
    Map out;
    if (cache->Lookup(k, &out)) {
      ++hits;
      EXPECT_EQ(out.words, MapFor(k).words);
    }
  }
  EXPECT_LE(hits, kCapacity);
  EXPECT_GT(hits, kCapacity / 2);  // the hash spreads keys over the sets
  // The last few inserted (fewer than one set's ways each) are all still there.
  for (int i = 4 * kCapacity - 4; i < 4 * kCapacity; ++i) {
    Map out;
    EXPECT_TRUE(cache->Lookup(keys[size_t(i)], &out)) << i;
  }
}

TEST(TensorMapCache, ConcurrentReadersNeverSeeATornMap) {
  // Few keys in few sets, many writers replacing each other: a reader that gets a hit must get
  // exactly the map of the key it asked for.
  auto cache = std::make_unique<TensorMapCache>();
  std::vector<TensorMapCache::Key> keys;
  for (int i = 0; i < 64; ++i) keys.push_back(TensorMapCache::KeyOf(Request(0x200000 + 16 * uintptr_t(i))));
  std::atomic<bool> stop{false};
  std::atomic<int64_t> hits{0}, wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      uint64_t x = uint64_t(t) * 7919 + 1;
      while (!stop.load(std::memory_order_relaxed)) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        const auto& k = keys[(x >> 33) % keys.size()];
        if (t % 2 == 0) {
          const Map m = MapFor(k);
          cache->Insert(k, &m);
        } else {
          Map out;
          if (cache->Lookup(k, &out)) {
            hits.fetch_add(1, std::memory_order_relaxed);
            if (out.words != MapFor(k).words) wrong.fetch_add(1, std::memory_order_relaxed);
          }
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  stop = true;
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(hits.load(), 0);
}

}  // namespace
}  // namespace flashtune::detail
