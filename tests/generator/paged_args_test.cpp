// ValidateForwardArgs for the paged and varlen layouts and the workspace, the host-side table
// checks, WorkspaceBytes, and which families say they serve which layouts.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "flashtune/backward_args.h"
#include "flashtune/forward_args.h"
#include "flashtune/problem_set.h"
#include "flashtune/space.h"
#include "generator/families/decode_fwd.h"
#include "generator/families/fa2_fwd.h"
#include "generator/family.h"
#include "generator/kernel_abi.h"

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
  a = GoodVarlen();
  a.varlen.cu_seqlens_k = reinterpret_cast<const int32_t*>(storage[5] + 2);
  ExpectInvalid(a, "must be 4-byte aligned (int32)");
  a = GoodVarlen();
  a.varlen.total_k = int64_t{1} << 31;
  a.problem.seqlen_k = int64_t{1} << 30;
  ExpectInvalid(a, "varlen.total_k (2147483648) must be in [0, 2^31 - 1]");
  a = GoodVarlen();
  a.o_strides.batch = a.o_strides.seq;
  ExpectInvalid(a, "o_strides.batch");
  a = GoodVarlen();
  a.k_strides.seq = 12;  // rows must stay 16-byte aligned
  ExpectInvalid(a, "k_strides.seq (12) must be a multiple of 8 elements");
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

TEST(PagedArgs, QueriesMayBePackedAndNothingElseOfVarlen) {
  // B4 decode steps with up to 4 new tokens a sequence, packed: q/o [total_q, Hq, D].
  ForwardArgs a = GoodPaged();
  a.problem.seqlen_q = 4;
  a.varlen.cu_seqlens_q = reinterpret_cast<const int32_t*>(storage[6]);
  a.varlen.total_q = 9;
  a.q_strides = a.o_strides = Strides{0, 32 * 128, 128};
  EXPECT_TRUE(ValidateForwardArgs(a).ok()) << ValidateForwardArgs(a).ToString();
  EXPECT_TRUE(PackedQueries(a));
  EXPECT_FALSE(PackedQueries(GoodPaged()));
  ForwardArgs bad = a;
  bad.q_strides.batch = 4 * 32 * 128;
  ExpectInvalid(bad, "q_strides.batch and o_strides.batch must be 0 when the queries are packed");
  bad = a;
  bad.varlen.total_q = 17;  // more rows than 4 sequences of at most 4
  ExpectInvalid(bad, "varlen.total_q (17) must be in [0, batch * seqlen_q = 16]");
  bad = a;
  bad.varlen.cu_seqlens_k = reinterpret_cast<const int32_t*>(storage[7]);
  ExpectInvalid(bad, "varlen.cu_seqlens_k and varlen.total_k must be null or 0 for the paged");
  bad = a;
  bad.varlen.cu_seqlens_q = reinterpret_cast<const int32_t*>(storage[6] + 2);
  ExpectInvalid(bad, "varlen.cu_seqlens_q must be 4-byte aligned");
  bad = GoodPaged();
  bad.varlen.total_q = 9;
  ExpectInvalid(bad, "varlen.total_q (9) is set but varlen.cu_seqlens_q is null");
  // A dense call refuses the other layouts' tables rather than ignoring them.
  ForwardArgs d = ForwardArgs::Contiguous(DecodeProblem(Layout::kDense));
  d.q = storage[0], d.k = storage[1], d.v = storage[2], d.o = storage[3];
  d.varlen.cu_seqlens_q = reinterpret_cast<const int32_t*>(storage[6]);
  ExpectInvalid(d, "must be null or 0 for the dense layout (set problem.layout to paged or varlen)");
  d.varlen.cu_seqlens_q = nullptr;
  d.paged.block_table = reinterpret_cast<const int32_t*>(storage[4]);
  ExpectInvalid(d, "must be null or 0 for the dense layout");
  // The host check reads the query offsets too.
  std::vector<int32_t> table(4 * 512, 1), lens = {10, 20, 30, 40}, cu_q = {0, 1, 5, 9, 9};
  HostTables t;
  t.block_table = table.data();
  t.seqlens_k = lens.data();
  EXPECT_EQ(CheckHostTables(a, t).message(), "tables.cu_seqlens_q is null, but the paged call reads it");
  t.cu_seqlens_q = cu_q.data();
  EXPECT_TRUE(CheckHostTables(a, t).ok()) << CheckHostTables(a, t).ToString();
  cu_q = {0, 1, 6, 9, 9};  // 5 tokens in sequence 1, more than seqlen_q = 4
  EXPECT_NE(CheckHostTables(a, t).message().find("cu_seqlens_q: sequence 1 has 5 rows"), std::string::npos)
      << CheckHostTables(a, t).message();
}

TEST(HostTables, EachLayoutsTablesAreCheckedAndNamed) {
  // Paged: B4, 512 columns of 16-key pages; every page in range, then one that is not.
  ForwardArgs a = GoodPaged();
  std::vector<int32_t> table(4 * 512), lens = {8192, 1, 0, 4097};
  for (size_t i = 0; i < table.size(); ++i) table[i] = int32_t(i % 2048);
  HostTables t;
  t.block_table = table.data();
  t.seqlens_k = lens.data();
  EXPECT_TRUE(CheckHostTables(a, t).ok()) << CheckHostTables(a, t).ToString();
  table[3 * 512 + 256] = 2048;  // sequence 3's 257th page: 4097 keys reach it
  EXPECT_NE(CheckHostTables(a, t).message().find("block_table[3][256] (2048) is not a page"), std::string::npos)
      << CheckHostTables(a, t).message();
  lens[3] = 4096;  // one key fewer: that column is no longer read
  EXPECT_TRUE(CheckHostTables(a, t).ok()) << CheckHostTables(a, t).ToString();
  t.block_table = nullptr;
  EXPECT_EQ(CheckHostTables(a, t).message(), "tables.block_table is null, but the paged call reads it");
  // The arguments themselves are checked first.
  t.block_table = table.data();
  a.paged.block_size = 12;
  EXPECT_NE(CheckHostTables(a, t).message().find("paged.block_size (12)"), std::string::npos);

  // Dense with lengths: each within [0, Nk]; without lengths there is no table to check.
  ForwardArgs d = ForwardArgs::Contiguous(DecodeProblem(Layout::kDense));
  d.q = storage[0], d.k = storage[1], d.v = storage[2], d.o = storage[3];
  EXPECT_TRUE(CheckHostTables(d, HostTables{}).ok());
  EXPECT_FALSE(DenseWithLengths(d));
  d.seqlens_k = reinterpret_cast<const int32_t*>(storage[5]);
  EXPECT_TRUE(DenseWithLengths(d));
  EXPECT_FALSE(DenseWithLengths(GoodPaged()));  // paged lengths are the layout's own
  EXPECT_EQ(CheckHostTables(d, HostTables{}).message(), "tables.seqlens_k is null, but the dense call reads it");
  std::vector<int32_t> dense_lens = {8192, 0, 8193, 5};
  HostTables dt;
  dt.seqlens_k = dense_lens.data();
  EXPECT_EQ(CheckHostTables(d, dt).message(), "seqlens_k[2] (8193) must be in [0, seqlen_k = 8192]");

  // Varlen, three sequences (Nq <= 100, Nk <= 200, totals 300 / 600), and a mixed batch whose
  // first sequence must have at most decode_max_seqlen_q queries.
  ForwardArgs v = GoodVarlen();
  std::vector<int32_t> cu_q = {0, 100, 200, 300}, cu_k = {0, 200, 400, 600};
  HostTables vt;
  vt.cu_seqlens_q = cu_q.data();
  vt.cu_seqlens_k = cu_k.data();
  EXPECT_TRUE(CheckHostTables(v, vt).ok()) << CheckHostTables(v, vt).ToString();
  cu_k[2] = 350;
  EXPECT_NE(CheckHostTables(v, vt).message().find("cu_seqlens_k: sequence 2 has 250 rows"), std::string::npos)
      << CheckHostTables(v, vt).message();
  cu_k[2] = 400;
  v.varlen.decode_seqs = 1;
  v.varlen.decode_max_seqlen_q = 4;
  EXPECT_NE(CheckHostTables(v, vt).message().find("sequence 0 has 100 queries, more than "
                                                  "varlen.decode_max_seqlen_q (4)"),
            std::string::npos)
      << CheckHostTables(v, vt).message();
  cu_q = {0, 3, 103, 203};
  v.varlen.total_q = 203;
  EXPECT_TRUE(CheckHostTables(v, vt).ok()) << CheckHostTables(v, vt).ToString();
  vt.cu_seqlens_k = nullptr;
  EXPECT_EQ(CheckHostTables(v, vt).message(), "tables.cu_seqlens_k is null, but the varlen call reads it");
}

TEST(VarlenArgs, MixedBatchFieldsAreChecked) {
  ForwardArgs a = GoodVarlen();  // B3, Nq 100
  a.varlen.decode_seqs = 2;
  a.varlen.decode_max_seqlen_q = 16;
  EXPECT_TRUE(ValidateForwardArgs(a).ok()) << ValidateForwardArgs(a).ToString();
  a.varlen.decode_seqs = 4;
  ExpectInvalid(a, "varlen.decode_seqs (4) must be in [0, batch = 3]");
  a.varlen.decode_seqs = -1;
  ExpectInvalid(a, "varlen.decode_seqs (-1)");
  a.varlen.decode_seqs = 1;
  a.varlen.decode_max_seqlen_q = 0;
  ExpectInvalid(a, "varlen.decode_max_seqlen_q (0) must be in [1, 16]");
  a.varlen.decode_max_seqlen_q = 17;
  ExpectInvalid(a, "varlen.decode_max_seqlen_q (17) must be in [1, 16]");
  a.problem.seqlen_q = 8;  // the decode rows cannot be longer than the longest sequence
  a.varlen.total_q = 24;
  a.varlen.decode_max_seqlen_q = 9;
  ExpectInvalid(a, "varlen.decode_max_seqlen_q (9) must be in [1, 8]");
}

// vLLM's mixed batch over pages: packed queries, decode sequences first. The same fields and
// rules as varlen's; with dense queries (every sequence seqlen_q long) decode_seqs is refused.
// Its parts: the decode sequences as a decode-sized paged problem over the same table and
// lengths, then the rest from table row decode_seqs, length decode_seqs and cu_seqlens_q +
// decode_seqs. Host tables: a decode sequence with too many queries is named.
TEST(PagedArgs, AMixedBatchOfPackedQueriesIsTwoLaunchesOverTheSameCache) {
  ForwardArgs a = GoodPaged();  // B4, Nk 8192, 16-key pages
  a.problem.seqlen_q = 300;
  a.varlen.cu_seqlens_q = reinterpret_cast<const int32_t*>(storage[6]);
  a.varlen.total_q = 303;
  a.q_strides = a.o_strides = Strides{0, 32 * 128, 128};
  a.varlen.decode_seqs = 3;
  a.varlen.decode_max_seqlen_q = 1;
  EXPECT_TRUE(ValidateForwardArgs(a).ok()) << ValidateForwardArgs(a).ToString();
  EXPECT_TRUE(IsMixedVarlen(a));
  CallParts two = MixedVarlenParts(a);
  ASSERT_EQ(two.count, 2);
  const ForwardArgs& d = two.part[0];
  EXPECT_EQ(d.problem.layout, Layout::kPaged);
  EXPECT_EQ(d.problem.batch, 3);
  EXPECT_EQ(d.problem.seqlen_q, 1);
  EXPECT_EQ(d.paged.block_table, a.paged.block_table);
  EXPECT_EQ(d.seqlens_k, a.seqlens_k);
  EXPECT_EQ(d.varlen.cu_seqlens_q, a.varlen.cu_seqlens_q);
  EXPECT_EQ(d.varlen.decode_seqs, 0);
  EXPECT_EQ(FamiliesFor(d.problem).front()->name(), "decode_fwd");
  const ForwardArgs& f = two.part[1];
  EXPECT_EQ(f.problem.batch, 1);
  EXPECT_EQ(f.problem.seqlen_q, 300);
  EXPECT_EQ(f.paged.block_table, a.paged.block_table + 3 * a.paged.block_table_stride);
  EXPECT_EQ(f.seqlens_k, a.seqlens_k + 3);
  EXPECT_EQ(f.varlen.cu_seqlens_q, a.varlen.cu_seqlens_q + 3);
  EXPECT_EQ(f.varlen.cu_seqlens_k, nullptr);
  EXPECT_EQ(f.varlen.total_q, 303);
  EXPECT_EQ(f.paged.num_blocks, a.paged.num_blocks);
  EXPECT_NE(FamiliesFor(f.problem).front()->name(), "decode_fwd");
  // The host tables: sequence 1 with 2 queries is not a decode sequence of at most 1.
  std::vector<int32_t> cu = {0, 1, 3, 4, 304}, lens = {100, 17, 8192, 4000};
  std::vector<int32_t> table(size_t(4 * a.paged.block_table_stride), 0);
  a.varlen.total_q = 304;
  HostTables t;
  t.cu_seqlens_q = cu.data();
  t.block_table = table.data();
  t.seqlens_k = lens.data();
  EXPECT_NE(CheckHostTables(a, t).message().find("sequence 1 has 2 queries, more than varlen.decode_max_seqlen_q (1)"),
            std::string::npos)
      << CheckHostTables(a, t).message();
  a.varlen.decode_max_seqlen_q = 2;
  EXPECT_TRUE(CheckHostTables(a, t).ok()) << CheckHostTables(a, t).ToString();
  a.varlen.decode_max_seqlen_q = 0;
  ExpectInvalid(a, "varlen.decode_max_seqlen_q (0) must be in [1, 16]");
  a.varlen.decode_max_seqlen_q = 1;
  a.varlen.decode_seqs = 5;
  ExpectInvalid(a, "varlen.decode_seqs (5) must be in [0, batch = 4]");
  ForwardArgs dense_q = GoodPaged();
  dense_q.problem.seqlen_q = 300;
  dense_q.varlen.decode_seqs = 1;
  dense_q.varlen.decode_max_seqlen_q = 1;
  ExpectInvalid(dense_q, "varlen.decode_seqs (1) needs packed queries (varlen.cu_seqlens_q)");
}

// Decode sequences first: the decode part is the first decode_seqs sequences as a decode-sized
// problem, the prefill part the rest with offsets from cu_seqlens + decode_seqs; tensors and
// totals are shared. Calls that are not mixed stay one launch.
TEST(VarlenArgs, MixedBatchIsTwoLaunchesOverTheSameTensors) {
  ForwardArgs a = GoodVarlen();  // B3, Nq 100, Nk 200
  CallParts one = MixedVarlenParts(a);
  ASSERT_EQ(one.count, 1);
  EXPECT_EQ(one.part[0].problem.batch, 3);
  a.varlen.decode_seqs = 2;
  a.varlen.decode_max_seqlen_q = 4;
  CallParts two = MixedVarlenParts(a);
  ASSERT_EQ(two.count, 2);
  const ForwardArgs& d = two.part[0];
  EXPECT_EQ(d.problem.batch, 2);
  EXPECT_EQ(d.problem.seqlen_q, 4);
  EXPECT_EQ(d.problem.seqlen_k, 200);
  EXPECT_EQ(d.varlen.cu_seqlens_q, a.varlen.cu_seqlens_q);
  EXPECT_EQ(d.varlen.total_q, a.varlen.total_q);
  EXPECT_EQ(d.varlen.decode_seqs, 0);
  EXPECT_EQ(FamiliesFor(d.problem).front()->name(), "decode_fwd");
  const ForwardArgs& f = two.part[1];
  EXPECT_EQ(f.problem.batch, 1);
  EXPECT_EQ(f.problem.seqlen_q, 100);
  EXPECT_EQ(f.varlen.cu_seqlens_q, a.varlen.cu_seqlens_q + 2);
  EXPECT_EQ(f.varlen.cu_seqlens_k, a.varlen.cu_seqlens_k + 2);
  EXPECT_EQ(f.varlen.total_k, a.varlen.total_k);
  EXPECT_EQ(f.q, a.q);
  EXPECT_NE(FamiliesFor(f.problem).front()->name(), "decode_fwd");
  a.varlen.decode_seqs = 3;  // every sequence a decode one: no prefill launch
  ASSERT_EQ(MixedVarlenParts(a).count, 1);
  EXPECT_EQ(MixedVarlenParts(a).part[0].problem.batch, 3);
  EXPECT_EQ(MixedVarlenParts(a).part[0].problem.seqlen_q, 4);
  a.problem.seqlen_q = 16;  // already a decode call: decode_fwd takes all of it at once
  a.varlen.total_q = 48;
  ASSERT_EQ(MixedVarlenParts(a).count, 1);
  EXPECT_EQ(MixedVarlenParts(a).part[0].problem.seqlen_q, 16);
}

// A varlen call's workspace covers its decode part for any decode_seqs, so the caller can size
// it from the problem before knowing the split; so does a paged call's past 16 queries (a mixed
// batch of packed queries over pages).
TEST(WorkspaceArgs, VarlenAndPagedWorkspacesCoverAnyDecodePart) {
  for (Layout layout : {Layout::kVarlen, Layout::kPaged}) {
    Problem p{DType::kBF16, 128, false, 40, 4096, 8192, 32, 8};
    p.layout = layout;
    const int64_t bytes = WorkspaceBytes(p, 132);
    ASSERT_GT(bytes, 0) << LayoutName(layout);
    const Family* decode = FindFamily("decode_fwd");
    for (int64_t d = 1; d <= p.batch; ++d)
      for (int64_t nq : {1, 2, 5, 16}) {
        Problem part = p;
        part.batch = d;
        part.seqlen_q = nq;
        for (int rm : {1, 2, 4})
          for (int cs : {1, 2, 4}) {
            const int splits = detail::DecodeSplits(part, 132, 32, rm, cs);
            if (splits > 1) {
              EXPECT_LE(int64_t(splits) * d * p.heads_q * nq * (p.head_dim + 1) * 4, bytes)
                  << LayoutName(layout) << " " << d << " " << nq;
            }
          }
        EXPECT_LE(decode->WorkspaceBytes(part, 132), bytes) << LayoutName(layout);
      }
  }
}

// WorkspaceUse says what WorkspaceBytes sized, part by part: the largest part's bytes are the
// workspace's; families with the same part are named together; none when nothing needs any.
TEST(WorkspaceArgs, TheUseNamesEachPartWithItsBytes) {
  auto has = [](const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; };
  Problem paged{DType::kBF16, 128, true, 64, 1000, 1000, 32, 8};
  paged.layout = Layout::kPaged;
  const std::string over_pages = WorkspaceUse(paged, 132);
  EXPECT_TRUE(has(over_pages, "the largest of these")) << over_pages;
  EXPECT_TRUE(has(over_pages, "hopper_paged: the tile counter that claims tiles at run time")) << over_pages;
  EXPECT_TRUE(has(over_pages, "tiles at run time (a call without it deals them statically), 16 bytes")) << over_pages;
  EXPECT_TRUE(has(over_pages, "decode_fwd: the split-KV partial results")) << over_pages;
  EXPECT_TRUE(has(over_pages, ", " + std::to_string(WorkspaceBytes(paged, 132)) + " bytes")) << over_pages;
  EXPECT_TRUE(has(over_pages, "a mixed batch's decode sequences (varlen.decode_seqs)")) << over_pages;
  Problem packed = paged;
  packed.layout = Layout::kVarlen;
  const std::string varlen = WorkspaceUse(packed, 132);
  EXPECT_TRUE(has(varlen, "hopper_fwd: the tile counter")) << varlen;
  EXPECT_TRUE(has(varlen, "decode_fwd (a mixed batch's decode sequences): the split-KV partial results (o and lse of "
                          "each key split, merged by the combine kernel), " +
                              std::to_string(WorkspaceBytes(packed, 132)) + " bytes"))
      << varlen;
  // A decode step: one part, the workspace's bytes; fewer SMs, fewer splits.
  const Problem decode = DecodeProblem(Layout::kDense);
  EXPECT_EQ(WorkspaceUse(decode, 132), "decode_fwd: the split-KV partial results (o and lse of each key split, merged "
                                       "by the combine kernel), " + std::to_string(WorkspaceBytes(decode, 132)) + " bytes");
  EXPECT_TRUE(has(WorkspaceUse(decode, 16), std::to_string(WorkspaceBytes(decode, 16)) + " bytes"));
  // The backward pass: both families' one part, named together.
  Problem bwd{DType::kBF16, 128, false, 2, 2048, 2048, 32, 8, Operation::kBackward};
  EXPECT_TRUE(has(WorkspaceUse(bwd, 132), "hopper_bwd, fa2_bwd: the fp32 dq accumulator")) << WorkspaceUse(bwd, 132);
  EXPECT_TRUE(has(WorkspaceUse(bwd, 132), std::to_string(BackwardWorkspaceBytes(bwd)) + " bytes"));
  // Dense prefill needs none.
  ASSERT_EQ(WorkspaceBytes(Problem{DType::kBF16, 128, false, 8, 2048, 2048, 32, 8}, 132), 0);
  EXPECT_EQ(WorkspaceUse(Problem{DType::kBF16, 128, false, 8, 2048, 2048, 32, 8}, 132), "");
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
  const Variant v = DecodeVariant(DType::kBF16, 128, false, 64, 1, 4, 3, 2, /*paged=*/true);
  LaunchPacket packet;
  packet.sm_count = 132;
  Status s = PackForward(v, a, &packet);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("workspace_bytes (0) is less than the"), std::string::npos) << s.ToString();
  a.workspace = storage[7];
  a.workspace_bytes = WorkspaceBytes(p, 132);
  ASSERT_TRUE(PackForward(v, a, &packet).ok()) << PackForward(v, a, &packet).ToString();
  // 32 blocks, one wave of 2 per SM on 132 SMs: 8 splits, then the combine: one block per
  // output row (B * Hq * Nq).
  EXPECT_EQ(packet.grid[0], 32u);
  EXPECT_EQ(packet.grid[1], 8u);
  EXPECT_EQ(packet.grid[2], 1u);
  ASSERT_EQ(packet.next_steps, 1);
  EXPECT_EQ(packet.next[0].grid[0], unsigned(4 * 32));
  EXPECT_EQ(packet.next[0].block[0], 128u);
  EXPECT_FALSE(packet.overlap) << "compute capability unknown: plain launches";
  EXPECT_FALSE(packet.next[0].overlap) << "compute capability unknown: plain launches";
}

// A kernel compiled for one K/V layout is never packed for a call of the other: the dense
// kernel would read the page pool as one sequence, the paged one would read a null table.
TEST(WorkspaceArgs, PackingRefusesAKernelOfAnotherKvLayout) {
  ForwardArgs a = GoodPaged();
  a.workspace = storage[7];
  a.workspace_bytes = WorkspaceBytes(a.problem, 132);
  LaunchPacket packet;
  packet.sm_count = 132;
  const Variant dense = DecodeVariant(DType::kBF16, 128, false, 64, 1, 4, 3, 2);
  Status s = PackForward(dense, a, &packet);
  EXPECT_EQ(s.code(), Code::kUnsupported) << s.ToString();
  EXPECT_NE(s.message().find("is compiled for another K/V layout than this paged call's"), std::string::npos) << s.ToString();
  ASSERT_TRUE(PackForward(DecodeVariant(DType::kBF16, 128, false, 64, 1, 4, 3, 2, /*paged=*/true), a, &packet).ok());
}

TEST(WorkspaceArgs, KernelsAreProgrammaticDependentsFromComputeCapability9) {
  ForwardArgs a = GoodPaged();
  a.workspace = storage[7];
  a.workspace_bytes = WorkspaceBytes(a.problem, 132);
  const Variant v = DecodeVariant(DType::kBF16, 128, false, 64, 1, 4, 3, 2, /*paged=*/true);
  for (int cc : {0, 8, 9, 10}) {
    LaunchPacket packet;
    packet.sm_count = 132;
    packet.cc_major = cc;
    ASSERT_TRUE(PackForward(v, a, &packet).ok());
    ASSERT_EQ(packet.next_steps, 1);
    // griddepcontrol (the template's wait) and the launch attribute exist from sm_90 on: the
    // split kernel overlaps whatever precedes it, the combine overlaps the split kernel.
    EXPECT_EQ(packet.overlap, cc >= 9) << "cc " << cc;
    EXPECT_EQ(packet.next[0].overlap, cc >= 9) << "cc " << cc;
  }
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

TEST(WorkspaceArgs, SplitsCountOnlyTheBlocksSharedMemoryLetsReside) {
  Problem p = DecodeProblem(Layout::kDense);
  p.batch = 1;
  p.seqlen_k = 8192;  // 8 blocks before splitting, 128 steps of 64 keys
  // 4 stages of 64 keys at d128: 143 KB, one block per SM, so cs2 gets one wave of 132 / 8.
  const Variant s4 = DecodeVariant(DType::kBF16, 128, false, 64, 1, 4, 4, 2);
  EXPECT_EQ(detail::DecodeSplits(p, 132, 64, 1, 2, SharedMemoryBytes(s4)), 132 / 8);
  // 3 stages: 109 KB, two fit: as without the cap.
  const Variant s3 = DecodeVariant(DType::kBF16, 128, false, 64, 1, 4, 3, 2);
  EXPECT_EQ(detail::DecodeSplits(p, 132, 64, 1, 2, SharedMemoryBytes(s3)), 2 * 132 / 8);
  EXPECT_EQ(detail::DecodeSplits(p, 132, 64, 1, 2), 2 * 132 / 8);
}

TEST(FamilyLayouts, PagedCallsGoToDecodeAndThePagedPrefillFamiliesOnly) {
  const Problem paged = DecodeProblem(Layout::kPaged);
  Problem paged_prefill = paged;
  paged_prefill.seqlen_q = 17;
  for (const Family* f : Families()) {
    if (f->name() == "decode_fwd") {
      EXPECT_GT(f->PreferenceFor(paged), 0);
      EXPECT_LT(f->PreferenceFor(Problem{DType::kBF16, 128, false, 1, 4096, 4096, 8, 8}), 0);
    } else if (f->name() == "fa2_paged") {
      // Below decode_fwd within its decode buckets, above it past 16 query rows; never dense.
      EXPECT_LT(f->PreferenceFor(paged), FindFamily("decode_fwd")->PreferenceFor(paged));
      EXPECT_GT(f->PreferenceFor(paged_prefill), FindFamily("decode_fwd")->PreferenceFor(paged_prefill));
      EXPECT_LT(f->PreferenceFor(Problem{DType::kBF16, 128, false, 1, 4096, 4096, 8, 8}), 0);
    } else if (f->name() == "hopper_paged") {
      // Past 16 query rows only (a 64-row warpgroup tile would be mostly empty for decode),
      // ahead of fa2_paged there. On the dense layout (a cache with lengths) behind hopper_fwd,
      // ahead of fa2_fwd, and never searched by the tuner: a dense problem has no lengths.
      EXPECT_LT(f->PreferenceFor(paged), 0);
      EXPECT_GT(f->PreferenceFor(paged_prefill), FindFamily("fa2_paged")->PreferenceFor(paged_prefill));
      EXPECT_TRUE(f->SearchedFor(paged_prefill));
      const Problem dense_prefill{DType::kBF16, 128, false, 1, 4096, 4096, 8, 8};
      EXPECT_LT(f->PreferenceFor(dense_prefill), FindFamily("hopper_fwd")->PreferenceFor(dense_prefill));
      EXPECT_GT(f->PreferenceFor(dense_prefill), FindFamily("fa2_fwd")->PreferenceFor(dense_prefill));
      EXPECT_FALSE(f->SearchedFor(dense_prefill));
      EXPECT_LT(f->PreferenceFor(Problem{DType::kBF16, 128, false, 1, 16, 4096, 8, 8}), 0);
    } else {
      EXPECT_LT(f->PreferenceFor(paged), 0) << f->name();
      EXPECT_LT(f->PreferenceFor(paged_prefill), 0) << f->name();
    }
  }
  auto chosen = DefaultVariantFor(paged);
  ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
  EXPECT_EQ(chosen->family, "decode_fwd");
  auto chosen_prefill = DefaultVariantFor(paged_prefill);
  ASSERT_TRUE(chosen_prefill.ok()) << chosen_prefill.status().ToString();
  EXPECT_EQ(chosen_prefill->family, "hopper_paged");  // (the default target is sm_90a)
  auto sm80_prefill = DefaultVariantFor(paged_prefill, MaxSharedMemoryForArch("sm_80"), "sm_80");
  ASSERT_TRUE(sm80_prefill.ok()) << sm80_prefill.status().ToString();
  EXPECT_EQ(sm80_prefill->family, "fa2_paged");
  // A paged call packed for fa2_fwd is refused as unsupported (the runtime falls back).
  ForwardArgs a = GoodPaged();
  const Variant fa2 = DefaultVariant(ClassOf(paged), kDefaultMaxSmemBytes, "sm_80");
  LaunchPacket packet;
  Status s = PackForward(fa2, a, &packet);
  EXPECT_EQ(s.code(), Code::kUnsupported) << s.ToString();
  EXPECT_NE(s.message().find("fa2_fwd does not serve"), std::string::npos) << s.ToString();
  // Varlen decode (at most 16 queries per sequence) goes to decode_fwd, which reads cu_seqlens
  // too; longer varlen sequences to the prefill families (hopper_fwd first on sm_90a, fa2_fwd
  // elsewhere).
  Problem varlen = paged;
  varlen.layout = Layout::kVarlen;
  auto decode = DefaultVariantFor(varlen);
  ASSERT_TRUE(decode.ok()) << decode.status().ToString();
  EXPECT_EQ(decode->family, "decode_fwd");
  varlen.seqlen_q = 17;
  auto prefill = DefaultVariantFor(varlen);
  ASSERT_TRUE(prefill.ok()) << prefill.status().ToString();
  EXPECT_EQ(prefill->family, "hopper_fwd");
  EXPECT_EQ(FindFamily("decode_fwd")->PreferenceFor(varlen), -1);
  EXPECT_GE(FindFamily("fa2_fwd")->PreferenceFor(varlen), 0);
  EXPECT_EQ(FindFamily("fa2_fwd")->PreferenceFor(paged), -1);
}

// fa2_paged's kernel parameter: the pool's page stride as k/v's stride[0] (no batch offset),
// the table, its pitch, the pool size and log2 of the page size, the lengths; packed queries'
// offsets when the call has them. fa2_fwd refuses the paged call (it reads rows, not pages).
TEST(FamilyLayouts, Fa2PagedPacksThePageTable) {
  ForwardArgs a = GoodPaged();
  a.problem.seqlen_q = 64;
  a.q_strides = a.o_strides = Strides::Contiguous(64, 32, 128);
  a.paged.block_table_stride = 520;
  a.paged.num_blocks = 3000;
  ASSERT_TRUE(ValidateForwardArgs(a).ok()) << ValidateForwardArgs(a).ToString();
  const Variant paged = Fa2Variant(DType::kBF16, 128, false, 128, 64, 4, 2, /*paged=*/true);
  LaunchPacket packet;
  Status s = PackForward(paged, a, &packet);
  ASSERT_TRUE(s.ok()) << s.ToString();
  detail::KernelParams p;
  std::memcpy(&p, packet.args, sizeof p);
  EXPECT_EQ(p.block_table, a.paged.block_table);
  EXPECT_EQ(p.block_table_stride, 520);
  EXPECT_EQ(p.num_blocks, 3000);
  EXPECT_EQ(p.block_shift, 4);
  EXPECT_EQ(p.seqlens_k, a.seqlens_k);
  EXPECT_EQ(p.k_stride[0], 16 * 8 * 128);  // a page: 16 keys of Hkv 8 x D 128
  EXPECT_EQ(p.cu_seqlens_q, nullptr);
  EXPECT_EQ(p.cu_seqlens_k, nullptr);
  EXPECT_EQ(packet.grid[0], 1u);  // 64 query rows in one 128-row tile
  EXPECT_EQ(packet.grid[1], 32u);
  EXPECT_EQ(packet.grid[2], 4u);
  for (int block_size : {1, 256}) {
    ForwardArgs b = ForwardArgs::Contiguous(a.problem, block_size);
    b.q = a.q, b.k = a.k, b.v = a.v, b.o = a.o, b.seqlens_k = a.seqlens_k, b.paged.block_table = a.paged.block_table;
    ASSERT_TRUE(PackForward(paged, b, &packet).ok());
    std::memcpy(&p, packet.args, sizeof p);
    EXPECT_EQ(1 << p.block_shift, block_size);
  }
  // Packed queries (vLLM's varlen q over its cache).
  alignas(4) static const int32_t cu_q[5] = {0, 64, 64, 100, 164};
  a.varlen.cu_seqlens_q = cu_q;
  a.varlen.total_q = 164;
  a.q_strides = a.o_strides = Strides{0, 32 * 128, 128};
  ASSERT_TRUE(PackForward(paged, a, &packet).ok());
  std::memcpy(&p, packet.args, sizeof p);
  EXPECT_EQ(p.cu_seqlens_q, cu_q);
  EXPECT_EQ(p.total_q, 164);
  EXPECT_EQ(p.cu_seqlens_k, nullptr);
  // The same tile of fa2_fwd reads rows: refused, so the runtime falls back.
  s = PackForward(Fa2Variant(DType::kBF16, 128, false, 128, 64, 4, 2), a, &packet);
  EXPECT_EQ(s.code(), Code::kUnsupported) << s.ToString();
}

// fa2_fwd reads per-sequence key counts on the dense layout (a dense cache with lengths and more
// than decode's 16 query rows, which no family served before); hopper_fwd does not.
TEST(FamilyLayouts, Fa2FwdReadsLengthsOnADenseCache) {
  Problem p{DType::kBF16, 128, false, 4, 64, 8192, 32, 8};
  ForwardArgs a = ForwardArgs::Contiguous(p);
  a.q = storage[0], a.k = storage[1], a.v = storage[2], a.o = storage[3];
  a.seqlens_k = reinterpret_cast<const int32_t*>(storage[5]);
  LaunchPacket packet;
  Status s = PackForward(Fa2Variant(DType::kBF16, 128, false, 128, 64, 4, 2), a, &packet);
  ASSERT_TRUE(s.ok()) << s.ToString();
  detail::KernelParams k;
  std::memcpy(&k, packet.args, sizeof k);
  EXPECT_EQ(k.seqlens_k, a.seqlens_k);
  EXPECT_EQ(k.block_table, nullptr);
  auto hopper = DefaultVariantFor(p);
  ASSERT_TRUE(hopper.ok());
  ASSERT_EQ(hopper->family, "hopper_fwd");
  s = PackForward(*hopper, a, &packet);
  EXPECT_EQ(s.code(), Code::kUnsupported) << s.ToString();
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
