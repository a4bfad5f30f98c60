// flashtune/space.h — the design space: every valid Variant for a problem class.
//
// A problem class is what a compiled kernel is specialised on (dtype, head dim, causal); the
// sizes (B, N, H) are run-time arguments. The space is the union of the spaces of the kernel
// families that serve the class on the target (fa2_fwd everywhere from sm_80; others where
// their instructions exist). EnumerateSpace lists the variants that pass each family's static
// rules (tile divisibility, allowed values, shared memory within the target's opt-in limit);
// register pressure is left to the tuner. The same rules are enforced again inside the
// templates by static_assert.
//
// Thread safety: pure functions of their arguments; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "flashtune/arch.h"  // MaxSharedMemoryForArch, KnownArchs: the per-target limits
#include "flashtune/status.h"
#include "flashtune/variant.h"

namespace flashtune {

struct ProblemClass {
  DType dtype = DType::kBF16;
  int head_dim = 128;
  bool causal = false;
  Operation operation = Operation::kForward;  // a family serves one operation

  // "bf16 d128 causal" / "f16 d64 full" (" bwd" appended for the backward pass).
  std::string ToString() const;
  bool operator==(const ProblemClass&) const = default;
};

// The class a Problem or Variant belongs to.
ProblemClass ClassOf(const Problem& problem);
ProblemClass ClassOf(const Variant& variant);

// Opt-in shared-memory limit of the H100/H200 (sm_90): the default target.
inline constexpr int64_t kDefaultMaxSmemBytes = 232448;
// The largest opt-in limit of any target in the arch table (arch.h; templates assert it).
inline constexpr int64_t kLargestMaxSmemBytes = 232448;

// What to enumerate. By default: every family that serves the class on `arch`, each over its
// own searched values.
struct SpaceOptions {
  std::string arch = "sm_90a";
  int64_t max_smem_bytes = kDefaultMaxSmemBytes;
  std::vector<std::string> families;  // empty: every family; else only these (each must exist)
  // Per-parameter values replacing a family's searched ones ("br" -> {64, 128}), for every
  // family that has that parameter; each value must be one the family allows.
  std::vector<std::pair<std::string, std::vector<int>>> values;
};

// Dynamic shared memory the variant's kernel needs, in bytes (its family's rule; 0 for an
// unknown family).
int64_t SharedMemoryBytes(const Variant& variant);

// OK when the variant's family accepts it (parameters, allowed values, rules) and its shared
// memory fits in `max_smem_bytes`; otherwise kInvalidArgument naming the parameter, its value
// and the allowed values.
Status CheckVariant(const Variant& variant, int64_t max_smem_bytes = kDefaultMaxSmemBytes);

// The valid variants of `problem_class` on the options' target, family by family (in name
// order), each family's in ascending parameter order; deterministic. kInvalidArgument when
// the class's head dim is unsupported, when an option names an unknown family or holds a value
// no family allows, or when no variant fits.
Result<std::vector<Variant>> EnumerateSpace(const ProblemClass& problem_class,
                                            const SpaceOptions& options = {});

// The tuner's candidates for `problem`: EnumerateSpace restricted to the families that can serve
// it (its layout and sizes: Family::PreferenceFor), e.g. no decode variants for a long prefill,
// and to the variants compiled for its K/V layout (Family::ReadsLayout), and, unless `options.families` names them, to the family searched alone for it where one is
// (Family::SearchedAloneFor: decode_fwd for few query rows per K/V head, where the prefill
// families measured 2-11x slower). The runtime may still fall back to the others.
Result<std::vector<Variant>> EnumerateSpaceFor(const Problem& problem, const SpaceOptions& options = {});

// The untuned choice for `problem` on `arch`: the default of the family that fits the problem
// best (Family::PreferenceFor) and serves its class there, for the problem's layout
// (Family::DefaultFor). kInvalidArgument when none does.
Result<Variant> DefaultVariantFor(const Problem& problem, int64_t max_smem_bytes = kDefaultMaxSmemBytes,
                                  std::string_view arch = "sm_90a");

// DefaultVariantFor on a GPU of compute capability cc_major.cc_minor, with its arch row's shared
// memory (arch.h): what the runtime launches there for `problem` without a tuning database (the
// tuner always measures it; `db show` marks it). kInvalidArgument for a compute capability the
// arch table does not know.
Result<Variant> DefaultVariantForGpu(const Problem& problem, int cc_major, int cc_minor);

// The untuned choice for `problem_class` on `arch`: the default of the most preferred family
// serving it there (see Family::preference). For an unsupported head dim the result fails
// CheckVariant; callers check.
Variant DefaultVariant(const ProblemClass& problem_class, int64_t max_smem_bytes = kDefaultMaxSmemBytes,
                       std::string_view arch = "sm_90a");

}  // namespace flashtune
