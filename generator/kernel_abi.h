// The binary interface between the host launcher and templates/fa2_fwd.cuh.
// The template declares the same struct (FtParams); keep the two in lock-step —
// the kernel takes it by value as its only parameter.
#pragma once

#include <cstdint>

namespace flashtune::detail {

struct KernelParams {
  const void* q;
  const void* k;
  const void* v;
  void* o;
  float* lse;           // may be null: lse is then not written
  int64_t q_stride[3];  // batch, seq, head — elements
  int64_t k_stride[3];
  int64_t v_stride[3];
  int64_t o_stride[3];
  int32_t batch;
  int32_t seqlen_q;
  int32_t seqlen_k;
  int32_t heads_q;
  int32_t heads_kv;
  float scale_log2;  // softmax_scale * log2(e): scores go through exp2
};
static_assert(sizeof(KernelParams) == 5 * 8 + 12 * 8 + 5 * 4 + 4, "KernelParams layout drifted");

// Dynamic shared memory the template uses: Q tile plus `stages` K and V tiles, each row padded
// by 8 elements (16 bytes) so ldmatrix rows fall in distinct banks. The template asserts the same.
constexpr int64_t SharedMemoryBytes(int block_m, int block_n, int head_dim, int stages) {
  return int64_t(block_m + 2 * stages * block_n) * (head_dim + 8) * 2;
}

}  // namespace flashtune::detail
