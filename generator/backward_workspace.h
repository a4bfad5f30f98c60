// Where the backward kernels' scratch lives inside the caller's workspace (BackwardArgs): the
// one layout the size query (BackwardWorkspaceBytes) and the backward families' packing share;
// and the parameter block every backward module reads (fa2_bwd's, whose preprocess and convert
// kernels hopper_bwd runs too).
// Thread safety: pure functions.
#pragma once

#include <cstdint>

#include "flashtune/backward_args.h"
#include "generator/launch_packet.h"
#include "flashtune/variant.h"
#include "templates/ft_kernel_abi.cuh"

namespace flashtune::detail {

// The smallest query tile a backward family may use: the ordering counters are sized per tile
// of this many rows, so any larger tile fits.
inline constexpr int kMinBackwardQueryTile = 16;

struct BackwardWorkspaceLayout {
  // The dq accumulator, fp32 [B, Hq, Nq, D], starts at offset 0.
  int64_t delta_offset = 0;     // rowsum(d_o ∘ o), fp32 [B, Hq, Nq]
  int64_t counters_offset = 0;  // int32 [B, Hq, counters_per_head]
  int64_t counters_per_head = 0;
  int64_t total_bytes = 0;
};

// Precondition: ValidateProblem(problem) is OK.
BackwardWorkspaceLayout BackwardWorkspaceLayoutFor(const Problem& problem);

// The call's pointers, strides, shape, workspace regions (BackwardWorkspaceLayoutFor) and
// softmax scale as the backward kernels read them. Precondition: ValidateBackwardArgs(args) is OK.
ft_abi::Fa2BwdParams Fa2BwdParamsFor(const BackwardArgs& args);

// A backward module's three launches into `out` (its tensor maps and arguments are the caller's):
// the preprocess (the URI kernel) and the convert (`next[1]`, extra kernel 1) over blocks of
// `pre_rows` query rows x query heads x batch with `pre_threads` threads, and between them the
// main kernel (`next[0]`, extra kernel 0) over key blocks of `block_n` x K/V heads x batch with
// `main_threads` threads and `main_smem_bytes` of dynamic shared memory.
void SetBackwardLaunches(const Problem& forward_problem, int pre_rows, unsigned pre_threads, int block_n,
                         unsigned main_threads, uint32_t main_smem_bytes, LaunchPacket* out);

}  // namespace flashtune::detail
