// The binary interface between the fa2_fwd family's packing (generator/families/fa2_fwd.cpp)
// and templates/fa2_fwd.cuh: the parameter struct both sides read from
// templates/ft_kernel_abi.cuh, how it is filled, and the shared-memory size the template uses.
#pragma once

#include <cstdint>

#include "flashtune/forward_args.h"
#include "flashtune/problem_set.h"
#include "templates/ft_kernel_abi.cuh"

namespace flashtune::detail {

// The kernel's only parameter: one declaration with the template (templates/ft_kernel_abi.cuh).
using KernelParams = ft_abi::Fa2Params;

// Dynamic shared memory the template uses: Q tile plus `stages` K and V tiles, each row padded
// by 8 elements (16 bytes) so ldmatrix rows fall in distinct banks. The template asserts the same.
constexpr int64_t SharedMemoryBytes(int block_m, int block_n, int head_dim, int stages) {
  return int64_t(block_m + 2 * stages * block_n) * (head_dim + 8) * 2;
}

// The kernel's only parameter; scale_log2 = EffectiveScale() * log2(e) because the kernel
// exponentiates with exp2; the cu_seqlens pointers only for packed rows (varlen; a paged call's
// packed queries), null selecting the dense indexing; the page table only for the paged layout
// (which fa2_paged's kernels alone read). Precondition: ValidateForwardArgs(args) is OK.
inline KernelParams MakeKernelParams(const ForwardArgs& a) {
  constexpr double kLog2e = 1.4426950408889634074;
  KernelParams p{};
  p.q = a.q;
  p.k = a.k;
  p.v = a.v;
  p.o = a.o;
  p.lse = a.lse;
  if (a.problem.layout == Layout::kVarlen) {
    p.cu_seqlens_q = a.varlen.cu_seqlens_q;
    p.cu_seqlens_k = a.varlen.cu_seqlens_k;
    p.total_q = a.varlen.total_q;
    p.total_k = a.varlen.total_k;
  }
  p.seqlens_k = a.seqlens_k;
  if (a.problem.layout == Layout::kPaged) {
    p.cu_seqlens_q = a.varlen.cu_seqlens_q;  // packed queries, or null
    p.total_q = a.varlen.total_q;
    p.block_table = a.paged.block_table;
    p.block_table_stride = a.paged.block_table_stride;
    p.num_blocks = int32_t(a.paged.num_blocks);
    p.block_shift = Log2Ceil(a.paged.block_size);  // a power of two (validated)
  }
  const Strides* in[4] = {&a.q_strides, &a.k_strides, &a.v_strides, &a.o_strides};
  ft_abi::i64* out[4] = {p.q_stride, p.k_stride, p.v_stride, p.o_stride};
  for (int t = 0; t < 4; ++t) {
    out[t][0] = in[t]->batch;
    out[t][1] = in[t]->seq;
    out[t][2] = in[t]->head;
  }
  p.batch = int32_t(a.problem.batch);
  p.seqlen_q = int32_t(a.problem.seqlen_q);
  p.seqlen_k = int32_t(a.problem.seqlen_k);
  p.heads_q = int32_t(a.problem.heads_q);
  p.heads_kv = int32_t(a.problem.heads_kv);
  p.scale_log2 = float(double(a.EffectiveScale()) * kLog2e);
  return p;
}

}  // namespace flashtune::detail
