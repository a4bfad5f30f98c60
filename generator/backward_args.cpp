// BackwardArgs checks and the backward workspace's size and layout.
#include "flashtune/backward_args.h"

#include <string>

#include "flashtune/problem_set.h"
#include "generator/arg_checks.h"
#include "generator/backward_workspace.h"

namespace flashtune {

namespace {

Status Invalid(std::string message) { return Status(Code::kInvalidArgument, std::move(message)); }

constexpr int64_t Align256(int64_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace

BackwardArgs BackwardArgs::Contiguous(const Problem& p) {
  BackwardArgs a;
  Problem forward = p;
  forward.operation = Operation::kForward;  // problem() says backward
  a.forward = ForwardArgs::Contiguous(forward);
  a.d_o_strides = a.dq_strides = a.forward.q_strides;
  a.dk_strides = a.dv_strides = a.forward.k_strides;
  return a;
}

namespace detail {

BackwardWorkspaceLayout BackwardWorkspaceLayoutFor(const Problem& p) {
  BackwardWorkspaceLayout l;
  const int64_t rows = p.batch * p.heads_q * p.seqlen_q;
  l.delta_offset = Align256(rows * p.head_dim * 4);
  l.counters_offset = l.delta_offset + Align256(rows * 4);
  l.counters_per_head = (p.seqlen_q + kMinBackwardQueryTile - 1) / kMinBackwardQueryTile;
  l.total_bytes = l.counters_offset + Align256(p.batch * p.heads_q * l.counters_per_head * 4);
  return l;
}

}  // namespace detail

int64_t BackwardWorkspaceBytes(const Problem& problem) {
  if (!ValidateProblem(problem).ok()) return 0;
  return detail::BackwardWorkspaceLayoutFor(problem).total_bytes;
}

Status ValidateBackwardArgs(const BackwardArgs& a) {
  const ForwardArgs& f = a.forward;
  const Problem& p = f.problem;
  // First: the other layouts' arguments would otherwise be asked for by the forward's checks.
  if (p.layout != Layout::kDense) {
    return Invalid("forward.problem.layout (" + std::string(LayoutName(p.layout)) +
                   ") is not served by the backward pass; allowed: dense");
  }
  FT_RETURN_IF_ERROR(ValidateForwardArgs(f));
  if (f.seqlens_k != nullptr) {
    return Invalid("forward.seqlens_k must be null: the backward pass reads every key of the dense layout");
  }
  if (f.lse == nullptr) {
    return Invalid("forward.lse must not be null: the backward pass recomputes P from the forward's log-sum-exp");
  }
  FT_RETURN_IF_ERROR(detail::CheckPointer("d_o", a.d_o, 16));
  FT_RETURN_IF_ERROR(detail::CheckPointer("dq", a.dq, 16));
  FT_RETURN_IF_ERROR(detail::CheckPointer("dk", a.dk, 16));
  FT_RETURN_IF_ERROR(detail::CheckPointer("dv", a.dv, 16));
  FT_RETURN_IF_ERROR(detail::CheckStrides("d_o", a.d_o_strides, p.batch, p.seqlen_q, p.heads_q, p.head_dim));
  FT_RETURN_IF_ERROR(detail::CheckStrides("dq", a.dq_strides, p.batch, p.seqlen_q, p.heads_q, p.head_dim));
  FT_RETURN_IF_ERROR(detail::CheckStrides("dk", a.dk_strides, p.batch, p.seqlen_k, p.heads_kv, p.head_dim));
  FT_RETURN_IF_ERROR(detail::CheckStrides("dv", a.dv_strides, p.batch, p.seqlen_k, p.heads_kv, p.head_dim));
  FT_RETURN_IF_ERROR(detail::CheckPointer("forward.workspace", f.workspace, 16));
  const int64_t need = BackwardWorkspaceBytes(a.problem());
  if (f.workspace_bytes < need) {
    return Invalid("forward.workspace_bytes (" + std::to_string(f.workspace_bytes) + ") must be at least " +
                   std::to_string(need) + " (BackwardWorkspaceBytes of " + a.problem().ToString() + ")");
  }
  return Status::Ok();
}

}  // namespace flashtune
