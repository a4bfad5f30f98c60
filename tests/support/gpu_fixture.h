// tests/support/gpu_fixture.h — the GPU the GPU tests and probes run on: the driver, device 0
// with its primary context made current, and one stream, opened once per process.
//
// Contract: SharedGpu() opens it on the first call and returns the same object (or the same
// error: no driver, kNoDevice, ...) on every later one, so a test without a GPU can
// GTEST_SKIP with the reason. Upload copies host bytes into a fresh device buffer.
// Thread safety: the first call may race with no other; afterwards the object is shared
// read-only (the stream is the caller's to serialise).
#pragma once

#include <cstddef>
#include <optional>

#include "flashtune/driver.h"
#include "flashtune/status.h"

namespace flashtune::testing {

struct TestGpu {
  Driver* driver = nullptr;
  std::optional<Context> context;
  std::optional<Stream> stream;
  DeviceInfo info;
};

// The process's GPU, or why there is none.
Result<TestGpu*> SharedGpu();

// A device buffer of max(bytes, 16) bytes holding `host` (uninitialised when `host` is null).
Result<DeviceBuffer> Upload(const TestGpu& gpu, const void* host, size_t bytes);

}  // namespace flashtune::testing
