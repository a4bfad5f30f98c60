// fa2_fwd: the FlashAttention-2 forward family (templates/fa2_fwd.cuh), mma.sync m16n8k16 +
// ldmatrix + cp.async, sm_80 and newer. Parameters, in URI order: br (block_m, query rows per
// thread block: 64, 128), bc (block_n, keys per inner step: 32, 64, 128), w (warps: 4, 8;
// block_m must be a multiple of 16·warps), s (K/V shared-memory stages: 1-3).
// fa2_paged: the same template and parameters reading K/V from a paged cache (vLLM's layout):
// prefill (chunked prefill, prefix caching) over pages.
//
// Thread safety: pure functions.
#pragma once

#include "flashtune/variant.h"
#include "generator/kernel_abi.h"

namespace flashtune {

// An fa2_fwd variant with every parameter given (tests and tools build them by hand); paged:
// fa2_paged's (the same template reading K/V through a page table).
Variant Fa2Variant(DType dtype, int head_dim, bool causal, int block_m, int block_n, int warps, int stages,
                   bool paged = false);

class Family;
// The fa2_paged family (its registry entry is generator/families/fa2_paged.cpp).
const Family& Fa2PagedFamily();

}  // namespace flashtune
