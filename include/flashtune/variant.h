// flashtune/variant.h — what a kernel variant is, and the problem it solves.
//
// A Problem is one attention call's shape: its operation (forward, or backward: dq, dk, dv),
// its layout (dense, paged K/V cache, or variable-length packed), dtype, head dim, causal and
// sizes.
// A Variant is one point of a kernel family's design space: the family's name, the problem
// class it is specialised on (dtype, head dim, causal) and the family's compile-time
// parameters, each a short name and an integer, in the family's order. Its URI
// ("fa2_fwd_bf16_d128_br128_bc64_w4_s2_causal") names every one of them; it is the kernel's
// extern "C" name, the database key and the file name. Which parameters a family has, and
// which values they may take, is the family's (generator/family.h): FromUri checks a URI
// against its family's rules, so a variant read from a file is validated like any other.
//
// Thread safety: value types; distinct objects may be used from different threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "flashtune/export.h"
#include "flashtune/status.h"

FLASHTUNE_API_BEGIN
namespace flashtune {

enum class DType { kF16, kBF16 };

// "f16" / "bf16".
std::string_view DTypeName(DType dtype);
// Parses "f16"/"fp16"/"half" and "bf16"/"bfloat16"; kInvalidArgument naming `what` otherwise.
Result<DType> ParseDType(std::string_view text, std::string_view what = "dtype");

// Head dims some family supports (fa2_fwd supports them all).
inline constexpr int kSupportedHeadDims[] = {32, 64, 96, 128, 160, 192, 224, 256};

// What an attention call computes: the forward pass (o, lse) or the backward pass (dq, dk, dv
// from do, o and lse; flashtune/backward_args.h).
enum class Operation { kForward, kBackward };
// "fwd" / "bwd".
std::string_view OperationName(Operation operation);
// Parses "fwd"/"forward" and "bwd"/"backward"; kInvalidArgument naming `what` otherwise.
Result<Operation> ParseOperation(std::string_view text, std::string_view what = "operation");
// (Decode is a forward call with few query rows.) The backward pass is served on the dense
// layout only.
// How Q/K/V are laid out (flashtune/forward_args.h has the details):
//  kDense:  q [B, Nq, Hq, D], k/v [B, Nk, Hkv, D] with strides;
//  kPaged:  q [B, Nq, Hq, D]; k/v a page pool [num_blocks, block_size, Hkv, D] read through a
//           block table [B, max_blocks] with per-sequence key counts (vLLM's cache); Nk is the
//           largest key count of the call;
//  kVarlen: q [total_q, Hq, D], k/v [total_k, Hkv, D] packed, sequence b at cu_seqlens[b];
//           Nq and Nk are the longest sequences.
enum class Layout { kDense, kPaged, kVarlen };
// "dense" / "paged" / "varlen".
std::string_view LayoutName(Layout layout);
// Parses LayoutName's values; kInvalidArgument naming `what` and the allowed values otherwise.
Result<Layout> ParseLayout(std::string_view text, std::string_view what = "layout");

// One call's shape. q [B, Nq, Hq, D], k/v [B, Nk, Hkv, D], o like q, lse [B, Hq, Nq]; for the
// paged and varlen layouts Nk (and Nq for varlen) are the call's largest per-sequence counts.
struct Problem {
  DType dtype = DType::kBF16;
  int head_dim = 128;
  bool causal = false;
  int64_t batch = 1;
  int64_t seqlen_q = 1;
  int64_t seqlen_k = 1;
  int64_t heads_q = 1;
  int64_t heads_kv = 1;
  Operation operation = Operation::kForward;
  Layout layout = Layout::kDense;

  // FLOPs by FA-2's convention: forward 4·B·Hq·Nq·Nk·D, halved when causal with Nq = Nk;
  // backward 2.5 times the forward.
  double Flops() const;
  // "bf16 d128 causal B4 Nq4096 Nk4096 Hq16 Hkv16" (" bwd" appended for the backward pass,
  // " paged" / " varlen" when not dense).
  std::string ToString() const;
  bool operator==(const Problem&) const = default;
};

// One compile-time parameter of a family: its URI key ("br") and value.
struct VariantParam {
  std::string name;
  int value = 0;
  bool operator==(const VariantParam&) const = default;
};

struct Variant {
  std::string family = "fa2_fwd";
  DType dtype = DType::kBF16;
  int head_dim = 128;
  bool causal = false;
  std::vector<VariantParam> params;  // in the family's order

  // The value of parameter `name`; `fallback` when the variant has no such parameter.
  int Param(std::string_view name, int fallback = 0) const;
  // Sets `name` to `value`, appending it when absent.
  void SetParam(std::string_view name, int value);

  // "<family>_<bf16|f16>_d<D>_<name><value>..._<causal|full>".
  std::string Uri() const;
  // Inverse of Uri(), checked against the family's rules (its parameter names, allowed values
  // and tiling rules; not the shared-memory limit, which is the target's). kInvalidArgument naming the bad field and
  // the expected form otherwise; kNotFound-free: an unknown family is kInvalidArgument too.
  static Result<Variant> FromUri(std::string_view uri);

  bool operator==(const Variant&) const = default;
};

}  // namespace flashtune
FLASHTUNE_API_END
