// CPU tests of the hopper_fwd family's space (generator/families/hopper_fwd.cpp): which of its
// switches the default space searches, and that the others stay allowed.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "flashtune/space.h"
#include "generator/family.h"

namespace flashtune {
namespace {

std::vector<Variant> HopperSpace(int head_dim, bool causal, std::vector<std::pair<std::string, std::vector<int>>> values = {},
                                 const char* family = "hopper_fwd") {
  SpaceOptions o;
  o.families = {family};
  o.values = std::move(values);
  auto space = EnumerateSpace(ProblemClass{DType::kBF16, head_dim, causal}, o);
  EXPECT_TRUE(space.ok()) << space.status().ToString();
  return space.ok() ? *space : std::vector<Variant>{};
}

int CountWith(const std::vector<Variant>& vs, const char* param, int value) {
  return int(std::count_if(vs.begin(), vs.end(), [&](const Variant& v) { return v.Param(param) == value; }));
}

TEST(HopperFwdFamily, DefaultSpaceSearchesWhatMeasurementsShowedCanWin) {
  for (bool causal : {false, true}) {
    const std::vector<Variant> d64 = HopperSpace(64, causal);
    ASSERT_FALSE(d64.empty());
    // Persistent (causal: in pairs of equal cost) and not, both searched, causal included;
    // persistent with two Q buffers wherever they fit. Of the no-overlap tiles below, only
    // 64x64 keeps its extra block per SM with a second Q tile.
    // (The four-warpgroup tile, below, is searched persistent only.)
    EXPECT_EQ(CountWith(d64, "p", 1) + CountWith(d64, "p", 2) + 2 - 1, CountWith(d64, "p", 0));
    // No overlap lost 20-30% where it kept the blocks per SM; no ping-pong lost at d64. No
    // overlap is searched only where it buys a block per SM: one warpgroup 64x64 and 64x80 at
    // four, 64x128 at three (64x112 at three lost everywhere); 64x64 persistent at four.
    std::vector<std::string> no_overlap;
    for (const Variant& v : d64)
      if (v.Param("ov") == 0) no_overlap.push_back(v.Uri());
    const std::string kind = causal ? "causal" : "full";
    EXPECT_EQ(no_overlap, (std::vector<std::string>{"hopper_fwd_bf16_d64_bm64_bn64_wg1_s2_p0_pp1_ov0_" + kind,
                                                    "hopper_fwd_bf16_d64_bm64_bn64_wg1_s2_p2_pp1_ov0_" + kind,
                                                    "hopper_fwd_bf16_d64_bm64_bn80_wg1_s2_p0_pp1_ov0_" + kind,
                                                    "hopper_fwd_bf16_d64_bm64_bn128_wg1_s2_p0_pp1_ov0_" + kind}));
    EXPECT_EQ(CountWith(HopperSpace(128, causal), "ov", 0), 0);
    EXPECT_EQ(CountWith(d64, "pp", 0), 0);
    // One consumer warpgroup (two blocks per SM) won at d64 for short and causal sequences ...
    EXPECT_GT(CountWith(d64, "wg", 1), 0);
    // ... and lost or tied at d128 (session 20: 64x64-64x128, causal N 512-2k and full N 512).
    EXPECT_EQ(CountWith(HopperSpace(128, causal), "wg", 1), 0);
    EXPECT_EQ(CountWith(HopperSpace(256, causal), "wg", 1), 0);
    // Four consumer warpgroups: d64's 256x64 with three stages (its split tail), p2 and the
    // overlap, the one three-stage tile hopper_fwd searches; its two-stage twins lost everywhere
    // on an H100 (session 48). Over pages the same one (a short paged d64 stream's untuned
    // tile); nowhere else: not at d128 or d256.
    std::vector<std::string> four, three_stages;
    for (const Variant& v : d64) {
      if (v.Param("wg") == 4) four.push_back(v.Uri());
      if (v.Param("s") == 3) three_stages.push_back(v.Uri());
    }
    EXPECT_EQ(four, (std::vector<std::string>{"hopper_fwd_bf16_d64_bm256_bn64_wg4_s3_p2_pp1_ov1_" + kind}));
    EXPECT_EQ(three_stages, four);
    for (int d : {96, 128, 256}) EXPECT_EQ(CountWith(HopperSpace(d, causal), "wg", 4), 0) << d;
    std::vector<std::string> paged_four;
    for (const Variant& v : HopperSpace(64, causal, {}, "hopper_paged"))
      if (v.Param("wg") == 4) paged_four.push_back(v.Uri());
    EXPECT_EQ(paged_four, (std::vector<std::string>{"hopper_paged_bf16_d64_bm256_bn64_wg4_s3_p2_pp1_ov1_" + kind}));
  }
}

// p2 (two Q buffers) replaces p1 wherever the second Q tile fits in shared memory: d128 128x128
// and d64 192x128 search p2, not p1; d128 128x176 (241 KB with two) and d256 128x80 keep p1.
// hopper_paged searches three K/V stages as well (d128, two or more consumer warpgroups: 16-key
// pages make a block 8 TMA boxes a chunk, and 128x128 took 0.93-0.98 of the two-stage time with
// three in session 35), and its d128 default has three; hopper_fwd's default keeps two, and its
// space too but for d64's four-warpgroup tile (above).
// Head dims 96, 160 and 224 run on the next multiple of 64 on sm_90a: served by both families,
// searched and defaulted like that head dim (the same tiles, named by the tensors' head dim); d32
// and the non-"a" target stay fa2's.
TEST(HopperFwdFamily, PaddedHeadDimsTakeTheNextWholeChunksTiles) {
  for (const char* name : {"hopper_fwd", "hopper_paged"}) {
    const Family& family = *FindFamily(name);
    for (auto [data, tile] : {std::pair{96, 128}, std::pair{160, 192}, std::pair{224, 256}}) {
      for (bool causal : {false, true}) {
        SCOPED_TRACE(std::string(name) + " d" + std::to_string(data) + (causal ? " causal" : ""));
        const ProblemClass cls{DType::kBF16, data, causal}, twin{DType::kBF16, tile, causal};
        EXPECT_TRUE(family.Serves(cls, Target{}));
        EXPECT_FALSE(family.Serves(cls, Target{"sm_90", 232448}));
        Variant expected = family.Default(twin, Target{});
        expected.head_dim = data;
        EXPECT_EQ(family.Default(cls, Target{}), expected);
        // The twin's space, and at d96 on hopper_fwd its three-warpgroup 96-key tiles besides
        // (O's 48 accumulators leave room for them), URIs with the tile's head dim.
        std::vector<std::string> space, twin_space;
        for (Variant v : HopperSpace(data, causal, {}, name)) {
          if (v.head_dim == 96 && v.family == "hopper_fwd" && v.Param("bm") == 192 && v.Param("bn") == 96) {
            EXPECT_EQ(v.Param("wg"), 3) << v.Uri();
            EXPECT_TRUE(v.Param("p") == 0 || v.Param("p") == 2) << v.Uri();
            continue;
          }
          v.head_dim = tile;
          space.push_back(v.Uri());
        }
        for (const Variant& v : HopperSpace(tile, causal, {}, name)) twin_space.push_back(v.Uri());
        EXPECT_FALSE(space.empty());
        EXPECT_EQ(space, twin_space);
        const int wide = CountWith(HopperSpace(data, causal, {}, name), "bn", 96) - CountWith(HopperSpace(tile, causal, {}, name), "bn", 96);
        EXPECT_EQ(wide, data == 96 && std::string(name) == "hopper_fwd" ? 2 : 0);
      }
    }
    EXPECT_FALSE(family.Serves(ProblemClass{DType::kBF16, 32, false}, Target{}));
  }
}

TEST(HopperFwdFamily, HopperPagedSearchesThreeStagesAtD128) {
  for (bool causal : {false, true}) {
    const std::vector<Variant> paged = HopperSpace(128, causal, {}, "hopper_paged");
    EXPECT_GT(CountWith(paged, "s", 3), 0);
    for (const Variant& v : paged) {
      if (v.Param("s") == 3) {
        EXPECT_GE(v.Param("wg"), 2) << v.Uri();
      }
    }
    // d64 over pages: three stages only in the four-warpgroup tile (whose split tail needs them).
    EXPECT_EQ(CountWith(HopperSpace(64, causal, {}, "hopper_paged"), "s", 3), 1);
    EXPECT_EQ(CountWith(HopperSpace(128, causal), "s", 3), 0);
    const Target sm90a{"sm_90a", MaxSharedMemoryForArch("sm_90a")};
    const ProblemClass cls{DType::kBF16, 128, causal};
    EXPECT_EQ(FindFamily("hopper_paged")->Default(cls, sm90a).Param("s"), 3);
    EXPECT_EQ(FindFamily("hopper_fwd")->Default(cls, sm90a).Param("s"), 2);
    EXPECT_EQ(FindFamily("hopper_paged")->Default(ProblemClass{DType::kBF16, 64, causal}, sm90a).Param("s"), 2);
  }
}

TEST(HopperFwdFamily, TwoQBuffersReplaceOneWhereTheyFit) {
  auto has = [](const std::vector<Variant>& vs, const std::string& uri) {
    return std::any_of(vs.begin(), vs.end(), [&](const Variant& v) { return v.Uri() == uri; });
  };
  for (bool causal : {false, true}) {
    const std::string kind = causal ? "causal" : "full";
    const std::vector<Variant> d64 = HopperSpace(64, causal), d128 = HopperSpace(128, causal),
                               d256 = HopperSpace(256, causal);
    EXPECT_TRUE(has(d128, "hopper_fwd_bf16_d128_bm128_bn128_wg2_s2_p2_pp1_ov1_" + kind));
    EXPECT_FALSE(has(d128, "hopper_fwd_bf16_d128_bm128_bn128_wg2_s2_p1_pp1_ov1_" + kind));
    EXPECT_TRUE(has(d64, "hopper_fwd_bf16_d64_bm192_bn128_wg3_s2_p2_pp1_ov1_" + kind));
    EXPECT_FALSE(has(d64, "hopper_fwd_bf16_d64_bm192_bn128_wg3_s2_p1_pp1_ov1_" + kind));
    EXPECT_TRUE(has(d128, "hopper_fwd_bf16_d128_bm128_bn176_wg2_s2_p1_pp1_ov1_" + kind));
    EXPECT_FALSE(has(d128, "hopper_fwd_bf16_d128_bm128_bn176_wg2_s2_p2_pp1_ov1_" + kind));
    EXPECT_TRUE(has(d256, "hopper_fwd_bf16_d256_bm128_bn80_wg2_s2_p1_pp1_ov1_" + kind));
    EXPECT_EQ(CountWith(d256, "p", 2), 0);
    // Never both for one tile.
    for (const Variant& v : d128) {
      if (v.Param("p") != 2) continue;
      Variant one = v;
      one.SetParam("p", 1);
      EXPECT_FALSE(has(d128, one.Uri())) << v.Uri();
    }
  }
}

TEST(HopperFwdFamily, UntunedTileFollowsTheKeyStreamsLength) {
  const Target sm90a{"sm_90a", MaxSharedMemoryForArch("sm_90a")};
  auto problem = [](int head_dim, bool causal, int64_t n, Layout layout = Layout::kDense) {
    Problem p;
    p.head_dim = head_dim;
    p.causal = causal;
    p.batch = 16384 / n;
    p.seqlen_q = p.seqlen_k = n;
    p.heads_q = p.heads_kv = 2048 / head_dim;
    p.layout = layout;
    return p;
  };
  const Family& fwd = *FindFamily("hopper_fwd");
  for (bool causal : {false, true}) {
    const std::string kind = causal ? "causal" : "full";
    // Up to 2048 keys: the class default's tile, persistent with two Q buffers.
    EXPECT_EQ(fwd.DefaultFor(problem(128, causal, 512), sm90a).Uri(),
              "hopper_fwd_bf16_d128_bm128_bn128_wg2_s2_p2_pp1_ov1_" + kind);
    EXPECT_EQ(fwd.DefaultFor(problem(128, causal, 2048), sm90a).Uri(),
              "hopper_fwd_bf16_d128_bm128_bn128_wg2_s2_p2_pp1_ov1_" + kind);
    // d64, dense, up to 1024 keys (causal: 4096): 256x64 over four warpgroups with three stages.
    const std::string four = "hopper_fwd_bf16_d64_bm256_bn64_wg4_s3_p2_pp1_ov1_" + kind;
    const std::string d64_default = fwd.Default(ProblemClass{DType::kBF16, 64, causal}, sm90a).Uri();
    for (int64_t n : {512, 1024}) EXPECT_EQ(fwd.DefaultFor(problem(64, causal, n), sm90a).Uri(), four) << n;
    // Past 1024 keys a full call takes the short-stream rule, then the class default.
    EXPECT_EQ(fwd.DefaultFor(problem(64, causal, 2048), sm90a).Uri(),
              causal ? four : "hopper_fwd_bf16_d64_bm192_bn128_wg3_s2_p2_pp1_ov1_full");
    EXPECT_EQ(fwd.DefaultFor(problem(64, causal, 4096), sm90a).Uri(), causal ? four : d64_default);
    EXPECT_EQ(fwd.DefaultFor(problem(64, causal, 8192), sm90a).Uri(), d64_default);
    EXPECT_NE(fwd.DefaultReason(problem(64, causal, 1024), sm90a).find("four consumer warpgroups"), std::string::npos);
    // Packed d64 sequences too, on their longest sequence, and the tile runs as its claiming twin
    // (with the static deal it took a ragged causal batch 1.33x longer; claimed, 1.03-1.06x less:
    // session 50).
    const Problem packed = problem(64, causal, 1024, Layout::kVarlen);
    EXPECT_EQ(fwd.DefaultFor(packed, sm90a).Uri(), four);
    EXPECT_NE(fwd.DefaultReason(packed, sm90a).find("the longest sequence's 1024 keys"), std::string::npos);
    EXPECT_EQ(fwd.TwinFor(fwd.DefaultFor(packed, sm90a), packed, nullptr).Param("p"), 3);
    EXPECT_EQ(fwd.DefaultFor(problem(96, causal, 512), sm90a).Uri(),
              "hopper_fwd_bf16_d96_bm128_bn128_wg2_s2_p2_pp1_ov1_" + kind);
    EXPECT_NE(fwd.DefaultReason(problem(128, causal, 512), sm90a).find("short K/V stream (512 keys"), std::string::npos);
    // d96 past 1024 keys (its tuned buckets' split): 192x96 over three consumer warpgroups, persistent.
    EXPECT_EQ(fwd.DefaultFor(problem(96, causal, 1024), sm90a).Uri(),
              "hopper_fwd_bf16_d96_bm128_bn128_wg2_s2_p2_pp1_ov1_" + kind);
    for (int64_t n : {1025, 2048, 4096})
      EXPECT_EQ(fwd.DefaultFor(problem(96, causal, n), sm90a).Uri(),
                "hopper_fwd_bf16_d96_bm192_bn96_wg3_s2_p2_pp1_ov1_" + kind) << n;
    EXPECT_NE(fwd.DefaultReason(problem(96, causal, 2048), sm90a).find("d96 over more than 1024 keys"), std::string::npos);
    EXPECT_NE(fwd.DefaultReason(problem(96, causal, 16384), sm90a).find("three consumer warpgroups"), std::string::npos);
    // Past it, and where the twin does not fit (d160 to d256's tiles), the class default.
    const ProblemClass d128{DType::kBF16, 128, causal};
    EXPECT_EQ(fwd.DefaultFor(problem(128, causal, 4096), sm90a).Uri(), fwd.Default(d128, sm90a).Uri());
    EXPECT_EQ(fwd.Default(d128, sm90a).Param("p"), 0);
    EXPECT_EQ(fwd.DefaultReason(problem(128, causal, 4096), sm90a), "");
    for (int d : {160, 192, 224, 256}) {
      const Problem p = problem(d, causal, 512);
      EXPECT_EQ(fwd.DefaultFor(p, sm90a).Uri(), fwd.Default(ClassOf(p), sm90a).Uri()) << d;
      EXPECT_EQ(fwd.DefaultReason(p, sm90a), "") << d;
    }
    // Packed sequences follow the same rule on their longest sequence (measured: session 44).
    EXPECT_EQ(fwd.DefaultFor(problem(128, causal, 512, Layout::kVarlen), sm90a).Uri(),
              "hopper_fwd_bf16_d128_bm128_bn128_wg2_s2_p2_pp1_ov1_" + kind);
    EXPECT_NE(fwd.DefaultReason(problem(128, causal, 512, Layout::kVarlen), sm90a)
                  .find("short K/V stream (the longest sequence's 512 keys"),
              std::string::npos);
    EXPECT_EQ(fwd.DefaultFor(problem(96, causal, 8192, Layout::kVarlen), sm90a).Uri(),
              "hopper_fwd_bf16_d96_bm192_bn96_wg3_s2_p2_pp1_ov1_" + kind);
    EXPECT_EQ(fwd.DefaultFor(problem(128, causal, 4096, Layout::kVarlen), sm90a).Uri(), fwd.Default(d128, sm90a).Uri());
    // hopper_paged over a short stream: the default's persistent twin (two stages where the
    // default has three), which a paged call runs claimed; past it the class default.
    const Family& hp = *FindFamily("hopper_paged");
    const Problem paged = problem(128, causal, 512, Layout::kPaged);
    EXPECT_EQ(hp.DefaultFor(paged, sm90a).Uri(), "hopper_paged_bf16_d128_bm128_bn128_wg2_s2_p2_pp1_ov1_" + kind);
    EXPECT_NE(hp.DefaultReason(paged, sm90a).find("a short paged K/V stream"), std::string::npos);
    EXPECT_EQ(hp.DefaultFor(problem(128, causal, 4096, Layout::kPaged), sm90a).Uri(),
              hp.Default(ClassOf(paged), sm90a).Uri());
    // What the runtime plans untuned goes through the same rule.
    auto planned = DefaultVariantFor(problem(128, causal, 1024), sm90a.max_smem_bytes, "sm_90a");
    ASSERT_TRUE(planned.ok()) << planned.status().ToString();
    EXPECT_EQ(planned->Param("p"), 2);
  }
}

// Every hopper_paged class over a short paged stream: the untuned tile is a valid variant, either
// the class default's persistent two-Q-buffer twin (said so, and run claimed) or, where that
// does not fit in shared memory, the class default itself (said nothing of); past 2048 keys the
// class default always. d64 up to 1024 keys (causal 4096) takes the four-warpgroup tile, as
// dense and packed calls do.
TEST(HopperFwdFamily, ShortPagedStreamsTakeTheDefaultsTwinWhereItFits) {
  const Target sm90a{"sm_90a", MaxSharedMemoryForArch("sm_90a")};
  const Family& hp = *FindFamily("hopper_paged");
  int twins = 0, defaults = 0;
  for (DType dtype : {DType::kBF16, DType::kF16})
    for (int d : {64, 96, 128, 160, 192, 224, 256})
      for (bool causal : {false, true}) {
        Problem p;
        p.dtype = dtype;
        p.head_dim = d;
        p.causal = causal;
        p.batch = 64;
        p.seqlen_q = 300;
        p.seqlen_k = 2048;
        p.heads_q = 32;
        p.heads_kv = 8;
        p.layout = Layout::kPaged;
        const Variant def = hp.Default(ClassOf(p), sm90a);
        if (d == 64) {
          Problem four = p;
          four.seqlen_k = causal ? 4096 : 1024;
          EXPECT_EQ(hp.DefaultFor(four, sm90a).Uri(), std::string("hopper_paged_") + (dtype == DType::kBF16 ? "bf16" : "f16") +
                                                           "_d64_bm256_bn64_wg4_s3_p2_pp1_ov1_" + (causal ? "causal" : "full"));
          EXPECT_NE(hp.DefaultReason(four, sm90a).find("as dense and packed calls run it"), std::string::npos);
          EXPECT_EQ(hp.TwinFor(hp.DefaultFor(four, sm90a), four, nullptr).Param("p"), 3);
          four.seqlen_k += 1;
          EXPECT_EQ(hp.DefaultFor(four, sm90a).Param("wg"), 3) << "past it: the twin (full) or the class default";
          if (causal) continue;  // 2048 keys, causal: the four-warpgroup tile again
        }
        const Variant v = hp.DefaultFor(p, sm90a);
        EXPECT_TRUE(hp.Check(v, sm90a.max_smem_bytes).ok()) << v.Uri();
        const std::string why = hp.DefaultReason(p, sm90a);
        if (v.Uri() == def.Uri()) {
          ++defaults;
          EXPECT_EQ(why, "") << v.Uri();
        } else {
          ++twins;
          Variant expected = def;
          expected.SetParam("p", 2);
          if (!hp.Check(expected, sm90a.max_smem_bytes).ok()) expected.SetParam("s", 2);
          EXPECT_EQ(v.Uri(), expected.Uri());
          EXPECT_NE(why.find("a short paged K/V stream (the longest sequence's 2048 keys"), std::string::npos) << why;
          std::string twin_why;
          EXPECT_EQ(hp.TwinFor(v, p, &twin_why).Param("p"), 3) << v.Uri();
        }
        Problem longer = p;
        longer.seqlen_k = 2049;
        EXPECT_EQ(hp.DefaultFor(longer, sm90a).Uri(), def.Uri());
      }
  EXPECT_EQ(twins, 10) << "d64 full, d96 and d128 (both dtypes, causal or not): the twin fits";
  EXPECT_EQ(defaults, 16) << "d160 to d256: a second Q buffer does not fit beside their stages";
}

// Packed calls run a p2 tile as its p3 twin (tiles claimed from the workspace's counter); every
// other tile and layout runs as planned, and no space searches p3 (the tuner times dense
// tensors). A packed call's workspace is asked to hold the counter (not required), on
// hopper_fwd only.
TEST(HopperFwdFamily, PackedCallsRunTwoQBufferTilesAsTheirClaimingTwins) {
  Problem p{DType::kBF16, 64, true, 4, 2048, 2048, 32, 8};
  const Family& fwd = *FindFamily("hopper_fwd");
  const Family& paged = *FindFamily("hopper_paged");
  auto tile = Variant::FromUri("hopper_fwd_bf16_d64_bm192_bn128_wg3_s2_p2_pp1_ov1_causal");
  ASSERT_TRUE(tile.ok());
  std::string why;
  EXPECT_EQ(fwd.TwinFor(*tile, p, &why).Uri(), tile->Uri());
  EXPECT_EQ(why, "");
  EXPECT_EQ(fwd.WorkspaceWanted(p), 0);
  p.layout = Layout::kVarlen;
  EXPECT_EQ(fwd.TwinFor(*tile, p, &why).Uri(), "hopper_fwd_bf16_d64_bm192_bn128_wg3_s2_p3_pp1_ov1_causal");
  EXPECT_NE(why.find("claims its tiles at run time"), std::string::npos) << why;
  EXPECT_TRUE(fwd.Check(fwd.TwinFor(*tile, p, nullptr), 232448).ok());
  EXPECT_EQ(fwd.WorkspaceWanted(p), 16);
  EXPECT_EQ(fwd.WorkspaceBytes(p, 132), 0) << "a call without it deals its tiles statically";
  EXPECT_GE(WorkspaceBytes(p, 132), 16) << "what the runtime asks for";
  for (const char* other : {"hopper_fwd_bf16_d64_bm192_bn128_wg3_s2_p0_pp1_ov1_causal",
                            "hopper_fwd_bf16_d64_bm192_bn128_wg3_s2_p1_pp1_ov1_causal"}) {
    auto v = Variant::FromUri(other);
    ASSERT_TRUE(v.ok()) << other;
    why.clear();
    EXPECT_EQ(fwd.TwinFor(*v, p, &why).Uri(), other);
    EXPECT_EQ(why, "");
  }
  // A paged cache: hopper_paged's p2 tiles run claimed too (the keys' counts are on the device);
  // hopper_fwd, which does not serve pages, keeps its tile and asks nothing.
  p.layout = Layout::kPaged;
  auto over_pages = Variant::FromUri("hopper_paged_bf16_d64_bm192_bn128_wg3_s2_p2_pp1_ov1_causal");
  ASSERT_TRUE(over_pages.ok());
  why.clear();
  EXPECT_EQ(paged.TwinFor(*over_pages, p, &why).Uri(), "hopper_paged_bf16_d64_bm192_bn128_wg3_s2_p3_pp1_ov1_causal");
  EXPECT_NE(why.find("a paged cache runs it as"), std::string::npos) << why;
  EXPECT_TRUE(paged.Check(paged.TwinFor(*over_pages, p, nullptr), 232448).ok());
  EXPECT_EQ(paged.WorkspaceWanted(p), 16);
  EXPECT_EQ(fwd.WorkspaceWanted(p), 0);
  EXPECT_EQ(fwd.TwinFor(*tile, p, nullptr).Uri(), tile->Uri());
  p.layout = Layout::kVarlen;  // packed K/V: hopper_paged does not serve them
  EXPECT_EQ(paged.TwinFor(*over_pages, p, nullptr).Uri(), over_pages->Uri());
  EXPECT_EQ(paged.WorkspaceWanted(p), 0);
  for (bool causal : {false, true})
    for (int d : {64, 96, 128, 192}) EXPECT_EQ(CountWith(HopperSpace(d, causal), "p", 3), 0) << d;
}

TEST(HopperFwdFamily, SwitchesLeftOutOfTheSpaceStayAllowed) {
  const Family* hopper = FindFamily("hopper_fwd");
  ASSERT_NE(hopper, nullptr);
  for (const char* uri : {"hopper_fwd_bf16_d128_bm64_bn128_wg1_s2_p1_pp0_ov1_causal",
                          "hopper_fwd_bf16_d64_bm192_bn112_wg3_s2_p1_pp0_ov0_full",
                          "hopper_fwd_bf16_d128_bm192_bn128_wg3_s2_p0_pp1_ov0_full"}) {
    auto v = Variant::FromUri(uri);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    Status checked = hopper->Check(*v, 232448);
    EXPECT_TRUE(checked.ok()) << uri << ": " << checked.ToString();
  }
  // Asked for by value, they are enumerated: no overlap unlocks 192-row d128 tiles (S and O fit
  // 160 registers once P no longer lives beside the next block's S).
  auto wide = [](const Variant& v) { return v.Param("wg") == 3 && v.Param("bn") == 128; };
  const std::vector<Variant> no_overlap = HopperSpace(128, false, {{"ov", {0}}});
  EXPECT_EQ(CountWith(no_overlap, "ov", 0), int(no_overlap.size()));
  EXPECT_TRUE(std::any_of(no_overlap.begin(), no_overlap.end(), wide));
  const std::vector<Variant> searched = HopperSpace(128, false);
  EXPECT_TRUE(std::none_of(searched.begin(), searched.end(), wide));
}

// What a plan or a report says of a tile names the split tail where the kernel has it (two or
// more consumer warpgroups taking turns, and room for the merge buffer).
TEST(HopperFwdFamily, DescribeSaysWhereShortLastTilesSplit) {
  const Family* hopper = FindFamily("hopper_fwd");
  ASSERT_NE(hopper, nullptr);
  auto describe = [&](const char* uri) {
    auto v = Variant::FromUri(uri);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return v.ok() ? hopper->Describe(*v) : std::string();
  };
  EXPECT_EQ(describe("hopper_fwd_bf16_d64_bm192_bn128_wg3_s2_p2_pp1_ov1_full"),
            "192x128 wg3 s2 persistent, two Q buffers, short last tiles split");
  EXPECT_EQ(describe("hopper_fwd_bf16_d64_bm64_bn128_wg1_s2_p0_pp1_ov0_full"), "64x128 wg1 s2 no-overlap");
  EXPECT_EQ(describe("hopper_fwd_bf16_d128_bm128_bn128_wg2_s2_p2_pp1_ov1_causal"),
            "128x128 wg2 s2 persistent, two Q buffers");  // no room for the merge buffer
  EXPECT_EQ(describe("hopper_fwd_bf16_d64_bm192_bn128_wg3_s2_p0_pp0_ov1_full"), "192x128 wg3 s2 no-pingpong");
}

}  // namespace
}  // namespace flashtune
