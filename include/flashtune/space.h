// flashtune/space.h — the design space: every valid Variant for a problem class.
//
// A problem class is what a compiled kernel is specialised on (dtype, head dim, causal); the
// sizes (B, N, H) are run-time arguments. EnumerateSpace lists the variants that pass the
// static rules (tile divisibility, allowed values, shared memory within the target's opt-in
// limit); register pressure is left to the tuner. The same rules are enforced again inside the
// template by static_assert.
//
// Thread safety: pure functions of their arguments; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "flashtune/arch.h"  // MaxSharedMemoryForArch, KnownArchs: the per-target limits
#include "flashtune/status.h"
#include "flashtune/variant.h"

namespace flashtune {

struct ProblemClass {
  DType dtype = DType::kBF16;
  int head_dim = 128;
  bool causal = false;

  // "bf16 d128 causal" / "f16 d64 full".
  std::string ToString() const;
  bool operator==(const ProblemClass&) const = default;
};

// The class a Problem or Variant belongs to.
ProblemClass ClassOf(const Problem& problem);
ProblemClass ClassOf(const Variant& variant);

// Opt-in shared-memory limit of the H100/H200 (sm_90): the default target.
inline constexpr int64_t kDefaultMaxSmemBytes = 232448;
// The largest opt-in limit of any target in the arch table (arch.h) (the template asserts it).
inline constexpr int64_t kLargestMaxSmemBytes = 232448;

// The axes of the space. Every value must itself be allowed (see CheckVariant); combinations
// that break a rule are pruned.
struct SpaceOptions {
  std::vector<int> block_m{64, 128};
  std::vector<int> block_n{32, 64, 128};
  std::vector<int> warps{4, 8};
  std::vector<int> stages{1, 2, 3};
  int64_t max_smem_bytes = kDefaultMaxSmemBytes;
};

// Values each parameter may take.
inline constexpr int kAllowedBlockM[] = {64, 128};
inline constexpr int kAllowedBlockN[] = {32, 64, 128};
inline constexpr int kAllowedWarps[] = {4, 8};
inline constexpr int kAllowedStages[] = {1, 2, 3};

// Dynamic shared memory the variant's kernel needs, in bytes.
int64_t SharedMemoryBytes(const Variant& variant);

// OK when the template accepts `variant` and its shared memory fits in `max_smem_bytes`;
// otherwise kInvalidArgument naming the parameter, its value and the allowed values.
Status CheckVariant(const Variant& variant, int64_t max_smem_bytes = kDefaultMaxSmemBytes);

// The valid variants of `problem_class`, ordered by block_m, block_n, warps, stages (ascending);
// deterministic. kInvalidArgument when the class's head dim is unsupported, when an option
// holds a value outside the allowed ones, or when no variant fits max_smem_bytes.
Result<std::vector<Variant>> EnumerateSpace(const ProblemClass& problem_class,
                                            const SpaceOptions& options = {});

// FA-2's own starting tiles (d <= 64: 128x128 w4; d <= 128: 128x64 w4; else 64x64 w4;
// stages 2), downgraded (fewer stages, then smaller block_n, then smaller block_m) until the
// shared memory fits. Used when no tuned winner exists. For an unsupported head dim the result
// fails CheckVariant; callers check.
Variant DefaultVariant(const ProblemClass& problem_class,
                       int64_t max_smem_bytes = kDefaultMaxSmemBytes);

}  // namespace flashtune
