// The GPU the kernel tests run on, and the shapes they share: one place for the device set-up
// (driver, primary context, one stream) and for head-major strides.
// Thread safety: TestGpu() initialises once (a function-local static); tests use it from the
// gtest thread.
#pragma once

#include <cstdint>
#include <optional>

#include "flashtune/driver.h"
#include "flashtune/forward_args.h"
#include "flashtune/status.h"

namespace flashtune::testing {

struct Gpu {
  Driver* driver = nullptr;
  std::optional<Context> context;  // device 0's primary context, current
  std::optional<Stream> stream;
  DeviceInfo info;
};

// Device 0, set up once; the reason (kNoDriver, kNoDevice, ...) when there is none, for the
// test to skip with.
Result<Gpu*> GetGpu();

// One test shape: q [B, Nq, Hq, D], k/v [B, Nk, Hkv, D].
struct Shape {
  int64_t batch, seqlen_q, seqlen_k, heads_q, heads_kv;
  bool head_major;  // memory [B, H, N, D] viewed as [B, N, H, D]: non-contiguous strides
};

// Strides of a [B, seqlen, heads, d] view of `s`'s layout.
inline Strides StridesFor(const Shape& s, int64_t seqlen, int64_t heads, int64_t d) {
  if (!s.head_major) return Strides::Contiguous(seqlen, heads, d);
  return Strides{heads * seqlen * d, d, seqlen * d};
}

}  // namespace flashtune::testing
