// tests/support/allocation_counter.h — counts the operator new calls of one thread in a scope.
// Every test binary links tests/support/allocation_counter.cpp, which replaces the global
// operator new / delete (malloc and free underneath) and counts only on a thread inside a
// CountAllocations scope, so the rest of a binary is unaffected. Scopes do not nest.
#pragma once

#include <cstdint>

namespace flashtune::testing {

class CountAllocations {
 public:
  CountAllocations();   // starts counting this thread's allocations from 0
  ~CountAllocations();  // stops
  CountAllocations(const CountAllocations&) = delete;
  CountAllocations& operator=(const CountAllocations&) = delete;
  int64_t count() const;  // operator new calls on this thread since construction
};

}  // namespace flashtune::testing
