// tests/support/gpu_fixture.h — what the kernel tests against the float64 reference share: the
// GPU (the driver, device 0 with its primary context made current, and one stream, opened once
// per process), the test shapes' head-major strides, a forward test case (random inputs, device
// buffers, the reference), compiling and loading variants for the GPU, a poisoned launch and the
// verdict. bench/hopper_probe.cpp uses it too.
//
// Contract: GetGpu() opens the GPU on the first call and returns the same object (or the same
// error: no driver, kNoDevice, ...) on every later one, so a test without a GPU can GTEST_SKIP
// with the reason. Upload copies host bytes into a fresh device buffer.
// Thread safety: GetGpu() initialises once (a function-local static); tests use it from the
// gtest thread (the stream is theirs to serialise).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "flashtune/driver.h"
#include "flashtune/forward_args.h"
#include "flashtune/kernel.h"
#include "flashtune/reference.h"
#include "flashtune/space.h"
#include "flashtune/status.h"
#include "flashtune/variant.h"

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

// The shapes every kernel test against the reference runs: N 1 and 17, GQA 8:1, MQA and a
// ragged N with head-major strides, Nq < Nk and Nq > Nk (masked rows).
inline constexpr Shape kEdgeShapes[] = {
    {1, 1, 1, 1, 1, false},      {2, 17, 17, 2, 2, false},    {1, 127, 127, 8, 1, false},
    {1, 128, 128, 4, 1, true},   {1, 1000, 1000, 2, 2, true}, {1, 127, 1000, 2, 1, false},
    {2, 1000, 127, 2, 2, false},
};

// Strides of a [B, seqlen, heads, d] view of `s`'s layout.
inline Strides StridesFor(const Shape& s, int64_t seqlen, int64_t heads, int64_t d) {
  if (!s.head_major) return Strides::Contiguous(seqlen, heads, d);
  return Strides{heads * seqlen * d, d, seqlen * d};
}

// A device buffer of max(bytes, 16) bytes holding `host` (uninitialised when `host` is null).
Result<DeviceBuffer> Upload(const Gpu& gpu, const void* host, size_t bytes);

// One shape's random inputs for one class, their device copies, device outputs (o, lse) and,
// when asked, the float64 reference answer. `host` points at the host vectors, `device` at the
// device buffers (same problem and strides). The object must stay where MakeForwardCase put it
// (the args point into it).
struct ForwardCase {
  Shape shape;
  double key_ramp = 0;  // ForwardCaseOptions::key_ramp it was made with
  ForwardArgs host, device;
  std::vector<uint16_t> q, k, v;
  ReferenceOutput expected;  // empty without `reference`
  std::optional<DeviceBuffer> dq, dk, dv, dout, dlse;
};
struct ForwardCaseOptions {
  bool reference = true;   // compute the float64 reference (slow for big shapes)
  bool o_like_q = false;   // o takes q's (possibly head-major) strides; else contiguous
  // > 0: key j's row is scaled by 1 + key_ramp * (Nk - 1 - j) / (Nk - 1), so a row's scores
  // grow towards the first keys (kernels that walk the keys from the last block see their
  // running max rise block after block; uniform inputs barely move it).
  double key_ramp = 0;
};
// Inputs from FillRandom(seed, seed + 1, seed + 2) for q, k, v; the reference's or an upload's
// error when one fails.
Result<std::unique_ptr<ForwardCase>> MakeForwardCase(const Gpu& gpu, const ProblemClass& cls, const Shape& s, uint64_t seed,
                                                     ForwardCaseOptions options = {});
// The key ramp (ForwardCaseOptions::key_ramp) on one key of a sequence of n: multiplies the
// `count` elements of key j's row at `row` by 1 + ramp * (n - 1 - j) / (n - 1), rounded to dtype.
void ApplyKeyRamp(uint16_t* row, int64_t count, DType dtype, double ramp, int64_t j, int64_t n);
// " key ramp R" for a case name when ramp > 0, else "".
std::string KeyRampText(double ramp);

// Compiles every variant for the GPU's arch (NVRTC, all at once) and loads it: one result per
// variant, in order; a generation, compile or load error is that variant's status.
std::vector<Result<ForwardKernel>> CompileAndLoad(const Gpu& gpu, const std::vector<Variant>& variants);

// Fills `o` and `lse` with 0xFF bytes (NaN: an element the kernel does not write fails the
// comparison), launches `kernel` on `args` and waits. "" when it ran, else the error.
std::string LaunchPoisoned(const Gpu& gpu, const ForwardKernel& kernel, const ForwardArgs& args, DeviceBuffer& o,
                           DeviceBuffer& lse);

// The verdict on one output: "" when o is within the dtype's relative L2 tolerance of the
// reference (bf16 1e-2, f16 2e-3) and lse within 1e-3 with the same -inf rows, else the numbers.
std::string CompareWithReference(DType dtype, std::span<const double> o, std::span<const float> lse,
                                 std::span<const double> expected_o, std::span<const double> expected_lse);

}  // namespace flashtune::testing
