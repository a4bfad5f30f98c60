// launch_table.h — forward()'s launch cache: a hash table from (CUDA context, bucket code) to
// the kernel to launch, which readers search without taking any lock.
//
// Contract: entries are never removed; a key's value may be replaced (Publish of a key already
// present), which is how online tuning swaps a bucket's guess for its tuned winner. A reader
// sees, for a key, either nothing (not yet published) or one of the values published for it —
// never a torn or freed one, as long as published values outlive the table (the Launcher owns
// its kernels for the runtime's life). Find never allocates, locks or waits.
//
// How: open addressing with linear probing over slots of atomics. A slot is claimed by writing
// its key, then its value with release order; a reader loads the value with acquire order first
// (null ends the probe: slots are never emptied) and then compares the key. When the table is
// half full the writer builds one twice the size and publishes it with one atomic store; the old
// tables stay allocated until the LaunchTable dies, because a reader may still be probing one
// (their sizes halve, so all of them together take at most the size of the current one again).
//
// Thread safety: Find from any number of threads at any time; Publish and ForEach from one
// thread at a time (the Launcher's load mutex serialises them).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace flashtune {

template <typename Value>
class LaunchTable {
 public:
  LaunchTable() { Grow(kInitialSlots); }
  LaunchTable(const LaunchTable&) = delete;
  LaunchTable& operator=(const LaunchTable&) = delete;

  // The value published for (context, code), or null. Lock-free.
  const Value* Find(const void* context, uint64_t code) const {
    const Table* t = current_.load(std::memory_order_acquire);
    for (size_t i = Hash(context, code) & t->mask;; i = (i + 1) & t->mask) {
      const Slot& s = t->slots[i];
      const Value* v = s.value.load(std::memory_order_acquire);
      if (v == nullptr) return nullptr;
      if (s.context.load(std::memory_order_relaxed) == context && s.code.load(std::memory_order_relaxed) == code)
        return v;
    }
  }

  // Maps (context, code) to `value` (not null), replacing what was there. One writer at a time.
  void Publish(const void* context, uint64_t code, const Value* value) {
    Table* t = current_.load(std::memory_order_relaxed);
    if (Slot* s = Locate(*t, context, code); s->value.load(std::memory_order_relaxed) != nullptr) {
      s->value.store(value, std::memory_order_release);  // the swap: readers see old or new
      return;
    }
    if (2 * (t->used + 1) > t->mask + 1) t = Grow(2 * (t->mask + 1));
    Claim(*t, context, code, value);
  }

  // Calls f(context, code, value) for every entry. One writer at a time (not concurrent with
  // Publish).
  template <typename F>
  void ForEach(F&& f) const {
    const Table* t = current_.load(std::memory_order_relaxed);
    for (size_t i = 0; i <= t->mask; ++i) {
      const Slot& s = t->slots[i];
      if (const Value* v = s.value.load(std::memory_order_relaxed))
        f(s.context.load(std::memory_order_relaxed), s.code.load(std::memory_order_relaxed), v);
    }
  }

 private:
  static constexpr size_t kInitialSlots = 64;  // a power of two
  struct Slot {
    std::atomic<const void*> context{nullptr};
    std::atomic<uint64_t> code{0};
    std::atomic<const Value*> value{nullptr};
  };
  struct Table {
    size_t mask = 0;
    size_t used = 0;
    std::unique_ptr<Slot[]> slots;
  };

  static size_t Hash(const void* context, uint64_t code) {
    uint64_t h = (reinterpret_cast<uintptr_t>(context) >> 4) ^ (code * 0x9e3779b97f4a7c15ull);
    return static_cast<size_t>(h ^ (h >> 29));
  }
  // The slot holding the key, else the empty slot where it would go.
  static Slot* Locate(Table& t, const void* context, uint64_t code) {
    for (size_t i = Hash(context, code) & t.mask;; i = (i + 1) & t.mask) {
      Slot& s = t.slots[i];
      if (s.value.load(std::memory_order_relaxed) == nullptr) return &s;
      if (s.context.load(std::memory_order_relaxed) == context && s.code.load(std::memory_order_relaxed) == code)
        return &s;
    }
  }
  static void Claim(Table& t, const void* context, uint64_t code, const Value* value) {
    Slot* s = Locate(t, context, code);
    s->context.store(context, std::memory_order_relaxed);
    s->code.store(code, std::memory_order_relaxed);
    s->value.store(value, std::memory_order_release);  // publishes the key with it
    ++t.used;
  }
  Table* Grow(size_t slots) {
    auto next = std::make_unique<Table>();
    next->mask = slots - 1;
    next->slots = std::make_unique<Slot[]>(slots);
    if (!tables_.empty()) ForEach([&](const void* c, uint64_t k, const Value* v) { Claim(*next, c, k, v); });
    Table* raw = next.get();
    tables_.push_back(std::move(next));
    current_.store(raw, std::memory_order_release);
    return raw;
  }

  std::atomic<Table*> current_{nullptr};
  std::vector<std::unique_ptr<Table>> tables_;  // every table ever published; the last is current_
};

}  // namespace flashtune
