// ForwardArgs checks: everything about a forward call that can be verified without a GPU.
#include "flashtune/forward_args.h"

#include "flashtune/problem_set.h"
#include "generator/arg_checks.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace flashtune {

ForwardArgs ForwardArgs::Contiguous(const Problem& p) {
  ForwardArgs a;
  a.dtype = p.dtype;
  a.head_dim = p.head_dim;
  a.causal = p.causal;
  a.batch = p.batch;
  a.seqlen_q = p.seqlen_q;
  a.seqlen_k = p.seqlen_k;
  a.heads_q = p.heads_q;
  a.heads_kv = p.heads_kv;
  a.q_strides = a.o_strides = Strides::Contiguous(p.seqlen_q, p.heads_q, p.head_dim);
  a.k_strides = a.v_strides = Strides::Contiguous(p.seqlen_k, p.heads_kv, p.head_dim);
  return a;
}

float ForwardArgs::EffectiveScale() const {
  if (softmax_scale != 0.0f) return softmax_scale;
  return head_dim > 0 ? float(1.0 / std::sqrt(double(head_dim))) : 0.0f;
}

namespace {

Status Invalid(std::string message) { return Status(Code::kInvalidArgument, std::move(message)); }

}  // namespace

namespace detail {

std::string SupportedHeadDims() {
  std::string s;
  for (int d : kSupportedHeadDims) s += (s.empty() ? "" : ", ") + std::to_string(d);
  return s;
}

Status CheckPointer(const char* name, const void* p, uintptr_t alignment) {
  if (p == nullptr) return Invalid(std::string(name) + " must not be null");
  if (reinterpret_cast<uintptr_t>(p) % alignment != 0) {
    return Invalid(std::string(name) + " must be " + std::to_string(alignment) +
                   "-byte aligned (vector loads/stores)");
  }
  return Status::Ok();
}

// The largest element offset the kernel forms for a [B, N, H, D] tensor must fit in int64
// (it does its address arithmetic in 64 bits).
Status CheckStrides(const char* name, const Strides& s, int64_t batch, int64_t seqlen,
                    int64_t heads, int head_dim) {
  const struct {
    const char* dim;
    int64_t stride;
    int64_t extent;
  } dims[] = {{"batch", s.batch, batch}, {"seq", s.seq, seqlen}, {"head", s.head, heads}};
  int64_t max_offset = head_dim - 1;
  for (const auto& d : dims) {
    if (d.stride < 0) {
      return Invalid(std::string(name) + "_strides." + d.dim + " (" + std::to_string(d.stride) +
                     ") must be >= 0");
    }
    // 2-byte elements: a multiple of 8 elements keeps every row 16-byte aligned.
    if (d.stride % 8 != 0) {
      return Invalid(std::string(name) + "_strides." + d.dim + " (" + std::to_string(d.stride) +
                     ") must be a multiple of 8 elements (16 bytes)");
    }
    int64_t term = 0;
    if (__builtin_mul_overflow(d.stride, d.extent - 1, &term) ||
        __builtin_add_overflow(max_offset, term, &max_offset)) {
      return Invalid(std::string(name) + "_strides: the largest element offset overflows int64");
    }
  }
  int64_t bytes = 0;
  if (__builtin_mul_overflow(max_offset, int64_t(2), &bytes)) {
    return Invalid(std::string(name) + "_strides: the largest byte offset overflows int64");
  }
  return Status::Ok();
}

}  // namespace detail

using detail::CheckPointer;
using detail::CheckStrides;
using detail::SupportedHeadDims;

Status ValidateForwardArgs(const ForwardArgs& a) {
  if (a.dtype != DType::kF16 && a.dtype != DType::kBF16) {
    return Invalid("dtype (" + std::to_string(int(a.dtype)) + ") must be f16 or bf16");
  }
  bool supported = false;
  for (int d : kSupportedHeadDims) supported |= (d == a.head_dim);
  if (!supported) {
    return Invalid("head_dim (" + std::to_string(a.head_dim) + ") must be one of " +
                   SupportedHeadDims());
  }
  // The shape's limits (grid y/z 65535, 32-bit indexes) are the one rule every entry point uses.
  FT_RETURN_IF_ERROR(ValidateProblem(a.problem()));
  FT_RETURN_IF_ERROR(CheckPointer("q", a.q, 16));
  FT_RETURN_IF_ERROR(CheckPointer("k", a.k, 16));
  FT_RETURN_IF_ERROR(CheckPointer("v", a.v, 16));
  FT_RETURN_IF_ERROR(CheckPointer("o", a.o, 16));
  if (a.lse != nullptr) FT_RETURN_IF_ERROR(CheckPointer("lse", a.lse, 4));
  FT_RETURN_IF_ERROR(CheckStrides("q", a.q_strides, a.batch, a.seqlen_q, a.heads_q, a.head_dim));
  FT_RETURN_IF_ERROR(CheckStrides("k", a.k_strides, a.batch, a.seqlen_k, a.heads_kv, a.head_dim));
  FT_RETURN_IF_ERROR(CheckStrides("v", a.v_strides, a.batch, a.seqlen_k, a.heads_kv, a.head_dim));
  FT_RETURN_IF_ERROR(CheckStrides("o", a.o_strides, a.batch, a.seqlen_q, a.heads_q, a.head_dim));
  // lse is [B, Hq, Nq] contiguous fp32: its element count must fit too.
  if (a.lse != nullptr && a.batch * a.heads_q > std::numeric_limits<int64_t>::max() / a.seqlen_q) {
    return Invalid("lse: batch * heads_q * seqlen_q overflows int64");
  }
  if (!std::isfinite(a.softmax_scale) || a.softmax_scale < 0.0f) {
    return Invalid("softmax_scale (" + std::to_string(a.softmax_scale) +
                   ") must be finite and >= 0 (0 means 1/sqrt(head_dim))");
  }
  return Status::Ok();
}

Status CheckArgsMatchVariant(const Variant& variant, const ForwardArgs& args) {
  auto mismatch = [&](const std::string& field, const std::string& got, const std::string& want) {
    return Invalid("args." + field + " (" + got + ") does not match the variant's " + field + " (" +
                   want + ") of " + variant.Uri());
  };
  if (args.dtype != variant.dtype) {
    return mismatch("dtype", std::string(DTypeName(args.dtype)), std::string(DTypeName(variant.dtype)));
  }
  if (args.head_dim != variant.head_dim) {
    return mismatch("head_dim", std::to_string(args.head_dim), std::to_string(variant.head_dim));
  }
  if (args.causal != variant.causal) {
    return mismatch("causal", args.causal ? "true" : "false", variant.causal ? "true" : "false");
  }
  return Status::Ok();
}

}  // namespace flashtune
