// The tensor-map cache: see jit/tensor_map_cache.h.
#include "jit/tensor_map_cache.h"

#include <cstring>

namespace flashtune::detail {
namespace {

// The key words' weights in the hash: distinct odd constants, so the products are independent
// (no chain of dependent multiplies: four keys a call) and each word moves the sum.
constexpr uint64_t Weight(int i) { return (0x9E3779B97F4A7C15ull + uint64_t(i) * 0xBF58476D1CE4E5B9ull) | 1u; }

}  // namespace

TensorMapCache::Key TensorMapCache::KeyOf(const TensorMapRequest& r) {
  Key k;
  auto& w = k.words;
  w[0] = uint64_t(r.bf16) | uint64_t(r.rank) << 8 | uint64_t(r.swizzle) << 16 | uint64_t(r.oob_zero) << 24 |
         uint64_t(r.l2_promotion) << 32;
  w[1] = uint64_t(reinterpret_cast<uintptr_t>(r.base));
  for (int i = 0; i < 5; ++i) w[2 + i] = r.dims[i];
  for (int i = 0; i < 4; ++i) w[7 + i] = r.strides_bytes[i];
  w[11] = uint64_t(r.box[0]) | uint64_t(r.box[1]) << 32;
  w[12] = uint64_t(r.box[2]) | uint64_t(r.box[3]) << 32;
  w[13] = r.box[4];
  // Element strides are 1..8 when valid; a full byte each keeps invalid ones distinct too.
  for (int i = 0; i < 5; ++i) w[14] |= uint64_t(r.element_strides[i] & 0xFFu) << (8 * i);
  uint64_t h = 0;
  for (int i = 0; i < kKeyWords; ++i) h += w[i] * Weight(i);
  h ^= h >> 32;  // the set index takes low bits; aligned pointers leave them zero before mixing
  h *= 0xFF51AFD7ED558CCDull;
  k.hash = h ^ (h >> 29);
  return k;
}

bool TensorMapCache::Lookup(const Key& key, void* out) const {
  const size_t set = size_t(key.hash % kSets);
  for (int way = 0; way < kWays; ++way) {
    const Slot& slot = slots_[set * kWays + way];
    const uint32_t before = slot.sequence.load(std::memory_order_acquire);
    if (before == 0 || (before & 1u) != 0) continue;
    bool match = true;
    for (int i = 0; i < kKeyWords && match; ++i)
      match = slot.words[i].load(std::memory_order_relaxed) == key.words[i];
    if (!match) continue;
    // Straight into `out`: a torn copy is reported as a miss, and the caller then encodes over it.
    auto* map = static_cast<uint64_t*>(out);
    for (int i = 0; i < kMapWords; ++i) map[i] = slot.words[kKeyWords + i].load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (slot.sequence.load(std::memory_order_relaxed) != before) continue;  // torn by a writer: a miss
    return true;
  }
  return false;
}

void TensorMapCache::Insert(const Key& key, const void* map) {
  const size_t set = size_t(key.hash % kSets);
  // An empty slot of the set if there is one, else the set's next victim.
  int way = -1;
  for (int w = 0; w < kWays && way < 0; ++w)
    if (slots_[set * kWays + w].sequence.load(std::memory_order_relaxed) == 0) way = w;
  if (way < 0) way = int(next_victim_[set].fetch_add(1, std::memory_order_relaxed) % kWays);
  Slot& slot = slots_[set * kWays + way];
  uint32_t sequence = slot.sequence.load(std::memory_order_relaxed);
  if ((sequence & 1u) != 0 ||
      !slot.sequence.compare_exchange_strong(sequence, sequence + 1, std::memory_order_acquire,
                                             std::memory_order_relaxed))
    return;  // another writer has the slot
  std::atomic_thread_fence(std::memory_order_release);
  uint64_t words[kMapWords];
  std::memcpy(words, map, sizeof words);
  for (int i = 0; i < kKeyWords; ++i) slot.words[i].store(key.words[i], std::memory_order_relaxed);
  for (int i = 0; i < kMapWords; ++i) slot.words[kKeyWords + i].store(words[i], std::memory_order_relaxed);
  // Skip 0 on wrap-around: it means "never written".
  const uint32_t done = sequence + 2 == 0 ? 2 : sequence + 2;
  slot.sequence.store(done, std::memory_order_release);
}

TensorMapCache& TensorMapCache::Shared() {
  static TensorMapCache cache;
  return cache;
}

}  // namespace flashtune::detail
