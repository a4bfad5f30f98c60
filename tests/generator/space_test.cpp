#include "generator/families/fa2_fwd.h"
#include "flashtune/space.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include <string>

#include "generator/family.h"
#include "generator/kernel_abi.h"

namespace flashtune {
namespace {

// Counts the space by the rules written out directly, independent of CheckVariant.
size_t CountByHand(int d, int64_t max_smem) {
  size_t n = 0;
  for (int bm : {64, 128})
    for (int bn : {32, 64, 128})
      for (int w : {4, 8})
        for (int s : {1, 2, 3})
          if (bm % (w * 16) == 0 && (bm + 2 * s * bn) * (d + 8) * 2 <= max_smem) ++n;
  return n;
}

TEST(Space, DefaultSpaceCountsMatchTheRules) {
  for (int d : kSupportedHeadDims) {
    for (int64_t smem : {int64_t(232448), int64_t(166912), int64_t(101376)}) {
      SpaceOptions o;
      o.max_smem_bytes = smem;
      o.families = {"fa2_fwd"};
      auto space = EnumerateSpace({DType::kBF16, d, false}, o);
      ASSERT_TRUE(space.ok()) << d << " " << smem << ": " << space.status().ToString();
      EXPECT_EQ(space->size(), CountByHand(d, smem)) << "d" << d << " smem " << smem;
      for (const Variant& v : *space) EXPECT_TRUE(CheckVariant(v, smem).ok()) << v.Uri();
    }
  }
  // Anchors worked out on paper: d128 on sm_90 keeps 25 of 27 divisible combinations.
  SpaceOptions fa2;
  fa2.families = {"fa2_fwd"};
  EXPECT_EQ(EnumerateSpace(ProblemClass{DType::kBF16, 128, true}, fa2)->size(), 25u);
  EXPECT_EQ(EnumerateSpace(ProblemClass{DType::kF16, 64, false}, fa2)->size(), 27u);
}

// On sm_90a the space is fa2_fwd's and hopper_fwd's; elsewhere, and for head dims that are not
// whole 64-column swizzle atoms, hopper_fwd does not exist.
TEST(Space, HopperFamilyJoinsOnSm90aOnly) {
  const Problem prefill{DType::kBF16, 128, false, 4, 4096, 4096, 16, 16};  // decode_fwd does not serve it
  auto both = EnumerateSpaceFor(prefill);
  ASSERT_TRUE(both.ok());
  const auto hopper = std::count_if(both->begin(), both->end(), [](const Variant& v) { return v.family == "hopper_fwd"; });
  EXPECT_GT(hopper, 4);
  EXPECT_EQ(size_t(hopper) + 27u - 2u, both->size());  // fa2_fwd keeps 25 at d128
  for (const Variant& v : *both) EXPECT_TRUE(CheckVariant(v).ok()) << v.Uri();
  SpaceOptions sm80;
  sm80.arch = "sm_80";
  sm80.max_smem_bytes = MaxSharedMemoryForArch("sm_80");
  auto ampere = EnumerateSpaceFor(prefill, sm80);
  ASSERT_TRUE(ampere.ok());
  EXPECT_TRUE(std::all_of(ampere->begin(), ampere->end(), [](const Variant& v) { return v.family == "fa2_fwd"; }));
  Problem prefill32 = prefill;
  prefill32.head_dim = 32;
  auto d32 = EnumerateSpaceFor(prefill32);
  ASSERT_TRUE(d32.ok());
  EXPECT_TRUE(std::all_of(d32->begin(), d32->end(), [](const Variant& v) { return v.family == "fa2_fwd"; }));
  // d96 searches both: hopper_fwd on d128's tiles.
  Problem prefill96 = prefill;
  prefill96.head_dim = 96;
  auto d96 = EnumerateSpaceFor(prefill96);
  ASSERT_TRUE(d96.ok());
  EXPECT_TRUE(std::any_of(d96->begin(), d96->end(), [](const Variant& v) { return v.family == "hopper_fwd"; }));
  EXPECT_TRUE(std::any_of(d96->begin(), d96->end(), [](const Variant& v) { return v.family == "fa2_fwd"; }));
  // Untuned, sm_90a prefers hopper_fwd; the d32 class and other archs keep fa2_fwd.
  EXPECT_EQ(DefaultVariant(ProblemClass{DType::kBF16, 128, true}).family, "hopper_fwd");
  EXPECT_EQ(DefaultVariant(ProblemClass{DType::kBF16, 96, true}).family, "hopper_fwd");
  EXPECT_EQ(DefaultVariant(ProblemClass{DType::kBF16, 32, true}).family, "fa2_fwd");
  EXPECT_EQ(DefaultVariant(ProblemClass{DType::kBF16, 128, true}, MaxSharedMemoryForArch("sm_80"), "sm_80").family,
            "fa2_fwd");
  for (int d : {64, 128, 192, 256}) {
    const Variant v = DefaultVariant(ProblemClass{DType::kF16, d, false});
    EXPECT_TRUE(CheckVariant(v).ok()) << v.Uri() << ": " << CheckVariant(v).ToString();
  }
}

TEST(Space, PrunesD256Br128Stages3OnSm80) {
  SpaceOptions o;
  o.max_smem_bytes = MaxSharedMemoryForArch("sm_80");
  auto space = EnumerateSpace({DType::kF16, 256, true}, o);
  ASSERT_TRUE(space.ok());
  for (const Variant& v : *space) {
    EXPECT_FALSE(v.Param("br") == 128 && v.Param("s") == 3) << v.Uri();
    EXPECT_LE(SharedMemoryBytes(v), 166912) << v.Uri();
  }
  Variant v = Fa2Variant(DType::kF16, 256, true, 128, 32, 4, 3);
  Status s = CheckVariant(v, 166912);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("shared memory (168960 bytes"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("166912"), std::string::npos) << s.message();
  EXPECT_TRUE(CheckVariant(v, 232448).ok());
}

TEST(Space, IsDeterministicAndOrdered) {
  auto a = EnumerateSpace(ProblemClass{DType::kBF16, 96, false});
  auto b = EnumerateSpace(ProblemClass{DType::kBF16, 96, false});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(a->front().Uri(), "decode_fwd_bf16_d96_bn32_rm1_w2_s2_cs2_kv0_full");  // families in name order
  for (const Variant& v : *a) {
    EXPECT_EQ(v.dtype, DType::kBF16);
    EXPECT_EQ(v.head_dim, 96);
    EXPECT_FALSE(v.causal);
  }
}

// decode_fwd's default space holds 32-key steps (round 3's fastest at B1 x 2k) only as the
// two-warp, one-tile configurations that have run on the GPU, and no other two-warp variant:
// 42 + 4 tiles at d128, each compiled for dense K/V and for pages.
TEST(DecodeSpace, SearchesBn32OnlyAsTwoWarpsOneTile) {
  SpaceOptions o;
  o.families = {"decode_fwd"};
  auto space = EnumerateSpace(ProblemClass{DType::kBF16, 128, false}, o);
  ASSERT_TRUE(space.ok()) << space.status().ToString();
  EXPECT_EQ(space->size(), 2 * 46u);
  std::vector<std::string> bn32;
  for (const Variant& v : *space) {
    if (v.Param("w") == 2 && v.Param("kv") == 0) bn32.push_back(v.Uri());
    if (v.Param("bn") == 32) {
      EXPECT_EQ(v.Param("w"), 2) << v.Uri();
    }
  }
  EXPECT_EQ(bn32, (std::vector<std::string>{"decode_fwd_bf16_d128_bn32_rm1_w2_s2_cs2_kv0_full",
                                            "decode_fwd_bf16_d128_bn32_rm1_w2_s2_cs4_kv0_full",
                                            "decode_fwd_bf16_d128_bn32_rm1_w2_s4_cs2_kv0_full",
                                            "decode_fwd_bf16_d128_bn32_rm1_w2_s4_cs4_kv0_full"}));
}

// A decode problem's candidates are the kernels compiled for its K/V layout: dense and varlen
// K/V the kv0 half, pages the kv1 half, the same tiles in the same order.
TEST(DecodeSpace, AProblemSearchesTheKernelsOfItsLayout) {
  Problem dense{DType::kBF16, 128, false, 8, 1, 32768, 32, 8};
  Problem paged = dense;
  paged.layout = Layout::kPaged;
  auto d = EnumerateSpaceFor(dense);
  auto p = EnumerateSpaceFor(paged);
  ASSERT_TRUE(d.ok() && p.ok());
  ASSERT_EQ(d->size(), 46u);
  ASSERT_EQ(p->size(), d->size());
  for (size_t i = 0; i < d->size(); ++i) {
    EXPECT_EQ((*d)[i].Param("kv"), 0) << (*d)[i].Uri();
    Variant twin = (*d)[i];
    twin.SetParam("kv", 1);
    EXPECT_EQ((*p)[i], twin);
  }
  // The untuned choice follows the layout too.
  auto dd = DefaultVariantFor(dense);
  auto pd = DefaultVariantFor(paged);
  ASSERT_TRUE(dd.ok() && pd.ok());
  EXPECT_EQ(dd->Param("kv"), 0);
  EXPECT_EQ(pd->Param("kv"), 1);
  pd->SetParam("kv", 0);
  EXPECT_EQ(*pd, *dd);
}

// The decode buckets' search leaves the prefill families out only where decode_fwd was measured
// to win by 2-11x (GQA group >= 4, every row of a K/V head in one 16-row tile, >= 1025 keys,
// d128, dense); the planner may still fall back to them there.
TEST(DecodeSpace, PrefillFamiliesAreSearchedOnlyWhereNotMeasuredToLose) {
  auto families = [](const Problem& p, const SpaceOptions& o = {}) {
    std::set<std::string> out;
    auto space = EnumerateSpaceFor(p, o);
    EXPECT_TRUE(space.ok()) << p.ToString() << ": " << space.status().ToString();
    if (space.ok())
      for (const Variant& v : *space) out.insert(v.family);
    return out;
  };
  const std::set<std::string> decode_only{"decode_fwd"};
  const std::set<std::string> all{"decode_fwd", "fa2_fwd", "hopper_fwd"};
  const Problem measured{DType::kBF16, 128, false, 8, 1, 8192, 32, 8};  // a default decode bucket
  EXPECT_EQ(families(measured), decode_only);
  auto space = EnumerateSpaceFor(measured);
  ASSERT_TRUE(space.ok());
  EXPECT_EQ(space->size(), 46u);  // was 83 with hopper_fwd's 16 and fa2_fwd's 25
  Problem p = measured;
  p.seqlen_q = 4;  // 4 x 4 = 16 rows: still one tile (speculative decoding)
  EXPECT_EQ(families(p), decode_only);
  p.dtype = DType::kF16;
  p.causal = true;
  p.heads_kv = 4;  // GQA 8, 2 query rows
  p.seqlen_q = 2;
  EXPECT_EQ(families(p), decode_only);
  p = measured;
  p.seqlen_q = 8;  // 32 rows: two tiles, not measured
  EXPECT_EQ(families(p), all);
  p = measured;
  p.heads_kv = 32;  // MHA: a prefill tile reads no more than decode_fwd, not measured
  EXPECT_EQ(families(p), all);
  p.heads_kv = 16;  // GQA 2
  EXPECT_EQ(families(p), all);
  p = measured;
  p.seqlen_k = 1024;  // below the measured 2k bucket
  EXPECT_EQ(families(p), all);
  p.seqlen_k = 1025;
  EXPECT_EQ(families(p), decode_only);
  p = measured;
  p.head_dim = 64;  // not measured
  EXPECT_EQ(families(p), all);
  // Named families are searched as named.
  SpaceOptions named;
  named.families = {"hopper_fwd", "decode_fwd"};
  EXPECT_EQ(families(measured, named), (std::set<std::string>{"decode_fwd", "hopper_fwd"}));
  named.families = {"fa2_fwd"};
  EXPECT_EQ(families(measured, named), std::set<std::string>{"fa2_fwd"});
  // The planner keeps its fallbacks: every family still serves the problem (a superset: other
  // tests of this binary may have registered a family for testing).
  std::set<std::string> serving;
  for (const Family* f : FamiliesFor(measured)) serving.insert(std::string(f->name()));
  EXPECT_TRUE(std::includes(serving.begin(), serving.end(), all.begin(), all.end()));
}

// The tuner measures the runtime's untuned plan among a problem's candidates, so that a tune
// never crowns a tile slower than what the problem ran before it (tuner/problem_tuner.cpp's
// UntunedPlan); a plan outside the space could not be measured. Every forward head dim, both
// masks, dense and packed, short and long streams, prefill and decode shapes, on sm_90a and sm_80.
TEST(Space, TheUntunedPlanIsAmongTheTunersCandidates) {
  for (const char* arch : {"sm_90a", "sm_80"}) {
    const int64_t smem = MaxSharedMemoryForArch(arch);
    for (int d : {64, 96, 128, 160, 192, 224, 256})
      for (bool causal : {false, true})
        for (Layout layout : {Layout::kDense, Layout::kVarlen, Layout::kPaged})
          for (int64_t nq : {1, 512, 2048, 4096, 16384}) {
            if (layout == Layout::kVarlen && nq == 1) continue;
            Problem p;
            p.head_dim = d;
            p.causal = causal && nq > 1;
            p.batch = std::max<int64_t>(1, 16384 / nq);
            p.seqlen_q = nq;
            p.seqlen_k = std::max<int64_t>(nq, 2048);
            p.heads_q = 2048 / d;
            p.heads_kv = nq == 1 ? 1 : p.heads_q;
            p.layout = layout;
            auto plan = DefaultVariantFor(p, smem, arch);
            ASSERT_TRUE(plan.ok()) << p.ToString() << " " << arch << ": " << plan.status().ToString();
            SpaceOptions o;
            o.arch = arch;
            o.max_smem_bytes = smem;
            auto space = EnumerateSpaceFor(p, o);
            ASSERT_TRUE(space.ok()) << p.ToString() << " " << arch << ": " << space.status().ToString();
            EXPECT_NE(std::find(space->begin(), space->end(), *plan), space->end())
                << p.ToString() << " on " << arch << ": untuned plan " << plan->Uri() << " is not searched";
          }
  }
}

TEST(Space, RespectsNarrowedOptions) {
  SpaceOptions o;
  o.values.push_back({"br", {128}});
  o.values.push_back({"bc", {64}});
  o.values.push_back({"w", {8}});
  o.values.push_back({"s", {2}});
  o.families = {"fa2_fwd"};
  auto space = EnumerateSpace({DType::kBF16, 128, false}, o);
  ASSERT_TRUE(space.ok());
  ASSERT_EQ(space->size(), 1u);
  EXPECT_EQ(space->front().Uri(), "fa2_fwd_bf16_d128_br128_bc64_w8_s2_full");
}

TEST(Space, RejectsBadClassAndOptions) {
  auto r = EnumerateSpace(ProblemClass{DType::kBF16, 80, false});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("head_dim (80) must be one of 32, 64, 96"), std::string::npos);
  SpaceOptions o;
  o.values.push_back({"bc", {48}});
  r = EnumerateSpace({DType::kBF16, 64, false}, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("bc holds 48; fa2_fwd allows: 32, 64, 128"), std::string::npos)
      << r.status().message();
  o = SpaceOptions{};
  o.max_smem_bytes = 1000;
  r = EnumerateSpace({DType::kBF16, 64, false}, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no variant"), std::string::npos);
}

void ExpectRejected(Variant v, const std::string& fragment) {
  Status s = CheckVariant(v);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << v.Uri();
  EXPECT_NE(s.message().find(fragment), std::string::npos) << v.Uri() << ": " << s.message();
}

TEST(Space, CheckVariantNamesParameterAndAllowedValues) {
  const Variant ok = Fa2Variant(DType::kBF16, 128, false, 128, 64, 4, 2);
  EXPECT_TRUE(CheckVariant(ok).ok());
  Variant v = ok;
  v.head_dim = 48;
  ExpectRejected(v, "head_dim (48) must be one of 32, 64, 96, 128, 160, 192, 224, 256");
  v = ok;
  v.SetParam("br", 96);
  ExpectRejected(v, "block_m (br) (96) must be one of 64, 128");
  v = ok;
  v.SetParam("bc", 16);
  ExpectRejected(v, "block_n (bc) (16) must be one of 32, 64, 128");
  v = ok;
  v.SetParam("w", 2);
  ExpectRejected(v, "warps (w) (2) must be one of 4, 8");
  v = ok;
  v.SetParam("s", 4);
  ExpectRejected(v, "stages (s) (4) must be one of 1, 2, 3");
  v = ok;
  v.SetParam("br", 64);
  v.SetParam("w", 8);
  ExpectRejected(v, "block_m (64) must be a multiple of warps * 16 (128)");
  v = ok;
  v.SetParam("bc", 128);
  v.SetParam("s", 3);
  ExpectRejected(v, "exceeds max_smem_bytes (232448)");
}

TEST(Space, SharedMemoryMatchesKernelAbi) {
  Variant v = Fa2Variant(DType::kBF16, 128, false, 128, 64, 4, 2);
  EXPECT_EQ(SharedMemoryBytes(v), (128 + 2 * 2 * 64) * (128 + 8) * 2);
  EXPECT_EQ(SharedMemoryBytes(v), detail::SharedMemoryBytes(128, 64, 128, 2));
}

TEST(Space, DefaultVariantIsFa2StartingTileAndFits) {
  EXPECT_EQ(DefaultVariant(ProblemClass{DType::kBF16, 64, false}, kDefaultMaxSmemBytes, "sm_80").Uri(), "fa2_fwd_bf16_d64_br128_bc128_w4_s2_full");
  EXPECT_EQ(DefaultVariant(ProblemClass{DType::kF16, 128, true}, kDefaultMaxSmemBytes, "sm_80").Uri(), "fa2_fwd_f16_d128_br128_bc64_w4_s2_causal");
  EXPECT_EQ(DefaultVariant(ProblemClass{DType::kBF16, 256, false}, kDefaultMaxSmemBytes, "sm_80").Uri(), "fa2_fwd_bf16_d256_br64_bc64_w4_s2_full");
  EXPECT_EQ(DefaultVariant(ProblemClass{DType::kBF16, 32, false}, kDefaultMaxSmemBytes, "sm_80").Param("bc"), 128);
  EXPECT_EQ(DefaultVariant(ProblemClass{DType::kBF16, 96, false}, kDefaultMaxSmemBytes, "sm_80").Param("bc"), 64);
  EXPECT_EQ(DefaultVariant(ProblemClass{DType::kBF16, 160, false}, kDefaultMaxSmemBytes, "sm_80").Param("br"), 64);
  // d128 128x64 s2 needs 104448 bytes: on sm_86 it drops to one stage.
  Variant small = DefaultVariant({DType::kBF16, 128, false}, MaxSharedMemoryForArch("sm_86"), "sm_86");
  EXPECT_EQ(small.Uri(), "fa2_fwd_bf16_d128_br128_bc64_w4_s1_full");
  for (int d : kSupportedHeadDims) {
    for (const char* arch : {"sm_80", "sm_86", "sm_90a"}) {
      const int64_t limit = MaxSharedMemoryForArch(arch);
      Variant v = DefaultVariant({DType::kF16, d, true}, limit, arch);
      EXPECT_TRUE(CheckVariant(v, limit).ok()) << arch << " " << v.Uri();
    }
  }
}

TEST(Space, ArchLimits) {
  EXPECT_EQ(MaxSharedMemoryForArch("sm_80"), 166912);
  EXPECT_EQ(MaxSharedMemoryForArch("sm_86"), 101376);
  EXPECT_EQ(MaxSharedMemoryForArch("sm_89"), 101376);
  EXPECT_EQ(MaxSharedMemoryForArch("sm_90"), 232448);
  EXPECT_EQ(MaxSharedMemoryForArch("sm_90a"), 232448);
  EXPECT_EQ(MaxSharedMemoryForArch("sm_70"), 0);
  EXPECT_EQ(MaxSharedMemoryForArch("garbage"), 0);
  EXPECT_NE(KnownArchs().find("sm_90a"), std::string::npos);
  // Every known arch's limit is within the largest one (GenerateSource's check).
  std::string archs = KnownArchs() + ", ";
  int n = 0;
  for (size_t pos; (pos = archs.find(", ")) != std::string::npos; archs.erase(0, pos + 2), ++n) {
    const int64_t limit = MaxSharedMemoryForArch(archs.substr(0, pos));
    EXPECT_GT(limit, 0) << archs.substr(0, pos);
    EXPECT_LE(limit, kLargestMaxSmemBytes) << archs.substr(0, pos);
  }
  EXPECT_GE(n, 5);
}

TEST(ProblemClass, FromProblemAndVariant) {
  Problem p{DType::kF16, 64, true, 2, 10, 20, 4, 2};
  EXPECT_EQ(ClassOf(p), (ProblemClass{DType::kF16, 64, true}));
  EXPECT_EQ(ClassOf(p).ToString(), "f16 d64 causal");
  Variant v = Fa2Variant(DType::kBF16, 256, false, 64, 64, 4, 1);
  EXPECT_EQ(ClassOf(v).ToString(), "bf16 d256 full");
}

}  // namespace
}  // namespace flashtune
