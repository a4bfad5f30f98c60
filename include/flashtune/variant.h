// flashtune/variant.h — what a kernel variant is, and the problem it solves.
//
// A Problem is one attention forward call's shape (dtype, head dim, causal, sizes).
// A Variant is one point of the kernel design space: every compile-time parameter of the
// FA-2 forward template. Its URI ("fa2_fwd_bf16_d128_br128_bc64_w4_s2_causal") names every
// parameter; it is the kernel's extern "C" name, the database key and the file name.
//
// Thread safety: value types; distinct objects may be used from different threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "flashtune/export.h"
#include "flashtune/status.h"

FLASHTUNE_API_BEGIN
namespace flashtune {

enum class DType { kF16, kBF16 };

// "f16" / "bf16".
std::string_view DTypeName(DType dtype);
// Parses "f16"/"fp16"/"half" and "bf16"/"bfloat16"; kInvalidArgument naming `what` otherwise.
Result<DType> ParseDType(std::string_view text, std::string_view what = "dtype");

// Head dims the template supports.
inline constexpr int kSupportedHeadDims[] = {32, 64, 96, 128, 160, 192, 224, 256};

// One forward call's shape. q [B, Nq, Hq, D], k/v [B, Nk, Hkv, D], o like q, lse [B, Hq, Nq].
struct Problem {
  DType dtype = DType::kBF16;
  int head_dim = 128;
  bool causal = false;
  int64_t batch = 1;
  int64_t seqlen_q = 1;
  int64_t seqlen_k = 1;
  int64_t heads_q = 1;
  int64_t heads_kv = 1;

  // Forward FLOPs by FA-2's convention: 4·B·Hq·Nq·Nk·D, halved when causal with Nq = Nk.
  double Flops() const;
  // "bf16 d128 causal B4 Nq4096 Nk4096 Hq16 Hkv16".
  std::string ToString() const;
  bool operator==(const Problem&) const = default;
};

// Every compile-time parameter of the FA-2 forward template.
struct Variant {
  DType dtype = DType::kBF16;
  int head_dim = 128;
  bool causal = false;
  int block_m = 128;  // B_r: query rows per thread block
  int block_n = 64;   // B_c: key/value rows per inner-loop step
  int warps = 4;      // warps per thread block; each owns block_m / warps query rows
  int stages = 2;     // K/V shared-memory buffers (1 = no prefetch)

  // "fa2_fwd_bf16_d128_br128_bc64_w4_s2_causal" (or "..._s2_full" when not causal).
  std::string Uri() const;
  // Inverse of Uri(); kInvalidArgument naming the bad field otherwise.
  static Result<Variant> FromUri(std::string_view uri);

  int threads() const { return warps * 32; }
  bool operator==(const Variant&) const = default;
};

}  // namespace flashtune
FLASHTUNE_API_END
