// jit/tensor_map_cache.h (private) — encoded TMA tensor maps, remembered by what they encode.
//
// A tensor map (CUtensorMap, 128 bytes) is a pure function of its TensorMapRequest less the
// parameter offset: base pointer, dims, strides, box, element strides, swizzle, OOB fill, L2
// promotion, dtype. Encoding hopper_fwd's four maps every call made forward() 0.7 us slower than
// hits here do (bench/runtime_bench.cpp on an H200 host); a hit is a hash, a compare and a
// 128-byte copy. No entry can be stale: the same request always encodes to the same bytes,
// whatever memory now lives at the address, so entries are never invalidated, only replaced.
//
// Fixed capacity (kSets x kWays slots), set-associative, no allocation after construction; a
// full set replaces its slots round-robin. Thread safety: Lookup and Insert may run from any
// number of threads at once and never block. Each slot is a sequence lock (even = stable, odd =
// being written): a reader copies the slot and re-reads the sequence, and treats a torn copy as
// a miss; a writer that finds its slot busy drops the insert (its caller already holds the map).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "generator/launch_packet.h"

namespace flashtune::detail {

class TensorMapCache {
 public:
  static constexpr int kSets = 128;
  static constexpr int kWays = 4;
  static constexpr int kMapWords = 16;  // 128 bytes
  static constexpr int kKeyWords = 15;

  // Everything of a request that the encoded bytes depend on, packed into words (the offset,
  // where the map goes in the parameters, is not part of it).
  struct Key {
    std::array<uint64_t, kKeyWords> words{};
    uint64_t hash = 0;
    bool operator==(const Key& o) const { return words == o.words; }
  };
  static Key KeyOf(const TensorMapRequest& request);

  TensorMapCache() = default;
  TensorMapCache(const TensorMapCache&) = delete;
  TensorMapCache& operator=(const TensorMapCache&) = delete;

  // Copies the map cached for `key` to `out` (128 bytes, 8-byte aligned) and returns true; false
  // when absent (`out` may then have been written: a copy torn by a writer is a miss).
  bool Lookup(const Key& key, void* out) const;
  // Remembers `map` (128 bytes) for `key`; may evict another entry of its set.
  void Insert(const Key& key, const void* map);

  // The process's cache, shared by every Kernel: a map does not depend on the kernel, context
  // or device it is launched with. Static storage (about 128 KB), constructed on first use.
  static TensorMapCache& Shared();

 private:
  struct Slot {
    std::atomic<uint32_t> sequence{0};  // 0: never written; odd: a write is in progress
    std::array<std::atomic<uint64_t>, kKeyWords + kMapWords> words{};
  };
  std::array<Slot, kSets * kWays> slots_{};
  std::array<std::atomic<uint32_t>, kSets> next_victim_{};
};

}  // namespace flashtune::detail
