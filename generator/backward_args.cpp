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

ft_abi::Fa2BwdParams Fa2BwdParamsFor(const BackwardArgs& a) {
  constexpr double kLog2e = 1.4426950408889634074;
  auto strides3 = [](const Strides& s, ft_abi::i64* out) {
    out[0] = s.batch;
    out[1] = s.seq;
    out[2] = s.head;
  };
  const ForwardArgs& fa = a.forward;
  const Problem& f = fa.problem;
  const BackwardWorkspaceLayout layout = BackwardWorkspaceLayoutFor(a.problem());
  ft_abi::Fa2BwdParams p{};
  p.q = fa.q;
  p.k = fa.k;
  p.v = fa.v;
  p.o = fa.o;
  p.d_o = a.d_o;
  p.lse = fa.lse;
  p.dq = a.dq;
  p.dk = a.dk;
  p.dv = a.dv;
  auto* ws = static_cast<unsigned char*>(fa.workspace);
  p.dq_accum = reinterpret_cast<float*>(ws);
  p.delta = reinterpret_cast<float*>(ws + layout.delta_offset);
  p.counters = reinterpret_cast<int*>(ws + layout.counters_offset);
  strides3(fa.q_strides, p.q_stride);
  strides3(fa.k_strides, p.k_stride);
  strides3(fa.v_strides, p.v_stride);
  strides3(fa.o_strides, p.o_stride);
  strides3(a.d_o_strides, p.do_stride);
  strides3(a.dq_strides, p.dq_stride);
  strides3(a.dk_strides, p.dk_stride);
  strides3(a.dv_strides, p.dv_stride);
  p.batch = int(f.batch);
  p.seqlen_q = int(f.seqlen_q);
  p.seqlen_k = int(f.seqlen_k);
  p.heads_q = int(f.heads_q);
  p.heads_kv = int(f.heads_kv);
  p.counters_per_head = int(layout.counters_per_head);
  p.scale = fa.EffectiveScale();
  p.scale_log2 = float(double(p.scale) * kLog2e);
  return p;
}

void SetBackwardLaunches(const Problem& f, int pre_rows, unsigned pre_threads, int block_n, unsigned main_threads,
                         uint32_t main_smem_bytes, LaunchPacket* out) {
  auto set = [](unsigned* grid, unsigned* block, unsigned x, unsigned y, unsigned z, unsigned threads) {
    grid[0] = x;
    grid[1] = y;
    grid[2] = z;
    block[0] = threads;
    block[1] = block[2] = 1;
  };
  const unsigned row_blocks = unsigned((f.seqlen_q + pre_rows - 1) / pre_rows);
  set(out->grid, out->block, row_blocks, unsigned(f.heads_q), unsigned(f.batch), pre_threads);
  out->smem_bytes = 0;
  out->next_steps = 2;
  LaunchStep& main = out->next[0];
  main.kernel = 0;
  set(main.grid, main.block, unsigned((f.seqlen_k + block_n - 1) / block_n), unsigned(f.heads_kv), unsigned(f.batch),
      main_threads);
  main.smem_bytes = main_smem_bytes;
  LaunchStep& convert = out->next[1];
  convert.kernel = 1;
  set(convert.grid, convert.block, row_blocks, unsigned(f.heads_q), unsigned(f.batch), pre_threads);
  convert.smem_bytes = 0;
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
  FT_RETURN_IF_ERROR(detail::CheckDistinctElements("dq", a.dq_strides, p.batch, p.seqlen_q, p.heads_q, p.head_dim));
  FT_RETURN_IF_ERROR(detail::CheckDistinctElements("dk", a.dk_strides, p.batch, p.seqlen_k, p.heads_kv, p.head_dim));
  FT_RETURN_IF_ERROR(detail::CheckDistinctElements("dv", a.dv_strides, p.batch, p.seqlen_k, p.heads_kv, p.head_dim));
  FT_RETURN_IF_ERROR(detail::CheckPointer("forward.workspace", f.workspace, 16));
  const int64_t need = BackwardWorkspaceBytes(a.problem());
  if (f.workspace_bytes < need) {
    return Invalid("forward.workspace_bytes (" + std::to_string(f.workspace_bytes) + ") must be at least " +
                   std::to_string(need) + " (BackwardWorkspaceBytes of " + a.problem().ToString() + ")");
  }
  return Status::Ok();
}

}  // namespace flashtune
