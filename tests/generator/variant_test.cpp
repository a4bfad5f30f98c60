#include "generator/families/fa2_fwd.h"
#include "flashtune/variant.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "flashtune/space.h"

namespace flashtune {
namespace {

TEST(Variant, UriNamesEveryParameter) {
  Variant v = Fa2Variant(DType::kBF16, 128, true, 128, 64, 4, 2);
  EXPECT_EQ(v.Uri(), "fa2_fwd_bf16_d128_br128_bc64_w4_s2_causal");
  Variant f = Fa2Variant(DType::kF16, 64, false, 64, 32, 4, 3);
  EXPECT_EQ(f.Uri(), "fa2_fwd_f16_d64_br64_bc32_w4_s3_full");
}

TEST(Variant, UriRoundTripsForEveryVariantOfSeveralSpaces) {
  int checked = 0;
  for (DType dt : {DType::kF16, DType::kBF16}) {
    for (int d : kSupportedHeadDims) {
      for (bool causal : {false, true}) {
        auto space = EnumerateSpace({dt, d, causal});
        ASSERT_TRUE(space.ok()) << space.status().ToString();
        for (const Variant& v : *space) {
          auto back = Variant::FromUri(v.Uri());
          ASSERT_TRUE(back.ok()) << v.Uri() << ": " << back.status().ToString();
          EXPECT_EQ(*back, v) << v.Uri();
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 300);
}

TEST(Variant, UrisAreUniqueWithinASpace) {
  auto space = EnumerateSpace(ProblemClass{DType::kBF16, 64, false});
  ASSERT_TRUE(space.ok());
  std::set<std::string> uris;
  for (const Variant& v : *space) uris.insert(v.Uri());
  EXPECT_EQ(uris.size(), space->size());
}

void ExpectUriError(const std::string& uri, const std::string& fragment) {
  auto r = Variant::FromUri(uri);
  ASSERT_FALSE(r.ok()) << uri;
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find(fragment), std::string::npos)
      << uri << " -> " << r.status().message();
}

TEST(Variant, FromUriNamesTheBadField) {
  ExpectUriError("fa2_fwd_fp32_d128_br128_bc64_w4_s2_full", "dtype field 'fp32'");
  ExpectUriError("fa2_fwd_bf16_x128_br128_bc64_w4_s2_full", "head dim field 'x128'");
  ExpectUriError("fa2_fwd_bf16_d128_br12a_bc64_w4_s2_full", "block_m (br) field 'br12a'");
  ExpectUriError("fa2_fwd_bf16_d128_br128_bc_w4_s2_full", "block_n (bc) field 'bc'");
  ExpectUriError("fa2_fwd_bf16_d128_br128_bc64_w-4_s2_full", "warps (w) field 'w-4'");
  ExpectUriError("fa2_fwd_bf16_d128_br128_bc64_w4_s02_full", "stages (s) field 's02'");
  ExpectUriError("fa2_fwd_bf16_d128_br128_bc64_w4_s2_masked", "mask field 'masked'");
  ExpectUriError("fa3_bwd_bf16_d128_br128_bc64_w4_s2_full", "kernel family 'fa3_bwd'");
  ExpectUriError("fa2_fwd_bf16_d128_br128_bc64_w4_s2", "has 6 '_'-separated fields after 'fa2_fwd_', not 7");
  ExpectUriError("fa2_fwd_bf16_d128_br128_bc64_w4_s2_full_", "has 8");
  ExpectUriError("", "kernel family '' is not known");
  // Values are checked against the family's rules, not just parsed.
  ExpectUriError("fa2_fwd_bf16_d128_br999_bc64_w4_s2_causal", "block_m (br) (999) must be one of 64, 128");
  ExpectUriError("fa2_fwd_bf16_d128_br64_bc64_w8_s2_causal", "must be a multiple of warps * 16");
}

TEST(DType, NamesAndParsing) {
  EXPECT_EQ(DTypeName(DType::kF16), "f16");
  EXPECT_EQ(DTypeName(DType::kBF16), "bf16");
  for (const char* s : {"f16", "fp16", "half"}) EXPECT_EQ(*ParseDType(s), DType::kF16) << s;
  for (const char* s : {"bf16", "bfloat16"}) EXPECT_EQ(*ParseDType(s), DType::kBF16) << s;
  auto bad = ParseDType("fp32", "--dtype");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("--dtype"), std::string::npos);
  EXPECT_NE(bad.status().message().find("f16, bf16"), std::string::npos);
}

TEST(Problem, FlopsFollowFa2Convention) {
  Problem p{DType::kBF16, 128, false, 2, 1024, 1024, 16, 16};
  const double full = 4.0 * 2 * 16 * 1024 * 1024 * 128;
  EXPECT_DOUBLE_EQ(p.Flops(), full);
  p.causal = true;
  EXPECT_DOUBLE_EQ(p.Flops(), full / 2);
  // Only the square causal case is halved.
  p.seqlen_k = 2048;
  EXPECT_DOUBLE_EQ(p.Flops(), 2 * full);
}

TEST(Problem, ToStringIsReadable) {
  Problem p{DType::kBF16, 128, true, 4, 4096, 4096, 16, 16};
  EXPECT_EQ(p.ToString(), "bf16 d128 causal B4 Nq4096 Nk4096 Hq16 Hkv16");
}

}  // namespace
}  // namespace flashtune
