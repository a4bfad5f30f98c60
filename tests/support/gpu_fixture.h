// tests/support/gpu_fixture.h — what the kernel tests against the float64 reference share: the
// GPU (the driver, device 0 with its primary context made current, and one stream, opened once
// per process), compiling and loading variants for it, a poisoned launch and the verdict.
//
// Contract: SharedGpu() opens the GPU on the first call and returns the same object (or the
// same error: no driver, kNoDevice, ...) on every later one, so a test without a GPU can
// GTEST_SKIP with the reason. Upload copies host bytes into a fresh device buffer.
// Thread safety: the first call may race with no other; afterwards the object is shared
// read-only (the stream is the caller's to serialise).
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "flashtune/driver.h"
#include "flashtune/kernel.h"
#include "flashtune/status.h"
#include "flashtune/variant.h"

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

// Compiles every variant for the GPU's arch (NVRTC, all at once) and loads it: one result per
// variant, in order; a generation, compile or load error is that variant's status.
std::vector<Result<ForwardKernel>> CompileAndLoad(const TestGpu& gpu, const std::vector<Variant>& variants);

// Fills `o` and `lse` with 0xFF bytes (NaN: an element the kernel does not write fails the
// comparison), launches `kernel` on `args` and waits. "" when it ran, else the error.
std::string LaunchPoisoned(const TestGpu& gpu, const ForwardKernel& kernel, const ForwardArgs& args, DeviceBuffer& o,
                           DeviceBuffer& lse);

// The verdict on one output: "" when o is within the dtype's relative L2 tolerance of the
// reference (bf16 1e-2, f16 2e-3) and lse within 1e-3 with the same -inf rows, else the numbers.
std::string CompareWithReference(DType dtype, std::span<const double> o, std::span<const float> lse,
                                 std::span<const double> expected_o, std::span<const double> expected_lse);

}  // namespace flashtune::testing
