// flashtune/forward_args.h — the arguments of one attention forward call.
//
// Layout (FA-2's): q [B, Nq, Hq, D], k and v [B, Nk, Hkv, D], o like q, lse [B, Hq, Nq] fp32
// contiguous. Strides are in elements; the last dim is contiguous. Hq must be a multiple of
// Hkv (MQA/GQA). Causal masks align bottom-right: query i sees keys j <= i + Nk - Nq.
//
// Thread safety: a plain value type.
#pragma once

#include <cstdint>

#include "flashtune/export.h"
#include "flashtune/status.h"
#include "flashtune/variant.h"

FLASHTUNE_API_BEGIN
namespace flashtune {

// Strides of a [B, N, H, D] tensor, in elements.
struct Strides {
  int64_t batch = 0;
  int64_t seq = 0;
  int64_t head = 0;
  // A densely packed [B, N, H, D] tensor.
  static Strides Contiguous(int64_t seqlen, int64_t heads, int64_t head_dim) {
    return {seqlen * heads * head_dim, heads * head_dim, head_dim};
  }
};

struct ForwardArgs {
  DType dtype = DType::kBF16;
  int head_dim = 128;
  bool causal = false;
  float softmax_scale = 0.0f;  // 0 means 1/sqrt(head_dim)

  int64_t batch = 1;
  int64_t seqlen_q = 1;
  int64_t seqlen_k = 1;
  int64_t heads_q = 1;
  int64_t heads_kv = 1;

  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* o = nullptr;
  float* lse = nullptr;  // optional: nullptr skips writing the log-sum-exp

  Strides q_strides, k_strides, v_strides, o_strides;

  // Arguments for `problem` with densely packed [B, N, H, D] tensors; every pointer null.
  static ForwardArgs Contiguous(const Problem& problem);
  // The shape as a Problem (for lookup and FLOP counts).
  Problem problem() const {
    return Problem{dtype, head_dim, causal, batch, seqlen_q, seqlen_k, heads_q, heads_kv};
  }
  float EffectiveScale() const;  // softmax_scale, or 1/sqrt(head_dim) when it is 0
};

// Checks everything that can be checked without a GPU: sizes >= 1 and within the kernel's
// 32-bit limits, supported dtype/head dim, non-null q/k/v/o, 16-byte aligned pointers and
// head/seq/batch strides (in bytes), Hq % Hkv == 0, finite positive scale.
// OK, or kInvalidArgument whose message names the argument and the allowed values.
Status ValidateForwardArgs(const ForwardArgs& args);

// Checks that `args` is a call `variant` was compiled for: same dtype, head dim and causal flag.
// OK, or kInvalidArgument naming the field that differs, both values and the variant's URI.
Status CheckArgsMatchVariant(const Variant& variant, const ForwardArgs& args);

}  // namespace flashtune
FLASHTUNE_API_END
