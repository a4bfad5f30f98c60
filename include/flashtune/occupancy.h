// flashtune/occupancy.h — how many CTAs of a compiled kernel one SM holds at once (the CUDA
// occupancy rules), from the arch table's per-SM limits: what the budgeted strategy uses to
// predict a variant's resident warps before measuring it.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>

namespace flashtune {

// What limits how many CTAs an SM holds at once (the CUDA occupancy rules).
struct SmLimits {
  int registers = 65536;            // per SM, allocated per warp in units of 256
  int64_t smem_bytes = 233472;      // per SM, for CTAs' shared memory
  int64_t smem_reserved_per_cta = 1024;
  int threads = 2048;
  int ctas = 32;
};
// The limits of compute capability major.minor (sm_80 … sm_120); unknown ones get the
// smallest of the known (100 KB shared memory, 1536 threads, 16 CTAs).
SmLimits SmLimitsFor(int cc_major, int cc_minor);
// CTAs of `threads` threads using `registers` per thread and `smem_bytes` of shared memory
// that one SM holds at once; 0 when one does not fit.
int ResidentCtasPerSm(const SmLimits& limits, int registers, int threads, int64_t smem_bytes);

}  // namespace flashtune
