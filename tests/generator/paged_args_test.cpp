// ValidateForwardArgs for the paged and varlen layouts and the workspace, the host-side table
// checks, WorkspaceBytes, and which families say they serve which layouts.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "flashtune/forward_args.h"
#include "flashtune/problem_set.h"
#include "flashtune/space.h"
#include "generator/families/decode_fwd.h"
#include "generator/family.h"

namespace flashtune {
namespace {

alignas(16) char storage[8][64];

Problem DecodeProblem(Layout layout) {
  Problem p{DType::kBF16, 128, false, 4, 1, 8192, 32, 8};
  p.layout = layout;
  return p;
}

// A valid paged decode call: 16-key pages, 512 columns of table.
ForwardArgs GoodPaged() {
  ForwardArgs a = ForwardArgs::Contiguous(DecodeProblem(Layout::kPaged), 16);
  a.q = storage[0];
  a.k = storage[1];
  a.v = storage[2];
  a.o = storage[3];
  a.paged.block_table = reinterpret_cast<const int32_t*>(storage[4]);
  a.seqlens_k = reinterpret_cast<const int32_t*>(storage[5]);
  return a;
}

ForwardArgs GoodVarlen() {
  Problem p{DType::kF16, 64, true, 3, 100, 200, 8, 8};
  p.layout = Layout::kVarlen;
  ForwardArgs a = ForwardArgs::Contiguous(p);
  a.q = storage[0];
  a.k = storage[1];
  a.v = storage[2];
  a.o = storage[3];
  a.varlen.cu_seqlens_q = reinterpret_cast<const int32_t*>(storage[4]);
  a.varlen.cu_seqlens_k = reinterpret_cast<const int32_t*>(storage[5]);
  return a;
}

void ExpectInvalid(const ForwardArgs& a, const std::string& fragment) {
  Status s = ValidateForwardArgs(a);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << fragment;
  EXPECT_NE(s.message().find(fragment), std::string::npos) << "got: " << s.message();
}

TEST(PagedArgs, ContiguousDescribesThePool) {
  const ForwardArgs a = GoodPaged();
  EXPECT_EQ(a.paged.block_size, 16);
  EXPECT_EQ(a.paged.max_blocks_per_seq, 512);
  EXPECT_EQ(a.paged.block_table_stride, 512);
  EXPECT_EQ(a.paged.num_blocks, 4 * 512);
  EXPECT_EQ(a.k_strides.batch, 16 * 8 * 128);  // one page
  EXPECT_EQ(a.k_strides.seq, 8 * 128);
  EXPECT_TRUE(ValidateForwardArgs(a).ok()) << ValidateForwardArgs(a).ToString();
}

TEST(PagedArgs, RejectsEachBadArgument) {
  ForwardArgs a = GoodPaged();
  a.paged.block_table = nullptr;
  ExpectInvalid(a, "paged.block_table must not be null");
  a = GoodPaged();
  a.paged.block_table = reinterpret_cast<const int32_t*>(storage[4] + 2);
  ExpectInvalid(a, "paged.block_table must be 4-byte aligned");
  a = GoodPaged();
  a.seqlens_k = nullptr;
  ExpectInvalid(a, "seqlens_k must not be null for the paged layout");
  for (int bad : {0, 3, 24, 512}) {
    a = GoodPaged();
    a.paged.block_size = bad;
    ExpectInvalid(a, "paged.block_size (" + std::to_string(bad) + ") must be a power of two in [1, 256]");
  }
  a = GoodPaged();
  a.paged.max_blocks_per_seq = 100;  // 1600 keys < 8192
  ExpectInvalid(a, "seqlen_k (8192) exceeds the cache a sequence can address");
  a = GoodPaged();
  a.paged.block_table_stride = 511;
  ExpectInvalid(a, "paged.block_table_stride (511) must be >= paged.max_blocks_per_seq (512)");
  a = GoodPaged();
  a.paged.num_blocks = 0;
  ExpectInvalid(a, "paged.num_blocks (0) must be in [1, 2^31 - 1]");
  a = GoodPaged();
  a.k_strides.batch = 12;
  ExpectInvalid(a, "k_strides.batch (12) must be a multiple of 8");
}

TEST(PagedArgs, AcceptsEveryPowerOfTwoBlockSize) {
  for (int bs = 1; bs <= 256; bs *= 2) {
    ForwardArgs a = ForwardArgs::Contiguous(DecodeProblem(Layout::kPaged), bs);
    a.q = storage[0];
    a.k = storage[1];
    a.v = storage[2];
    a.o = storage[3];
    a.paged.block_table = reinterpret_cast<const int32_t*>(storage[4]);
    a.seqlens_k = reinterpret_cast<const int32_t*>(storage[5]);
    EXPECT_TRUE(ValidateForwardArgs(a).ok()) << bs << ": " << ValidateForwardArgs(a).ToString();
  }
}

TEST(PagedArgs, HostTablesAreCheckedExactly) {
  ForwardArgs a = GoodPaged();
  a.problem.batch = 2;
  a.problem.seqlen_k = 40;
  a.paged = PagedKv{a.paged.block_table, 3, 3, 5, 16};
  std::vector<int32_t> table = {4, 0, -1, 2, 3, 99};  // sequence 0 uses 2 pages (<= 32 keys), sequence 1 two
  EXPECT_TRUE(CheckPagedKvHost(a, table, {32, 17}).ok()) << CheckPagedKvHost(a, table, {32, 17}).ToString();
  Status s = CheckPagedKvHost(a, table, {33, 17});  // 33 keys need the third page, -1
  EXPECT_NE(s.message().find("block_table[0][2] (-1) is not a page: must be in [0, paged.num_blocks = 5)"),
            std::string::npos)
      << s.ToString();
  s = CheckPagedKvHost(a, table, {32, 41});
  EXPECT_NE(s.message().find("seqlens_k[1] (41) must be in [0, seqlen_k = 40]"), std::string::npos) << s.ToString();
  s = CheckPagedKvHost(a, table, {-1, 0});
  EXPECT_NE(s.message().find("seqlens_k[0] (-1)"), std::string::npos) << s.ToString();
  s = CheckPagedKvHost(a, {1, 2}, {1, 1});
  EXPECT_NE(s.message().find("block_table has 2 entries"), std::string::npos) << s.ToString();
}

TEST(VarlenArgs, RejectsEachBadArgument) {
  EXPECT_TRUE(ValidateForwardArgs(GoodVarlen()).ok()) << ValidateForwardArgs(GoodVarlen()).ToString();
  ForwardArgs a = GoodVarlen();
  a.varlen.cu_seqlens_q = nullptr;
  ExpectInvalid(a, "varlen.cu_seqlens_q must not be null");
  a = GoodVarlen();
  a.varlen.cu_seqlens_k = nullptr;
  ExpectInvalid(a, "varlen.cu_seqlens_k must not be null");
  a = GoodVarlen();
  a.varlen.total_q = 301;
  ExpectInvalid(a, "varlen.total_q (301) exceeds batch * the longest sequence (300)");
  a = GoodVarlen();
  a.varlen.total_k = -1;
  ExpectInvalid(a, "varlen.total_k (-1) must be in [0, 2^31 - 1]");
  a = GoodVarlen();
  a.q_strides.batch = 8;
  ExpectInvalid(a, "q_strides.batch (8) must be 0 for the varlen layout");
  a = GoodVarlen();
  a.seqlens_k = reinterpret_cast<const int32_t*>(storage[6]);
  ExpectInvalid(a, "seqlens_k must be null for the varlen layout");
}

TEST(VarlenArgs, HostOffsetsAreCheckedExactly) {
  EXPECT_TRUE(CheckCuSeqlensHost("cu_seqlens_q", {0, 5, 5, 9}, 3, 5, 9).ok());
  auto message = [](const std::vector<int32_t>& cu, int64_t max_len, int64_t total) {
    return CheckCuSeqlensHost("cu_seqlens_q", cu, 3, max_len, total).message();
  };
  EXPECT_NE(message({1, 5, 5, 9}, 5, 9).find("cu_seqlens_q[0] (1) must be 0"), std::string::npos);
  EXPECT_NE(message({0, 5, 4, 9}, 5, 9).find("must be non-decreasing: [2] (4) < [1] (5)"), std::string::npos);
  EXPECT_NE(message({0, 5, 5, 9}, 4, 9).find("sequence 0 has 5 rows, more than the longest declared (4)"),
            std::string::npos);
  EXPECT_NE(message({0, 5, 5, 9}, 5, 10).find("cu_seqlens_q[batch] (9) must equal the total (10)"), std::string::npos);
  EXPECT_NE(message({0, 5}, 5, 5).find("has 2 entries; batch + 1 = 4 expected"), std::string::npos);
}

TEST(WorkspaceArgs, SizeAndPointerAreChecked) {
  ForwardArgs a = GoodPaged();
  a.workspace_bytes = -1;
  ExpectInvalid(a, "workspace_bytes (-1) must be >= 0");
  a.workspace_bytes = 64;
  ExpectInvalid(a, "workspace must not be null");
  a.workspace = storage[6] + 4;
  ExpectInvalid(a, "workspace must be 16-byte aligned");
}

TEST(WorkspaceArgs, PackingRefusesATooSmallWorkspace) {
  const Problem p = DecodeProblem(Layout::kPaged);  // B4 x Hkv8 = 32 blocks before splitting
  ASSERT_GT(WorkspaceBytes(p, 132), 0);
  ForwardArgs a = GoodPaged();
  const Variant v = DecodeVariant(DType::kBF16, 128, false, 64, 1, 4, 3, 2);
  LaunchPacket packet;
  packet.sm_count = 132;
  Status s = PackForward(v, a, &packet);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("workspace_bytes (0) is less than the"), std::string::npos) << s.ToString();
  a.workspace = storage[7];
  a.workspace_bytes = WorkspaceBytes(p, 132);
  ASSERT_TRUE(PackForward(v, a, &packet).ok()) << PackForward(v, a, &packet).ToString();
  // 32 blocks, one wave of 2 per SM on 132 SMs: 8 splits, then the combine over B * Hq * Nq rows.
  EXPECT_EQ(packet.grid[0], 32u);
  EXPECT_EQ(packet.grid[1], 8u);
  EXPECT_EQ(packet.grid[2], 1u);
  ASSERT_EQ(packet.next_steps, 1);
  EXPECT_EQ(packet.next[0].grid[0], unsigned(4 * 32 / 4));
}

TEST(WorkspaceArgs, NoWorkspaceWhenTheBatchFillsTheGpu) {
  Problem p = DecodeProblem(Layout::kDense);
  p.batch = 64;
  p.seqlen_k = 32768;  // 512 blocks already: one split at 2 blocks per SM
  EXPECT_EQ(detail::DecodeSplits(p, 132, 64, 1, 2), 1);
  p.batch = 128;  // 1024 blocks: no variant splits, no workspace
  EXPECT_EQ(WorkspaceBytes(p, 132), 0);
  p.batch = 1;
  p.seqlen_k = 100;  // splits never outnumber the key steps
  EXPECT_EQ(detail::DecodeSplits(p, 132, 64, 1, 4), 2);
  p.batch = 8;  // 64 blocks: 4 splits fill one wave of 264, 5 would start a second
  p.seqlen_k = 32768;
  EXPECT_EQ(detail::DecodeSplits(p, 132, 64, 1, 2), 4);
  p.batch = 1;  // 8 blocks, 66 would fit a wave of 4 per SM: capped
  p.seqlen_k = 1 << 20;
  EXPECT_EQ(detail::DecodeSplits(p, 132, 32, 1, 4), detail::kMaxDecodeSplits);
}

TEST(FamilyLayouts, PrefillFamiliesRefusePagedAndDecodeServesIt) {
  const Problem paged = DecodeProblem(Layout::kPaged);
  for (const Family* f : Families()) {
    if (f->name() == "decode_fwd") {
      EXPECT_GT(f->PreferenceFor(paged), 0);
      EXPECT_LT(f->PreferenceFor(Problem{DType::kBF16, 128, false, 1, 4096, 4096, 8, 8}), 0);
    } else {
      EXPECT_LT(f->PreferenceFor(paged), 0) << f->name();
    }
  }
  auto chosen = DefaultVariantFor(paged);
  ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
  EXPECT_EQ(chosen->family, "decode_fwd");
  // A paged call packed for fa2_fwd is refused as unsupported (the runtime falls back).
  ForwardArgs a = GoodPaged();
  const Variant fa2 = DefaultVariant(ClassOf(paged), kDefaultMaxSmemBytes, "sm_80");
  LaunchPacket packet;
  Status s = PackForward(fa2, a, &packet);
  EXPECT_EQ(s.code(), Code::kUnsupported) << s.ToString();
  EXPECT_NE(s.message().find("fa2_fwd does not serve"), std::string::npos) << s.ToString();
  // Varlen is served by no family yet: the planner says so.
  Problem varlen = paged;
  varlen.layout = Layout::kVarlen;
  EXPECT_EQ(DefaultVariantFor(varlen).status().code(), Code::kInvalidArgument);
}

TEST(FamilyLayouts, DecodeAndPrefillBucketsAreNeverNear) {
  const BucketKey decode = BucketOf(Problem{DType::kBF16, 128, false, 8, 1, 8192, 32, 8});
  const BucketKey spec = BucketOf(Problem{DType::kBF16, 128, false, 8, 16, 8192, 32, 8});
  const BucketKey prefill = BucketOf(Problem{DType::kBF16, 128, false, 8, 32, 8192, 32, 8});
  EXPECT_EQ(BucketDistance(decode, spec), 4);
  EXPECT_EQ(BucketDistance(decode, prefill), -1);
  EXPECT_EQ(BucketDistance(spec, prefill), -1);
}

}  // namespace
}  // namespace flashtune
