#include "generator/families/fa2_fwd.h"
#include "flashtune/forward_args.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "generator/family.h"

namespace flashtune {
namespace {

alignas(16) char buffer[4][64];

ForwardArgs Good() {
  ForwardArgs a;
  a.problem.dtype = DType::kF16;
  a.problem.head_dim = 64;
  a.problem.batch = 2;
  a.problem.seqlen_q = 100;
  a.problem.seqlen_k = 200;
  a.problem.heads_q = 12;
  a.problem.heads_kv = 4;
  a.q = buffer[0];
  a.k = buffer[1];
  a.v = buffer[2];
  a.o = buffer[3];
  a.q_strides = a.o_strides = Strides::Contiguous(100, 12, 64);
  a.k_strides = a.v_strides = Strides::Contiguous(200, 4, 64);
  return a;
}

void ExpectInvalid(const ForwardArgs& a, const std::string& fragment) {
  Status s = ValidateForwardArgs(a);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << fragment;
  EXPECT_NE(s.message().find(fragment), std::string::npos) << "got: " << s.message();
}

TEST(ForwardArgs, AcceptsAValidCall) {
  EXPECT_TRUE(ValidateForwardArgs(Good()).ok()) << ValidateForwardArgs(Good()).ToString();
  ForwardArgs a = Good();
  alignas(16) static float lse[4];
  a.lse = lse;
  a.softmax_scale = 0.5f;
  EXPECT_TRUE(ValidateForwardArgs(a).ok());
  // Head-major (non-contiguous) strides are fine as long as rows stay 16-byte aligned.
  a.q_strides = {100 * 12 * 64, 64, 100 * 64};
  EXPECT_TRUE(ValidateForwardArgs(a).ok());
}

TEST(ForwardArgs, RejectsEachBadArgument) {
  ForwardArgs a = Good();
  a.problem.head_dim = 80;
  ExpectInvalid(a, "head_dim (80) must be one of 32, 64, 96, 128, 160, 192, 224, 256");
  a = Good(); a.problem.batch = 0;
  ExpectInvalid(a, "batch (0) must be in [1, 65535]");
  a = Good(); a.problem.batch = 65536;
  ExpectInvalid(a, "batch (65536) must be in [1, 65535]");
  a = Good(); a.problem.seqlen_q = 0;
  ExpectInvalid(a, "seqlen_q (0) must be in [1, 2147483647]");
  a = Good(); a.problem.seqlen_k = int64_t(1) << 31;
  ExpectInvalid(a, "seqlen_k (2147483648) must be in [1, 2147483647]");
  a = Good(); a.problem.heads_q = 70000;
  ExpectInvalid(a, "heads_q (70000) must be in [1, 65535]");
  a = Good(); a.problem.heads_kv = -1;
  ExpectInvalid(a, "heads_kv (-1) must be in [1, 65535]");
  a = Good(); a.problem.heads_q = 12; a.problem.heads_kv = 5;
  ExpectInvalid(a, "heads_q (12) must be a multiple of heads_kv (5)");
  a = Good(); a.q = nullptr;
  ExpectInvalid(a, "q must not be null");
  a = Good(); a.k = nullptr;
  ExpectInvalid(a, "k must not be null");
  a = Good(); a.v = nullptr;
  ExpectInvalid(a, "v must not be null");
  a = Good(); a.o = nullptr;
  ExpectInvalid(a, "o must not be null");
  a = Good(); a.v = buffer[2] + 8;
  ExpectInvalid(a, "v must be 16-byte aligned");
  a = Good(); a.lse = reinterpret_cast<float*>(buffer[0] + 2);
  ExpectInvalid(a, "lse must be 4-byte aligned");
  a = Good(); a.k_strides.seq = -64;
  ExpectInvalid(a, "k_strides.seq (-64) must be >= 0");
  a = Good(); a.o_strides.head = 68;
  ExpectInvalid(a, "o_strides.head (68) must be a multiple of 8 elements (16 bytes)");
  a = Good(); a.problem.batch = 3; a.q_strides.batch = int64_t(1) << 62;
  ExpectInvalid(a, "q_strides: the largest element offset overflows int64");
  a = Good(); a.softmax_scale = -1.0f;
  ExpectInvalid(a, "softmax_scale");
  a = Good(); a.softmax_scale = std::numeric_limits<float>::infinity();
  ExpectInvalid(a, "must be finite and >= 0");
  a = Good(); a.softmax_scale = std::numeric_limits<float>::quiet_NaN();
  ExpectInvalid(a, "must be finite and >= 0");
}

TEST(ForwardArgs, AnOutputWhoseElementsOverlapIsRefused) {
  // Two rows or heads of o at one address would be written by two threads at once.
  ForwardArgs a = Good();
  a.o_strides.seq = 0;
  ExpectInvalid(a, "o_strides.seq (0) makes o's elements overlap: it is written, so each of its 100 seq entries "
                   "needs its own 64 elements (a stride >= 64)");
  a = Good(); a.o_strides.head = 32;  // half a row of 64
  ExpectInvalid(a, "o_strides.head (32) makes o's elements overlap");
  a = Good(); a.o_strides.batch = 99 * 12 * 64;  // the next batch starts inside this one's last row
  ExpectInvalid(a, "o_strides.batch (76032) makes o's elements overlap");
  // Any order of the dimensions in memory is fine when nothing overlaps: [B, H, N, D] storage,
  // and gaps between rows (a slice of a wider buffer).
  a = Good(); a.o_strides = {12 * 100 * 64, 64, 100 * 64};
  EXPECT_TRUE(ValidateForwardArgs(a).ok()) << ValidateForwardArgs(a).ToString();
  a = Good(); a.o_strides = {100 * 3 * 12 * 64, 3 * 12 * 64, 64};
  EXPECT_TRUE(ValidateForwardArgs(a).ok()) << ValidateForwardArgs(a).ToString();
  // A dimension of one element has no second entry to overlap with; inputs may overlap (K/V
  // broadcast over heads, q repeated over the batch).
  a = Good(); a.problem.seqlen_q = 1; a.q_strides = a.o_strides = {12 * 64, 0, 64};
  EXPECT_TRUE(ValidateForwardArgs(a).ok()) << ValidateForwardArgs(a).ToString();
  a = Good(); a.k_strides.head = a.v_strides.head = 0; a.q_strides.batch = 0;
  EXPECT_TRUE(ValidateForwardArgs(a).ok()) << ValidateForwardArgs(a).ToString();
}

TEST(ForwardArgs, EffectiveScaleDefaultsToRsqrtHeadDim) {
  ForwardArgs a = Good();
  EXPECT_FLOAT_EQ(a.EffectiveScale(), 0.125f);
  a.softmax_scale = 0.3f;
  EXPECT_FLOAT_EQ(a.EffectiveScale(), 0.3f);
}

TEST(ForwardArgs, CheckArgsMatchVariantNamesTheField) {
  ForwardArgs a = Good();
  Variant v = Fa2Variant(DType::kF16, 64, false, 128, 64, 4, 2);
  EXPECT_TRUE(CheckArgsMatchVariant(v, a).ok());
  a.problem.head_dim = 128;
  Status s = CheckArgsMatchVariant(v, a);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("args.head_dim (128) does not match the variant's head_dim (64) of "
                             "fa2_fwd_f16_d64_br128_bc64_w4_s2_full"),
            std::string::npos) << s.message();
  a = Good();
  a.problem.dtype = DType::kBF16;
  EXPECT_NE(CheckArgsMatchVariant(v, a).message().find("args.dtype (bf16)"), std::string::npos);
  a = Good();
  a.problem.causal = true;
  EXPECT_NE(CheckArgsMatchVariant(v, a).message().find("args.causal (true)"), std::string::npos);
}

// Needs valid pointers to pack: fake, aligned addresses (nothing is launched).
ForwardArgs WithPointers(ForwardArgs a) {
  a.q = reinterpret_cast<const void*>(uintptr_t{0x10000});
  a.k = reinterpret_cast<const void*>(uintptr_t{0x20000});
  a.v = reinterpret_cast<const void*>(uintptr_t{0x30000});
  a.o = reinterpret_cast<void*>(uintptr_t{0x40000});
  return a;
}

TEST(Fa2FwdPack, GridCoversQueriesHeadsBatch) {
  ForwardArgs a = WithPointers(Good());  // Nq 100, Hq 12, B 2
  Variant v = Fa2Variant(DType::kF16, 64, false, 64, 64, 4, 2);
  LaunchPacket c;
  ASSERT_TRUE(PackForward(v, a, &c).ok());
  EXPECT_EQ(c.grid[0], 2u);
  EXPECT_EQ(c.grid[1], 12u);
  EXPECT_EQ(c.grid[2], 2u);
  EXPECT_EQ(c.block[0], 128u);
  EXPECT_EQ(c.block[1], 1u);
  EXPECT_EQ(c.block[2], 1u);
  EXPECT_EQ(c.smem_bytes, uint32_t((64 + 2 * 2 * 64) * 72 * 2));
  EXPECT_EQ(c.tensor_maps, 0);
  EXPECT_EQ(c.arg_bytes, sizeof(detail::KernelParams));
  v.SetParam("br", 128);
  v.SetParam("w", 8);
  a.q_strides = a.o_strides = Strides::Contiguous(129, 12, 64);  // room for the longer rows below
  a.problem.seqlen_q = 128;
  ASSERT_TRUE(PackForward(v, a, &c).ok());
  EXPECT_EQ(c.grid[0], 1u);
  EXPECT_EQ(c.block[0], 256u);
  a.problem.seqlen_q = 129;
  ASSERT_TRUE(PackForward(v, a, &c).ok());
  EXPECT_EQ(c.grid[0], 2u);
}

TEST(Fa2FwdPack, RefusesArgsOfAnotherClass) {
  ForwardArgs a = WithPointers(Good());
  a.problem.causal = true;
  LaunchPacket c;
  Status s = PackForward(Fa2Variant(DType::kF16, 64, false, 64, 64, 4, 2), a, &c);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("args.causal (true)"), std::string::npos) << s.message();
}

TEST(LaunchConfig, KernelParamsMirrorArgs) {
  ForwardArgs a = Good();
  a.softmax_scale = 0.5f;
  a.k_strides = {1, 2, 3};  // copied verbatim (validation is separate)
  detail::KernelParams p = detail::MakeKernelParams(a);
  EXPECT_EQ(p.q, a.q);
  EXPECT_EQ(p.k, a.k);
  EXPECT_EQ(p.v, a.v);
  EXPECT_EQ(p.o, a.o);
  EXPECT_EQ(p.lse, nullptr);
  EXPECT_EQ(p.k_stride[0], 1);
  EXPECT_EQ(p.k_stride[1], 2);
  EXPECT_EQ(p.k_stride[2], 3);
  EXPECT_EQ(p.q_stride[1], 12 * 64);
  EXPECT_EQ(p.o_stride[0], 100 * 12 * 64);
  EXPECT_EQ(p.batch, 2);
  EXPECT_EQ(p.seqlen_q, 100);
  EXPECT_EQ(p.seqlen_k, 200);
  EXPECT_EQ(p.heads_q, 12);
  EXPECT_EQ(p.heads_kv, 4);
  EXPECT_FLOAT_EQ(p.scale_log2, float(0.5 * 1.4426950408889634));
  a.softmax_scale = 0.0f;
  EXPECT_FLOAT_EQ(detail::MakeKernelParams(a).scale_log2, float(0.125 * 1.4426950408889634));
  EXPECT_EQ(p.cu_seqlens_q, nullptr);  // dense: the kernel indexes by batch
  EXPECT_EQ(p.cu_seqlens_k, nullptr);
}

// Varlen: the kernel gets the offsets and the totals (it clamps device offsets to them).
TEST(LaunchConfig, KernelParamsCarryVarlenOffsets) {
  ForwardArgs a = Good();
  a.problem.layout = Layout::kVarlen;
  alignas(4) static const int32_t cu_q[3] = {0, 10, 30}, cu_k[3] = {0, 50, 51};
  a.varlen = {cu_q, cu_k, 30, 51};
  detail::KernelParams p = detail::MakeKernelParams(a);
  EXPECT_EQ(p.cu_seqlens_q, cu_q);
  EXPECT_EQ(p.cu_seqlens_k, cu_k);
  EXPECT_EQ(p.total_q, 30);
  EXPECT_EQ(p.total_k, 51);
  a.problem.layout = Layout::kDense;
  EXPECT_EQ(detail::MakeKernelParams(a).cu_seqlens_q, nullptr);
}

}  // namespace
}  // namespace flashtune

namespace flashtune {
namespace {

TEST(ForwardArgs, ContiguousDescribesAPackedProblem) {
  const Problem p{DType::kF16, 64, true, 3, 100, 200, 8, 2};
  const ForwardArgs a = ForwardArgs::Contiguous(p);
  EXPECT_EQ(a.problem, p);
  EXPECT_EQ(a.q_strides.batch, 100 * 8 * 64);
  EXPECT_EQ(a.q_strides.seq, 8 * 64);
  EXPECT_EQ(a.q_strides.head, 64);
  EXPECT_EQ(a.k_strides.batch, 200 * 2 * 64);
  EXPECT_EQ(a.v_strides.seq, 2 * 64);
  EXPECT_EQ(a.o_strides.batch, a.q_strides.batch);
  EXPECT_EQ(a.q, nullptr);
  EXPECT_EQ(a.lse, nullptr);
  // Pointers are the caller's to fill: without them the arguments are rejected by name.
  Status s = ValidateForwardArgs(a);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("q"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace flashtune
