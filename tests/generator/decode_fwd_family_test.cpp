// CPU tests of the decode_fwd family's untuned choice (generator/families/decode_fwd.cpp): which
// tile a decode problem gets before any tuning, through the planner's DefaultVariantFor; and
// that those tiles compile for sm_90a without spilling.
#include <gtest/gtest.h>

#include <string>

#include "flashtune/compiler.h"
#include "flashtune/problem_set.h"
#include "flashtune/source.h"
#include "flashtune/space.h"

namespace flashtune {
namespace {

Problem Decode(int64_t batch, int64_t keys, int head_dim = 128, Layout layout = Layout::kDense, int64_t queries = 1) {
  Problem p{DType::kBF16, head_dim, false, batch, queries, keys, 32, 8};
  p.layout = layout;
  return p;
}

std::string DefaultUri(const Problem& p) {
  auto v = DefaultVariantFor(p);
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  return v.ok() ? v->Uri() : "";
}

TEST(DecodeFwdFamily, ShortStreamsDefaultToShortStepsOverTwoWarps) {
  // Up to B1 x 32k at Hkv 8, d128 (2^25 key elements), dense and paged, one query or a few.
  EXPECT_EQ(DefaultUri(Decode(1, 2048)), "decode_fwd_bf16_d128_bn32_rm1_w2_s4_cs4_kv0_full");
  EXPECT_EQ(DefaultUri(Decode(8, 2048, 128, Layout::kPaged)), "decode_fwd_bf16_d128_bn32_rm1_w2_s4_cs4_kv1_full");
  EXPECT_EQ(DefaultUri(Decode(1, 32768)), "decode_fwd_bf16_d128_bn32_rm1_w2_s4_cs4_kv0_full");
  EXPECT_EQ(DefaultUri(Decode(1, 4096, 128, Layout::kDense, 16)), "decode_fwd_bf16_d128_bn32_rm1_w2_s4_cs4_kv0_full");
  // The bound is on key elements, so it scales with the head dim: B1 x 32k at d256 is past it,
  // B1 x 16k is not.
  EXPECT_EQ(DefaultUri(Decode(1, 16384, 256)), "decode_fwd_bf16_d256_bn32_rm1_w2_s4_cs4_kv0_full");
  EXPECT_EQ(DefaultUri(Decode(1, 32768, 256)), "decode_fwd_bf16_d256_bn64_rm1_w4_s3_cs2_kv0_full");
}

TEST(DecodeFwdFamily, NarrowHeadsTakeLongStepsPastTheShortestStreams) {
  // Head dims up to 64, dense: 128 keys a step (a d128 step's bytes), 4 stages, one block an SM,
  // past 2^20 key elements (B1 x 2k at Hkv 8, d64); the short tile up to there. Paged: 64 keys
  // over 4 warps, 2 stages, 4 blocks an SM past 2^21 (B1 x 4k).
  EXPECT_EQ(DefaultUri(Decode(1, 2048, 64)), "decode_fwd_bf16_d64_bn32_rm1_w2_s4_cs4_kv0_full");
  EXPECT_EQ(DefaultUri(Decode(1, 4096, 64, Layout::kPaged)), "decode_fwd_bf16_d64_bn32_rm1_w2_s4_cs4_kv1_full");
  EXPECT_EQ(DefaultUri(Decode(1, 4097, 64, Layout::kPaged)), "decode_fwd_bf16_d64_bn64_rm1_w4_s2_cs4_kv1_full");
  EXPECT_EQ(DefaultUri(Decode(1, 2049, 64)), "decode_fwd_bf16_d64_bn128_rm1_w4_s4_cs1_kv0_full");
  EXPECT_EQ(DefaultUri(Decode(1, 8192, 64)), "decode_fwd_bf16_d64_bn128_rm1_w4_s4_cs1_kv0_full");
  EXPECT_EQ(DefaultUri(Decode(8, 8192, 64)), "decode_fwd_bf16_d64_bn128_rm1_w4_s4_cs1_kv0_full");
  EXPECT_EQ(DefaultUri(Decode(8, 32768, 64)), "decode_fwd_bf16_d64_bn128_rm1_w4_s4_cs1_kv0_full");
  EXPECT_EQ(DefaultUri(Decode(8, 2048, 64, Layout::kPaged)), "decode_fwd_bf16_d64_bn64_rm1_w4_s2_cs4_kv1_full");
  EXPECT_EQ(DefaultUri(Decode(64, 32768, 64, Layout::kPaged)), "decode_fwd_bf16_d64_bn64_rm1_w4_s2_cs4_kv1_full");
  EXPECT_EQ(DefaultUri(Decode(1, 16384, 32)), "decode_fwd_bf16_d32_bn128_rm1_w4_s4_cs1_kv0_full");
  // Where the shared memory is smaller, fewer stages: sm_86's 99 KB holds three.
  auto sm86 = DefaultVariantFor(Decode(8, 32768, 64), MaxSharedMemoryForArch("sm_86"), "sm_86");
  ASSERT_TRUE(sm86.ok()) << sm86.status().ToString();
  EXPECT_EQ(sm86->Uri(), "decode_fwd_bf16_d64_bn128_rm1_w4_s3_cs1_kv0_full");
  // d96 is past the bound: d128's tiles.
  EXPECT_EQ(DefaultUri(Decode(8, 32768, 96)), "decode_fwd_bf16_d96_bn64_rm1_w4_s3_cs2_kv0_full");
}

TEST(DecodeFwdFamily, LongStreamsKeepTheClassDefaultAndPagedPrefillGoesToThePrefillFamilies) {
  EXPECT_EQ(DefaultUri(Decode(1, 32769)), "decode_fwd_bf16_d128_bn64_rm1_w4_s3_cs2_kv0_full");
  EXPECT_EQ(DefaultUri(Decode(8, 8192)), "decode_fwd_bf16_d128_bn64_rm1_w4_s3_cs2_kv0_full");
  EXPECT_EQ(DefaultUri(Decode(64, 2048, 128, Layout::kPaged)), "decode_fwd_bf16_d128_bn64_rm1_w4_s3_cs2_kv1_full");
  // Paged prefill (more than 16 queries) is a prefill tile over pages: hopper_paged's on sm_90a
  // (over a short K/V stream its persistent twin with two Q buffers), fa2_paged's elsewhere.
  EXPECT_EQ(DefaultUri(Decode(1, 2048, 128, Layout::kPaged, 17)), "hopper_paged_bf16_d128_bm128_bn128_wg2_s2_p2_pp1_ov1_full");
  EXPECT_EQ(DefaultUri(Decode(1, 4096, 128, Layout::kPaged, 17)), "hopper_paged_bf16_d128_bm128_bn128_wg2_s3_p0_pp1_ov1_full");
  auto sm80 = DefaultVariantFor(Decode(1, 2048, 128, Layout::kPaged, 17), MaxSharedMemoryForArch("sm_80"), "sm_80");
  ASSERT_TRUE(sm80.ok()) << sm80.status().ToString();
  EXPECT_EQ(sm80->Uri(), "fa2_paged_bf16_d128_br128_bc64_w4_s2_full");
}

// The tiles a decode call runs untuned (short and long K/V streams), dense at d64, d128 and d256
// and paged at d64 and d128, compile for sm_90a without a spill: they are what every decode call
// runs before a tune, within 0-5% of the tuned winner in every bucket of session 39's decode tune.
// A template change that makes them spill slows every untuned decode call. (d256's paged tiles
// sit at the 255-register limit and spill 12-28 bytes, as they did before session 39's change:
// docs/perf-notes.md, "Decode round 21".)
TEST(DecodeFwdFamily, UntunedTilesCompileForSm90aWithoutSpills) {
  Compiler compiler(Compiler::Options{"-", 1});
  for (int head_dim : {64, 128, 256})
    for (Layout layout : {Layout::kDense, Layout::kPaged}) {
      if (head_dim == 256 && layout == Layout::kPaged) continue;
      for (int64_t keys : {2048, 131072}) {
        auto v = DefaultVariantFor(Decode(1, keys, head_dim, layout));
        ASSERT_TRUE(v.ok()) << v.status().ToString();
        SCOPED_TRACE(v->Uri());
        auto source = GenerateSource(*v);
        ASSERT_TRUE(source.ok()) << source.status().ToString();
        auto cubin = compiler.Compile(GeneratedSourceRequest(v->Uri(), source->text, "sm_90a"));
        ASSERT_TRUE(cubin.ok()) << cubin.status().ToString();
        EXPECT_EQ(cubin->resources.spill_store_bytes, 0) << cubin->log;
      }
    }
}

}  // namespace
}  // namespace flashtune
