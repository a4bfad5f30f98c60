// flashtune/reference.h — the trusted answer: float64 CPU attention forward and backward passes, and the
// host-side helpers to feed it and to compare a kernel's output with it.
//
// The reference reads q/k/v from host memory laid out exactly as ForwardArgs describes
// (q [B, Nq, Hq, D], k/v [B, Nk, Hkv, D], strides in elements), computes every score, softmax
// and weighted sum in double, and returns o [B, Nq, Hq, D] and lse [B, Hq, Nq] densely packed.
// Semantics match the kernels: softmax scale (0 = 1/sqrt(D)); GQA (query head h reads kv head
// h / (Hq / Hkv)); causal aligned bottom-right (query i sees keys j <= i + Nk - Nq); a row with
// no visible key gives o = 0 and lse = -inf.
//
// Thread safety: every function is safe to call from any thread; ReferenceForward spreads one
// call over its own worker threads.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "flashtune/forward_args.h"
#include "flashtune/status.h"
#include "flashtune/variant.h"

namespace flashtune {

// ---- fp16 / bf16 <-> float, round-to-nearest-even, NaN and infinity preserved -------------
uint16_t FloatToHalfBits(float x);
float HalfBitsToFloat(uint16_t bits);
uint16_t FloatToBf16Bits(float x);
float Bf16BitsToFloat(uint16_t bits);
// Dispatch on dtype.
uint16_t FloatToBits(float x, DType dtype);
float BitsToFloat(uint16_t bits, DType dtype);

// ---- deterministic inputs ----------------------------------------------------------------
// Fills `out` with values uniform in [lo, hi), rounded to `dtype`. The same (seed, size, range)
// gives the same bits on every platform and compiler (own PRNG, not <random>'s distributions),
// and element i does not depend on the size: large fills use all cores, with the same result.
void FillRandom(std::span<uint16_t> out, DType dtype, uint64_t seed, float lo = -1.0f,
                float hi = 1.0f);
void FillRandom(std::span<float> out, uint64_t seed, float lo = -1.0f, float hi = 1.0f);

// ---- the reference -----------------------------------------------------------------------
// What ForwardArgs::q/k/v point to on the host.
enum class HostElement {
  kF16,   // uint16_t bits of IEEE half
  kBF16,  // uint16_t bits of bfloat16
  kF32,   // float
};

struct ReferenceOptions {
  // Element type of q/k/v; default: the 16-bit type named by args.problem.dtype.
  std::optional<HostElement> element;
  // Worker threads; 0 = std::thread::hardware_concurrency().
  int threads = 0;
};

struct ReferenceOutput {
  std::vector<double> o;    // [B, Nq, Hq, D], densely packed
  std::vector<double> lse;  // [B, Hq, Nq]; -inf for rows with no visible key
};

// Computes the forward pass of `args`, whose q/k/v are host pointers (o and lse are ignored).
// On success returns o and lse. kInvalidArgument naming the argument when a size is < 1, q/k/v
// is null, a stride is negative, head_dim < 1 or Hq % Hkv != 0. (Alignment and the kernel's
// size limits are not required here.)
Result<ReferenceOutput> ReferenceForward(const ForwardArgs& args,
                                         const ReferenceOptions& options = {});

// The backward pass of `args` in float64: given d_o (host, laid out with `d_o_strides`, same
// element type as q/k/v), returns dq [B, Nq, Hq, D] and dk, dv [B, Nk, Hkv, D], densely
// packed. P and o are recomputed in double (not read from a kernel's forward output); dk and dv
// are summed over the query heads of a group (GQA/MQA); rows with no visible key contribute
// nothing. Errors as ReferenceForward, and kInvalidArgument when d_o is null or its strides are
// negative.
struct ReferenceGradients {
  std::vector<double> dq, dk, dv;
};
Result<ReferenceGradients> ReferenceBackward(const ForwardArgs& args, const void* d_o, const Strides& d_o_strides,
                                             const ReferenceOptions& options = {});

// Reads a kernel's output from a host copy laid out like args.o (o_strides, args.problem.dtype bits)
// into a densely packed [B, Nq, Hq, D] double vector, ready for RelativeL2Error.
std::vector<double> GatherOutput(const ForwardArgs& args, const uint16_t* o_host);

// ---- comparisons -------------------------------------------------------------------------
// ||actual - expected||_2 / ||expected||_2 (or the absolute norm when ||expected|| is 0).
// +infinity when the sizes differ or `actual` holds a NaN or infinity, so a broken kernel can
// never pass a threshold.
double RelativeL2Error(std::span<const double> actual, std::span<const double> expected);

struct LseComparison {
  double max_error = 0.0;       // max |a - e| / max(1, |e|) over rows with a finite expectation
  int64_t worst_index = -1;     // where max_error occurs (-1 when none)
  int64_t infinity_mismatches = 0;  // rows where exactly one of actual/expected is -inf, or NaN
  // True when there is no mismatch and max_error <= tolerance.
  bool Within(double tolerance) const { return infinity_mismatches == 0 && max_error <= tolerance; }
};
// Compares a kernel's lse (fp32) with the reference's. Masked rows (-inf expected) must be
// -inf in `actual`. The error is relative to max(1, |e|): lse near 0 would make a pure
// relative error meaningless. Sizes that differ count every missing row as a mismatch.
LseComparison CompareLse(std::span<const float> actual, std::span<const double> expected);

}  // namespace flashtune
