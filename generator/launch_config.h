// Launch geometry and kernel parameters of a forward call. Private to the library (the
// launcher, the tuner and the runtime use it); the template's indexing must agree with it.
#pragma once

#include <cstdint>

#include "flashtune/forward_args.h"
#include "flashtune/variant.h"
#include "generator/kernel_abi.h"

namespace flashtune::detail {

struct LaunchConfig {
  unsigned grid[3];    // (ceil(Nq / block_m), Hq, B)
  unsigned block[3];   // (warps * 32, 1, 1)
  int64_t smem_bytes;  // dynamic shared memory: SharedMemoryBytes(variant)
};

// Precondition: ValidateForwardArgs(args) and CheckArgsMatchVariant(variant, args) are OK.
LaunchConfig ComputeLaunchConfig(const Variant& variant, const ForwardArgs& args);

// The kernel's only parameter; scale_log2 = EffectiveScale() * log2(e) because the kernel
// exponentiates with exp2. Precondition: ValidateForwardArgs(args) is OK.
KernelParams MakeKernelParams(const ForwardArgs& args);

}  // namespace flashtune::detail
