// flashtune/backward_args.h — the arguments of one attention backward call, and the workspace
// it needs.
//
// The backward pass takes the forward call's inputs and outputs (q, k, v, o and the fp32
// log-sum-exp lse, which the forward writes when ForwardArgs::lse is set) and the gradient of
// the loss with respect to o (d_o, laid out like o), and writes dq (like q), dk and dv (like
// k and v). GQA/MQA: dk and dv are summed over the Hq / Hkv query heads that share a K/V head.
// Rows that see no key (causal with Nq > Nk) contribute nothing and get dq = 0.
//
// Workspace: the kernels need fp32 scratch (the dq accumulator, rowsum(d_o ∘ o), ordering
// counters) in device memory the caller owns, passed as the call's workspace
// (forward.workspace / forward.workspace_bytes, as a forward call passes its own):
// BackwardWorkspaceBytes(problem) says how much (also WorkspaceBytes and
// Runtime::workspace_size of the backward problem), the call never allocates, so it may be
// captured into a CUDA graph. The workspace need not be zeroed; it must not be shared by
// concurrent calls.
//
// Deterministic mode: dq is then accumulated in a fixed order (each key block adds after the
// one before it), so dq, dk and dv are the same bits on every run; it costs some speed.
//
// Thread safety: plain value types and pure functions.
#pragma once

#include <cstdint>

#include "flashtune/export.h"
#include "flashtune/forward_args.h"
#include "flashtune/status.h"
#include "flashtune/variant.h"

FLASHTUNE_API_BEGIN
namespace flashtune {

struct BackwardArgs {
  // The forward call: shapes (dense layout), scale, q/k/v and o with their strides; lse is
  // required; its workspace is the backward's (at least BackwardWorkspaceBytes(problem())).
  ForwardArgs forward;
  const void* d_o = nullptr;  // like o
  Strides d_o_strides;
  void* dq = nullptr;  // like q
  void* dk = nullptr;  // like k
  void* dv = nullptr;  // like v
  Strides dq_strides, dk_strides, dv_strides;
  bool deterministic = false;

  // Arguments for `problem` with densely packed [B, N, H, D] tensors; every pointer null.
  static BackwardArgs Contiguous(const Problem& problem);
  // The shape, with operation = kBackward.
  Problem problem() const {
    Problem p = forward.problem;
    p.operation = Operation::kBackward;
    return p;
  }
};

// Device workspace bytes a backward call of `problem`'s shape needs (any variant; 0 for an
// invalid shape). The layout (generator/backward_args.cpp, BackwardWorkspaceLayout) is: dq
// accumulator fp32 [B, Hq, Nq, D], rowsum(d_o ∘ o) fp32 [B, Hq, Nq], ordering counters int32
// [B, Hq, ceil(Nq / 16)], each 256-byte aligned.
int64_t BackwardWorkspaceBytes(const Problem& problem);

// Checks what can be checked without a GPU: the forward part as ValidateForwardArgs, the dense
// layout, lse present, d_o/dq/dk/dv non-null, 16-byte aligned, strides as the forward's, the
// workspace present, 16-byte aligned and at least BackwardWorkspaceBytes. OK, or kInvalidArgument naming
// the argument and what is allowed.
Status ValidateBackwardArgs(const BackwardArgs& args);

}  // namespace flashtune
FLASHTUNE_API_END
