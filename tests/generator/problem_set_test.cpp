#include "flashtune/problem_set.h"

#include <gtest/gtest.h>

#include <set>

namespace flashtune {
namespace {

TEST(ProblemSet, DefaultIsFa2BenchmarkSizing) {
  auto set = MakeProblemSet(ProblemSetOptions{});
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  ASSERT_EQ(set->size(), 2u * 5 * 2 * 6);  // dtypes × head dims 64, 96, 128, 192, 256 × causal × N
  for (const Problem& p : *set) {
    // Hq · D = 2048, or as near as a whole head count gets: d96 21 heads, d192 11.
    EXPECT_EQ(p.heads_q * p.head_dim, p.head_dim == 96 ? 2016 : p.head_dim == 192 ? 2112 : 2048);
    EXPECT_EQ(p.heads_kv, p.heads_q);
    EXPECT_EQ(p.batch * p.seqlen_q, 16384);
    EXPECT_EQ(p.seqlen_k, p.seqlen_q);
  }
  EXPECT_EQ((*set)[0].dtype, DType::kBF16);
  EXPECT_EQ((*set)[0].head_dim, 64);
  EXPECT_EQ((*set)[0].seqlen_q, 512);
}

TEST(ProblemSet, CrossLengthsAndGqa) {
  ProblemSetOptions o;
  o.dtypes = {DType::kF16};
  o.head_dims = {128};
  o.causal = {true};
  o.seqlens = {1, 4096};
  o.seqlens_k = {8192};
  o.heads_kv = 4;
  auto set = MakeProblemSet(o);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  ASSERT_EQ(set->size(), 2u);
  EXPECT_EQ((*set)[0].seqlen_q, 1);
  EXPECT_EQ((*set)[0].seqlen_k, 8192);
  EXPECT_EQ((*set)[1].heads_kv, 4);
  EXPECT_EQ((*set)[1].heads_q, 16);
}

TEST(ProblemSet, RejectsBadOptionsNamingThem) {
  ProblemSetOptions o;
  o.head_dims = {100};
  auto r = MakeProblemSet(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("100"), std::string::npos);
  ProblemSetOptions g;
  g.heads_kv = 3;  // 32 % 3 != 0
  auto r2 = MakeProblemSet(g);
  ASSERT_FALSE(r2.ok());
  EXPECT_NE(r2.status().message().find("heads_kv"), std::string::npos);
}

// A head dim that does not divide the hidden size gets the nearest head count, unless the user
// chose the hidden size: then the error names the two hiddens that work.
TEST(ProblemSet, HeadDimThatDoesNotDivideHiddenGetsTheNearestHeadCount) {
  ProblemSetOptions o;
  o.head_dims = {96, 192, 256};
  o.seqlens = {1024};
  o.dtypes = {DType::kBF16};
  o.causal = {false};
  auto set = MakeProblemSet(o);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  ASSERT_EQ(set->size(), 3u);
  EXPECT_EQ((*set)[0].heads_q, 21);  // 2048 / 96 = 21.3
  EXPECT_EQ((*set)[1].heads_q, 11);  // 2048 / 192 = 10.7
  EXPECT_EQ((*set)[2].heads_q, 8);
  o.heads_kv = 4;  // GQA: a multiple of 4 heads, nearest 2048 / 96
  EXPECT_EQ(*HeadsFor(o, 96), 20);
  o.heads_kv = 0;
  o.exact_hidden = true;
  auto r = MakeProblemSet(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "hidden 2048 is not a multiple of head dim 96; give hidden 2016 (21 heads) or "
                                  "2112 (22 heads), or leave hidden unset to fit the head count");
  o.head_dims = {64};
  EXPECT_TRUE(MakeProblemSet(o).ok());  // divisible: kept as given
}

// One rule for every entry point: the runtime's launch limits (ValidateForwardArgs).
TEST(ProblemSet, ValidateProblemAppliesTheKernelsLaunchLimits) {
  const Problem ok{DType::kBF16, 128, false, 65535, 512, 512, 65535, 65535};
  EXPECT_TRUE(ValidateProblem(ok).ok()) << ValidateProblem(ok).ToString();
  Problem p = ok;
  p.batch = 65536;
  EXPECT_EQ(ValidateProblem(p).message(), "batch (65536) must be in [1, 65535] (grid z limit)");
  p = ok;
  p.heads_q = p.heads_kv = 65536;
  EXPECT_EQ(ValidateProblem(p).message(), "heads_q (65536) must be in [1, 65535] (grid y limit)");
  // --tokens 2147483648 at Nq 512 once scheduled B = 4194304.
  ProblemSetOptions o;
  o.seqlens = {512};
  o.tokens = int64_t(1) << 31;
  auto set = MakeProblemSet(o);
  ASSERT_FALSE(set.ok());
  EXPECT_NE(set.status().message().find("batch (4194304) must be in [1, 65535]"), std::string::npos)
      << set.status().message();
}

TEST(ProblemSet, FileRoundTrip) {
  auto set = MakeProblemSet(ProblemSetOptions{});
  ASSERT_TRUE(set.ok());
  std::string text = "# my set\n\n";
  for (const Problem& p : *set) text += FormatProblemLine(p) + "   # trailing comment\n";
  auto parsed = ParseProblemSet(text, "set.txt");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(*parsed, *set);
}

TEST(ProblemSet, FileDefaultsAndSizing) {
  auto parsed = ParseProblemSet("dtype=f16 d=64 nq=1024 tokens=16384 hidden=2048 causal=1\n", "s");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const Problem& p = (*parsed)[0];
  EXPECT_EQ(p.batch, 16);
  EXPECT_EQ(p.heads_q, 32);
  EXPECT_EQ(p.heads_kv, 32);
  EXPECT_EQ(p.seqlen_k, 1024);
  EXPECT_TRUE(p.causal);
}

TEST(ProblemSet, FileErrorsNameLineAndField) {
  struct Case { const char* text; const char* want; };
  const Case cases[] = {
      {"dtype=bf16 d=128 nq=512 batch=1 hq=16\ndtype=bf16 d=13 nq=512 batch=1 hq=16\n", "set.txt:2: field 'head_dim'"},
      {"dtype=bf32 d=128 nq=512 batch=1 hq=16\n", "set.txt:1: field 'dtype'"},
      {"\n\ndtype=bf16 d=128 nq=x batch=1 hq=16\n", "set.txt:3: field 'nq'"},
      {"dtype=bf16 d=128 nq=512 hq=16\n", "set.txt:1: fields 'batch'"},
      {"dtype=bf16 d=128 nq=512 batch=1 hq=16 color=red\n", "set.txt:1: unknown field 'color'"},
      {"dtype=bf16 d=128 nq=512 batch=1 hq=16 hkv=5\n", "set.txt:1: field 'heads_q'"},
      {"# nothing\n", "no problems"},
  };
  for (const Case& c : cases) {
    auto r = ParseProblemSet(c.text, "set.txt");
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_NE(r.status().message().find(c.want), std::string::npos) << r.status().message();
  }
  auto missing = LoadProblemSetFile("/nonexistent/set.txt");
  EXPECT_EQ(missing.status().code(), Code::kIoError);
}

TEST(Bucket, PowerOfTwoRule) {
  EXPECT_EQ(Log2Ceil(1), 0);
  EXPECT_EQ(Log2Ceil(512), 9);
  EXPECT_EQ(Log2Ceil(513), 10);
  EXPECT_EQ(Log2Ceil(1024), 10);
  Problem a{DType::kBF16, 128, true, 4, 4096, 3000, 16, 16};
  BucketKey k = BucketOf(a);
  EXPECT_EQ(k.seqlen_q_bucket, 12);
  EXPECT_EQ(k.seqlen_k_bucket, 12);
  EXPECT_EQ(k.batch_heads_bucket, 6);
  EXPECT_EQ(BucketString(k), "bf16/d128/causal/q12/k12/bh6");
  auto parsed = ParseBucketKey(BucketString(k));
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, k);
  EXPECT_FALSE(ParseBucketKey("bf16/d128/maybe/q1/k1/bh1").ok());
  Problem b = a;
  b.seqlen_q = 3500;  // same bucket as 4096
  EXPECT_EQ(BucketOf(b), k);
}

TEST(Bucket, GqaGroupIsPartOfTheBucket) {
  Problem mha{DType::kBF16, 128, true, 4, 4096, 4096, 16, 16};
  Problem gqa = mha;
  gqa.heads_kv = 2;
  EXPECT_EQ(BucketOf(mha).kv_group_bucket, 0);
  EXPECT_EQ(BucketOf(gqa).kv_group_bucket, 3);
  EXPECT_NE(BucketOf(mha), BucketOf(gqa));
  EXPECT_EQ(BucketString(BucketOf(mha)), "bf16/d128/causal/q12/k12/bh6");  // MHA strings as before
  EXPECT_EQ(BucketString(BucketOf(gqa)), "bf16/d128/causal/q12/k12/bh6/g3");
  auto parsed = ParseBucketKey("bf16/d128/causal/q12/k12/bh6/g3");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(*parsed, BucketOf(gqa));
  EXPECT_FALSE(ParseBucketKey("bf16/d128/causal/q12/k12/bh6/g0").ok());  // MHA is written without /g
  EXPECT_FALSE(ParseBucketKey("bf16/d128/causal/q12/k12/bh6/x3").ok());
  // The group is a tie-break, not a distance: the MHA bucket of the same shape stays at 0.
  EXPECT_EQ(BucketDistance(BucketOf(gqa), BucketOf(mha)), 0);
  EXPECT_EQ(GroupGap(BucketOf(gqa), BucketOf(mha)), 3);
  Problem mqa = mha;
  mqa.heads_kv = 1;
  EXPECT_EQ(BucketOf(mqa).kv_group_bucket, 4);
}

// A paged call has buckets of its own ("/paged" last), never near a dense bucket; varlen calls
// take the dense ones.
TEST(Bucket, PagedLayoutIsABucketOfItsOwn) {
  Problem dense{DType::kBF16, 128, false, 8, 1, 32768, 32, 8};
  Problem paged = dense, varlen = dense;
  paged.layout = Layout::kPaged;
  varlen.layout = Layout::kVarlen;
  EXPECT_EQ(BucketString(BucketOf(dense)), "bf16/d128/full/q0/k15/bh8/g2");
  EXPECT_EQ(BucketString(BucketOf(paged)), "bf16/d128/full/q0/k15/bh8/g2/paged");
  EXPECT_EQ(BucketOf(varlen), BucketOf(dense));
  Problem mha_paged = paged;
  mha_paged.heads_kv = 32;
  EXPECT_EQ(BucketString(BucketOf(mha_paged)), "bf16/d128/full/q0/k15/bh8/paged");
  for (const Problem& p : {paged, mha_paged}) {
    auto parsed = ParseBucketKey(BucketString(BucketOf(p)));
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    EXPECT_EQ(*parsed, BucketOf(p));
  }
  EXPECT_FALSE(ParseBucketKey("bf16/d128/full/q0/k15/bh8/paged/g2").ok());  // the order is fixed
  EXPECT_FALSE(ParseBucketKey("bf16/d128/full/q0/k15/paged").ok());
  EXPECT_EQ(BucketDistance(BucketOf(paged), BucketOf(dense)), -1);
  EXPECT_EQ(BucketDistance(BucketOf(dense), BucketOf(paged)), -1);
  Problem paged_long = paged;
  paged_long.seqlen_k = 131072;
  EXPECT_EQ(BucketDistance(BucketOf(paged), BucketOf(paged_long)), 2);
}

TEST(ProblemSet, FileLayoutIsDenseOrPaged) {
  auto parsed = ParseProblemSet(
      "dtype=bf16 head_dim=128 seqlen_q=1 seqlen_k=8192 batch=8 heads_q=32 heads_kv=8 layout=paged\n"
      "dtype=bf16 head_dim=128 seqlen_q=1 seqlen_k=8192 batch=8 heads_q=32 heads_kv=8 layout=dense\n",
      "set.txt");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->size(), 2u);
  EXPECT_EQ((*parsed)[0].layout, Layout::kPaged);
  EXPECT_EQ((*parsed)[1].layout, Layout::kDense);
  EXPECT_EQ(FormatProblemLine((*parsed)[0]),
            "dtype=bf16 head_dim=128 causal=0 batch=8 seqlen_q=1 seqlen_k=8192 heads_q=32 heads_kv=8 layout=paged");
  auto again = ParseProblemSet(FormatProblemLine((*parsed)[0]), "again.txt");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)[0], (*parsed)[0]);
  auto varlen = ParseProblemSet("dtype=bf16 head_dim=128 seqlen_q=1 batch=8 heads_q=32 layout=varlen\n", "set.txt");
  ASSERT_FALSE(varlen.ok());
  EXPECT_NE(varlen.status().message().find("set.txt:1: field 'layout': 'varlen' is not allowed; allowed: dense, paged"),
            std::string::npos)
      << varlen.status().message();
}

TEST(ProblemSet, DefaultDecodeProblemsAreDenseAndPaged) {
  const std::vector<Problem> decode = DefaultDecodeProblems();
  ASSERT_EQ(decode.size(), 22u);  // B 1, 8, 64 x 2k-128k keys but 64 x 128k, each dense and paged
  std::set<std::string> buckets;
  int paged = 0;
  for (const Problem& p : decode) {
    EXPECT_TRUE(ValidateProblem(p).ok()) << p.ToString();
    EXPECT_EQ(p.seqlen_q, 1);
    EXPECT_TRUE(p.layout == Layout::kDense || p.layout == Layout::kPaged) << p.ToString();
    paged += p.layout == Layout::kPaged;
    buckets.insert(BucketString(BucketOf(p)));
  }
  EXPECT_EQ(paged, 11);
  EXPECT_EQ(buckets.size(), 22u) << "one bucket each";
}

// The cross product leaves out shapes past 8 GiB of K+V and refuses what is not a decode set.
TEST(ProblemSet, DecodeSetCrossesItsOptionsUnderTheMemoryBound) {
  DecodeSetOptions o;
  o.causal = {false, true};
  o.seqlens_q = {1, 16};
  o.batches = {64};
  o.keys = {32768, 131072};
  o.layouts = {Layout::kPaged};
  auto set = MakeDecodeSet(DType::kF16, 128, 32, 8, o);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  ASSERT_EQ(set->size(), 4u);  // 2 causal x 2 Nq x B64 x 32k (64 x 128k: 34 GB, left out)
  EXPECT_EQ((*set)[3].ToString(), "f16 d128 causal B64 Nq16 Nk32768 Hq32 Hkv8 paged");
  struct Bad { DecodeSetOptions o; const char* says; };
  DecodeSetOptions too_long, varlen, empty, huge;
  too_long.seqlens_q = {17};
  varlen.layouts = {Layout::kVarlen};
  empty.batches = {};
  huge.batches = {65535};
  huge.keys = {131072};
  for (const Bad& b : {Bad{too_long, "17 is not a decode length; allowed: 1 to 16"},
                       Bad{varlen, "varlen is not allowed; allowed: dense, paged"},
                       Bad{empty, "decode batches: empty"},
                       Bad{huge, "more than 8 GiB of K+V"}}) {
    auto r = MakeDecodeSet(DType::kBF16, 128, 32, 8, b.o);
    ASSERT_FALSE(r.ok()) << b.says;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_NE(r.status().message().find(b.says), std::string::npos) << r.status().message();
  }
}

TEST(ProblemSet, DefaultGqaProblemsAreD128CausalGqa8) {
  const std::vector<Problem> gqa = DefaultGqaProblems();
  ASSERT_EQ(gqa.size(), 12u);  // two dtypes x six lengths
  for (const Problem& p : gqa) {
    EXPECT_TRUE(ValidateProblem(p).ok()) << p.ToString();
    EXPECT_EQ(p.head_dim, 128);
    EXPECT_TRUE(p.causal);
    EXPECT_EQ(p.heads_q / p.heads_kv, 8);
    EXPECT_EQ(p.batch * p.seqlen_q, 16384);
    EXPECT_EQ(BucketOf(p).kv_group_bucket, 3);
  }
}

TEST(ProblemSet, DefaultBackwardProblemsAreD64AndD128AtTwoLengths) {
  const std::vector<Problem> bwd = DefaultBackwardProblems();
  ASSERT_EQ(bwd.size(), 16u);  // two dtypes x d64, d128 x causal or not x N 2k, 8k
  std::set<std::string> buckets;
  for (const Problem& p : bwd) {
    EXPECT_TRUE(ValidateProblem(p).ok()) << p.ToString();
    EXPECT_EQ(p.operation, Operation::kBackward) << p.ToString();
    EXPECT_TRUE(p.head_dim == 64 || p.head_dim == 128) << p.ToString();
    EXPECT_TRUE(p.seqlen_q == 2048 || p.seqlen_q == 8192) << p.ToString();
    EXPECT_EQ(p.heads_q * p.head_dim, 2048);
    EXPECT_EQ(p.heads_kv, p.heads_q);
    EXPECT_EQ(p.batch * p.seqlen_q, 16384);
    buckets.insert(BucketString(BucketOf(p)));
  }
  EXPECT_EQ(buckets.size(), 16u) << "one bucket each";
  EXPECT_EQ(buckets.count("bwd/f16/d128/causal/q13/k13/bh5"), 1u);
}

TEST(Bucket, DistanceOnlyWithinClass) {
  Problem a{DType::kBF16, 128, false, 4, 4096, 4096, 16, 16};
  Problem b = a;
  b.seqlen_q = b.seqlen_k = 1024;
  EXPECT_EQ(BucketDistance(BucketOf(a), BucketOf(a)), 0);
  EXPECT_EQ(BucketDistance(BucketOf(a), BucketOf(b)), 4);
  Problem c = a;
  c.causal = true;
  EXPECT_EQ(BucketDistance(BucketOf(a), BucketOf(c)), -1);
  c = a;
  c.head_dim = 64;
  EXPECT_EQ(BucketDistance(BucketOf(a), BucketOf(c)), -1);
}

}  // namespace
}  // namespace flashtune
