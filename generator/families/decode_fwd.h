// decode_fwd: the Flash-Decoding family (templates/decode_fwd.cuh) for few query rows per
// sequence (decode, speculative decoding), dense or paged K/V, sm_80 and newer.
//
// One thread block owns one (sequence, K/V head, row tile, key split): its rows are the
// Hq/Hkv query heads that share the K/V head times the Nq query tokens (packed GQA), so each
// K/V byte is read once per row tile, not once per query head. The keys of a sequence are
// split across `splits` blocks (a rule from the SM count, tuned through `cs`); each writes a
// partial (o, lse) to the workspace and a second kernel of the module ("<uri>_combine")
// merges them: lse = log sum_s exp(lse_s), o = sum_s exp(lse_s - lse) o_s. With one split
// the first kernel writes o and lse itself and the combine is not launched. From compute
// capability 9.0 both kernels are programmatic dependents of the kernel before them (the
// packet's `overlap`): their launches overlap it, and the template waits for it first.
//
// Parameters, in URI order: bn (keys per pipeline step: 32, 64, 128), rm (16-row MMA tiles per
// block: 1, 2, 4; rm * D <= 256 keeps the accumulator in registers), w (warps: 2, 4, 8; each
// warp takes bn / w keys of a step, a multiple of 16), s (K/V shared-memory stages: 2-4), cs
// (blocks per SM the split rule aims for: 1, 2, 4), kv (the K/V layout the kernel is compiled for:
// 0 dense or varlen rows, 1 pages; each kernel carries one layout's copy path, and a variant
// serves only problems of its layout).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>

#include "flashtune/forward_args.h"
#include "flashtune/variant.h"
#include "templates/ft_kernel_abi.cuh"

namespace flashtune {

// A decode_fwd variant with every parameter given (tests and tools build them by hand).
// `paged`: the kernel reads a page pool (kv1), else dense or varlen rows (kv0).
Variant DecodeVariant(DType dtype, int head_dim, bool causal, int keys_per_step, int row_tiles, int warps, int stages,
                      int blocks_per_sm, bool paged = false);

namespace detail {

// Both kernels' only parameter: one declaration with the template (templates/ft_kernel_abi.cuh).
using DecodeParams = ft_abi::DecodeParams;

// Splits of the keys for a call: as many as one wave of `blocks_per_sm` blocks per SM holds
// (fewer blocks when `block_smem_bytes` of shared memory per block lets fewer be resident on
// an H100/H200's 228 KB; 0: no such cap), at least one key step per split, at most
// kMaxDecodeSplits, at least 1. sm_count 0 means 132.
inline constexpr int kMaxDecodeSplits = 64;
int DecodeSplits(const Problem& problem, int sm_count, int keys_per_step, int row_tiles, int blocks_per_sm,
                 int64_t block_smem_bytes = 0);

}  // namespace detail
}  // namespace flashtune
