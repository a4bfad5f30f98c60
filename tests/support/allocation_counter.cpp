// The replaced global operator new / delete behind CountAllocations (allocation_counter.h).
#include "tests/support/allocation_counter.h"

#include <cstdlib>
#include <new>

namespace {
thread_local bool t_counting = false;
thread_local int64_t t_count = 0;
}  // namespace

void* operator new(std::size_t size) {
  if (t_counting) ++t_count;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
// The nothrow forms too (std::stable_sort's buffer uses them): every form that the replaced
// operator delete frees must come from malloc.
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  if (t_counting) ++t_count;
  return std::malloc(size == 0 ? 1 : size);
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept { return operator new(size, tag); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace flashtune::testing {

CountAllocations::CountAllocations() {
  t_count = 0;
  t_counting = true;
}
CountAllocations::~CountAllocations() { t_counting = false; }
int64_t CountAllocations::count() const { return t_count; }

}  // namespace flashtune::testing
