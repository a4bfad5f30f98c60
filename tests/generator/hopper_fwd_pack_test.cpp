// CPU tests of the Hopper forward kernel's host side (generator/hopper_fwd_pack.h) and of the
// template's own checks: it compiles for sm_90a with NVRTC, no GPU needed.
#include "generator/hopper_fwd_pack.h"

#include <gtest/gtest.h>
#include <nvrtc.h>

#include <cstring>

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "flashtune/source.h"
#include "flashtune/compiler.h"
#include "generator/embedded_templates.h"

namespace flashtune::detail {
namespace {

HopperConfig Default() { return HopperConfig{DType::kBF16, 128, false, 128, 128, 2, 2}; }

// The variant's whole translation unit, as the generator emits it: its prologue and the template.
std::string HopperSource(const HopperConfig& c) {
  return HopperPrologue(c, HopperUri(c)) + *ExpandedTemplate("hopper_fwd.cuh");
}

// Device-looking pointers: only their values matter to the pack.
ForwardArgs Args(const HopperConfig& c, int64_t b, int64_t nq, int64_t nk, int64_t hq, int64_t hkv) {
  ForwardArgs a = ForwardArgs::Contiguous(Problem{c.dtype, c.head_dim, c.causal, b, nq, nk, hq, hkv});
  a.q = reinterpret_cast<const void*>(uintptr_t(0x100000));
  a.k = reinterpret_cast<const void*>(uintptr_t(0x200000));
  a.v = reinterpret_cast<const void*>(uintptr_t(0x300000));
  a.o = reinterpret_cast<void*>(uintptr_t(0x400000));
  a.lse = reinterpret_cast<float*>(uintptr_t(0x500000));
  return a;
}

TEST(HopperPack, UriNamesEveryParameter) {
  EXPECT_EQ(HopperUri(Default()), "hopper_fwd_bf16_d128_bm128_bn128_wg2_s2_p0_pp1_ov1_full");
  EXPECT_EQ(HopperUri({DType::kF16, 64, true, 192, 96, 3, 3}), "hopper_fwd_f16_d64_bm192_bn96_wg3_s3_p0_pp1_ov1_causal");
  EXPECT_EQ(HopperUri({DType::kF16, 64, true, 192, 96, 3, 3, true, false, false}),
            "hopper_fwd_f16_d64_bm192_bn96_wg3_s3_p1_pp0_ov0_causal");
  EXPECT_EQ(HopperUri({DType::kBF16, 128, false, 128, 128, 2, 2, true, true, true, 2}),
            "hopper_fwd_bf16_d128_bm128_bn128_wg2_s2_p2_pp1_ov1_full");
}

// Head dims 96, 160 and 224 run on the next multiple of 64: the tiles' shared memory, registers
// and rules are that head dim's; the prologue says both; the tensor maps describe the tensors'
// columns (their boxes read the rest as zeros, and the O store drops it).
TEST(HopperPack, PaddedHeadDimsRunOnTheNextWholeChunk) {
  for (auto [data, tile] : {std::pair{96, 128}, std::pair{160, 192}, std::pair{224, 256}}) {
    HopperConfig c = {DType::kBF16, data, true, 128, 80, 2, 2};
    HopperConfig t = c;
    t.head_dim = tile;
    SCOPED_TRACE(data);
    EXPECT_EQ(HopperTileHeadDim(c), tile);
    EXPECT_EQ(HopperTileHeadDim(t), tile);
    ASSERT_TRUE(CheckHopperConfig(c).ok()) << CheckHopperConfig(c).ToString();
    EXPECT_EQ(HopperSmemBytes(c), HopperSmemBytes(t));
    EXPECT_EQ(HopperBlocksPerSm(c), HopperBlocksPerSm(t));
    EXPECT_EQ(HopperRescaleThreshold(c), HopperRescaleThreshold(t));
    const std::string prologue = HopperPrologue(c, HopperUri(c));
    EXPECT_NE(prologue.find("kHeadDim = " + std::to_string(tile) + ";"), std::string::npos) << prologue;
    EXPECT_NE(prologue.find("kHeadDimData = " + std::to_string(data) + ";"), std::string::npos) << prologue;
    EXPECT_EQ(HopperUri(c).find("_d" + std::to_string(data) + "_"), std::string("hopper_fwd_bf16").size());
    LaunchPacket packet;
    ASSERT_TRUE(PackHopper(c, Args(c, 2, 300, 500, 8, 2), 132, &packet).ok());
    for (int m = 0; m < 4; ++m) {
      EXPECT_EQ(packet.maps[m].dims[0], uint64_t(data)) << m;
      EXPECT_EQ(packet.maps[m].box[0], 64u) << m;
      EXPECT_EQ(packet.maps[m].strides_bytes[0], uint64_t(data) * 2) << m;  // [B, N, H, D]: the head stride
    }
  }
  // A head dim that is a whole number of chunks is its own tile.
  EXPECT_NE(HopperPrologue(Default(), HopperUri(Default())).find("kHeadDimData = 128;"), std::string::npos);
}

// The padded head dims' tiles compile for sm_90a without spills and without serialised wgmmas
// (ptxas's C7515 / C7520 warnings), S's k-steps past the tensors' columns left out.
TEST(HopperPack, PaddedHeadDimTilesCompileWithoutSpills) {
  Compiler compiler(Compiler::Options{"-", 1});
  for (const HopperConfig& c : {HopperConfig{DType::kBF16, 96, false, 128, 128, 2, 2},
                                HopperConfig{DType::kF16, 96, true, 128, 128, 2, 2, true, true, true, 2},
                                HopperConfig{DType::kBF16, 160, true, 128, 96, 2, 2},
                                HopperConfig{DType::kBF16, 224, false, 128, 80, 2, 2},
                                // d96's three-warpgroup 96-key tile: O 48 wide leaves S and P room.
                                HopperConfig{DType::kBF16, 96, true, 192, 96, 3, 2, true, true, true, 2}}) {
    ASSERT_TRUE(CheckHopperConfig(c).ok()) << CheckHopperConfig(c).ToString();
    auto cubin = compiler.Compile(
        GeneratedSourceRequest(HopperUri(c), HopperSource(c), "sm_90a"));
    ASSERT_TRUE(cubin.ok()) << cubin.status().ToString() << cubin.status().log();
    EXPECT_EQ(cubin->resources.spill_store_bytes, 0) << HopperUri(c);
    EXPECT_EQ(cubin->log.find("C7515"), std::string::npos) << cubin->log;
    EXPECT_EQ(cubin->log.find("C7520"), std::string::npos) << cubin->log;
  }
}

// The PTX of a variant (NVRTC to compute_90a, no ptxas): what the template asks of the hardware,
// before ptxas's choices. "" on any NVRTC failure (the test then fails on its expectations).
std::string HopperPtx(const HopperConfig& c) {
  const std::string source = HopperSource(c);
  nvrtcProgram program;
  if (nvrtcCreateProgram(&program, source.c_str(), HopperUri(c).c_str(), 0, nullptr, nullptr) != NVRTC_SUCCESS)
    return "";
  const char* options[] = {"--gpu-architecture=compute_90a", "--std=c++17"};
  std::string ptx;
  size_t size = 0;
  if (nvrtcCompileProgram(program, 2, options) == NVRTC_SUCCESS && nvrtcGetPTXSize(program, &size) == NVRTC_SUCCESS) {
    ptx.resize(size);
    if (nvrtcGetPTX(program, ptx.data()) != NVRTC_SUCCESS) ptx.clear();
  }
  nvrtcDestroyProgram(&program);
  return ptx;
}

// A padded head dim's P V runs at the tensors' width: the wgmma's N is 96, 160 or 224 (O's
// accumulators too), not the tile's 128, 192 or 256 (session 44: 0.7-5% faster, H100). S keeps
// the K/V block's width (80 or 96 here, unlike either), so the PTX's shapes tell the GEMMs apart.
TEST(HopperPack, PaddedHeadDimsRunPVAtTheDataWidth) {
  struct Case { HopperConfig c; const char* pv; const char* padded; };
  for (const Case& k : {Case{{DType::kBF16, 96, false, 128, 80, 2, 2}, "m64n96k16", "m64n128k16"},
                        Case{{DType::kF16, 160, true, 128, 96, 2, 2}, "m64n160k16", "m64n192k16"},
                        Case{{DType::kBF16, 224, false, 128, 80, 2, 2}, "m64n224k16", "m64n256k16"},
                        Case{{DType::kBF16, 128, false, 128, 80, 2, 2}, "m64n128k16", "m64n96k16"}}) {
    ASSERT_TRUE(CheckHopperConfig(k.c).ok()) << CheckHopperConfig(k.c).ToString();
    const std::string ptx = HopperPtx(k.c);
    ASSERT_FALSE(ptx.empty()) << HopperUri(k.c);
    EXPECT_NE(ptx.find(k.pv), std::string::npos) << HopperUri(k.c) << ": no " << k.pv;
    EXPECT_EQ(ptx.find(k.padded), std::string::npos) << HopperUri(k.c) << ": " << k.padded;
  }
}

// Two Q buffers (p2): persistent blocks only; a second Q tile and its two barriers in shared
// memory; the persistent grid sized by that.
TEST(HopperPack, TwoQBuffersArePersistentAndTakeASecondQTile) {
  HopperConfig c = Default();
  c.q_buffers = 2;
  EXPECT_NE(CheckHopperConfig(c).message().find("q_buffers (2) must be 1, or 2 with the persistent tile loop"),
            std::string::npos)
      << CheckHopperConfig(c).ToString();
  c.persistent = true;
  EXPECT_TRUE(CheckHopperConfig(c).ok()) << CheckHopperConfig(c).ToString();
  HopperConfig one = Default();
  one.persistent = true;
  // The second Q tile leaves no room for the split tail's merge buffer (68 floats x 128
  // threads): 1 KB + 2 x 32 KB + 2 x 2 x 32 KB + 96 B + 34 KB > 227 KB.
  EXPECT_TRUE(HopperSplitTail(one));
  EXPECT_FALSE(HopperSplitTail(c));
  EXPECT_EQ(HopperSmemBytes(c), HopperSmemBytes(one) - 68 * 128 * 4 + 128 * 128 * 2 + 2 * 8);
  c.q_buffers = 3;
  EXPECT_NE(CheckHopperConfig(c).message().find("q_buffers (3)"), std::string::npos);
  // d256 128x80 with two Q tiles: 1 KB + 2 x 64 KB + 2 x 2 x 40 KB > 227 KB.
  HopperConfig d256 = {DType::kBF16, 256, false, 128, 80, 2, 2, true, true, true, 2};
  EXPECT_NE(CheckHopperConfig(d256).message().find("shared memory"), std::string::npos);
}

// The two-Q-buffer tiles the GPU tests run (d128 128x128 two consumer warpgroups, d64 192x128
// three) compile without spills or serialised wgmmas: the deferred store wait's branch sits
// between wgmma issues and waits (with a __syncwarp after it, d64 spilled 56 bytes).
TEST(HopperPack, TwoQBufferTilesCompileWithoutSpills) {
  Compiler compiler(Compiler::Options{"-", 1});
  for (const HopperConfig& c : {HopperConfig{DType::kBF16, 128, false, 128, 128, 2, 2, true, true, true, 2},
                                HopperConfig{DType::kBF16, 64, false, 192, 128, 3, 2, true, true, true, 2}}) {
    ASSERT_TRUE(CheckHopperConfig(c).ok()) << CheckHopperConfig(c).ToString();
    auto cubin = compiler.Compile(
        GeneratedSourceRequest(HopperUri(c), HopperSource(c), "sm_90a"));
    ASSERT_TRUE(cubin.ok()) << cubin.status().ToString() << cubin.status().log();
    EXPECT_EQ(cubin->resources.spill_store_bytes, 0) << HopperUri(c);
    EXPECT_EQ(cubin->log.find("C7520"), std::string::npos) << cubin->log;
    EXPECT_EQ(cubin->log.find("C7515"), std::string::npos) << cubin->log;
  }
}

TEST(HopperPack, ConfigRules) {
  EXPECT_TRUE(CheckHopperConfig(Default()).ok());
  HopperConfig c = Default();
  c.block_m = 64;  // two consumer warpgroups own 128 rows
  EXPECT_NE(CheckHopperConfig(c).message().find("block_m (64) must be 64 * consumer_wgs (128)"), std::string::npos);
  c = Default();
  c.block_n = 72;
  EXPECT_NE(CheckHopperConfig(c).message().find("block_n (72)"), std::string::npos);
  for (int head_dim : {32, 80, 288}) {
    c = Default();
    c.head_dim = head_dim;
    EXPECT_NE(CheckHopperConfig(c).message().find("head_dim (" + std::to_string(head_dim) +
                                                  ") must be 64, 96, 128, 160, 192, 224 or 256"),
              std::string::npos)
        << CheckHopperConfig(c).ToString();
  }
  c = Default();
  c.stages = 1;
  EXPECT_NE(CheckHopperConfig(c).message().find("stages (1)"), std::string::npos);
  c = {DType::kBF16, 256, false, 128, 96, 2, 3};  // 353 KB
  EXPECT_NE(CheckHopperConfig(c).message().find("shared memory"), std::string::npos);
  c = {DType::kBF16, 128, false, 192, 128, 3, 2};  // S + P + O exceed 160 registers
  EXPECT_NE(CheckHopperConfig(c).message().find("registers"), std::string::npos);
  c.overlap = false;  // without overlap P replaces S: S + O fit
  EXPECT_TRUE(CheckHopperConfig(c).ok()) << CheckHopperConfig(c).ToString();
  c.block_n = 144;
  EXPECT_NE(CheckHopperConfig(c).message().find("registers"), std::string::npos);
  EXPECT_EQ(HopperSmemBytes(Default()), 1024 + 128 * 128 * 2 + 2 * 2 * 128 * 128 * 2 + 68 * 128 * 4 + 10 * 8);
  EXPECT_EQ(HopperThreads(Default()), 384);
}

// The split tail (a last tile of one live warpgroup deals its K/V blocks to all of them) needs
// a second consumer warpgroup, ping-pong turns and a merge buffer of (head_dim / 2 + 4) floats per thread of
// each warpgroup but the first, where that fits beside the Q and K/V tiles; the prologue says
// whether the kernel has it, and the shared memory counts the buffer.
TEST(HopperPack, SplitTailWhereTheMergeBufferFits) {
  const HopperConfig d64 = {DType::kBF16, 64, false, 192, 128, 3, 2, true, true, true, 2};
  ASSERT_TRUE(CheckHopperConfig(d64).ok()) << CheckHopperConfig(d64).ToString();
  EXPECT_TRUE(HopperSplitTail(d64));
  EXPECT_EQ(HopperSmemBytes(d64), 1024 + 2 * 192 * 64 * 2 + 2 * 2 * 128 * 64 * 2 + 2 * 36 * 128 * 4 + 12 * 8);
  EXPECT_NE(HopperPrologue(d64, HopperUri(d64)).find("kSplitTail = true"), std::string::npos);

  HopperConfig no_turns = d64;  // without ping-pong's turns nothing keeps the split blocks in order
  no_turns.pingpong = false;
  EXPECT_FALSE(HopperSplitTail(no_turns));
  EXPECT_EQ(HopperSmemBytes(no_turns), HopperSmemBytes(d64) - 2 * 36 * 128 * 4);

  HopperConfig one = d64;  // one consumer warpgroup: nobody to share with
  one.block_m = 64;
  one.consumer_wgs = 1;
  ASSERT_TRUE(CheckHopperConfig(one).ok()) << CheckHopperConfig(one).ToString();
  EXPECT_FALSE(HopperSplitTail(one));
  EXPECT_NE(HopperPrologue(one, HopperUri(one)).find("kSplitTail = false"), std::string::npos);

  // d128 192x80 with two Q tiles: 1 KB + 96 KB + 80 KB + 2 x 68 KB > 227 KB; one Q tile fits.
  HopperConfig d128 = {DType::kBF16, 128, false, 192, 80, 3, 2, true, true, true, 2};
  ASSERT_TRUE(CheckHopperConfig(d128).ok()) << CheckHopperConfig(d128).ToString();
  EXPECT_FALSE(HopperSplitTail(d128));
  d128.q_buffers = 1;
  EXPECT_TRUE(HopperSplitTail(d128));
  EXPECT_LE(HopperSmemBytes(d128), 232448);

  // Four warpgroups: a split tile's four S turns in a row need three K blocks in flight before
  // the first P V frees a V slot, so two stages would deadlock the ring (they hung on an H100).
  HopperConfig four = {DType::kBF16, 64, false, 256, 64, 4, 2, true, true, true, 2};
  ASSERT_TRUE(CheckHopperConfig(four).ok()) << CheckHopperConfig(four).ToString();
  EXPECT_FALSE(HopperSplitTail(four));
  EXPECT_NE(HopperPrologue(four, HopperUri(four)).find("kSplitTail = false"), std::string::npos);
  four.stages = 3;
  ASSERT_TRUE(CheckHopperConfig(four).ok()) << CheckHopperConfig(four).ToString();
  EXPECT_TRUE(HopperSplitTail(four));
}

// The packet's parameter bytes as the template's struct.
HopperParams ParamsOf(const LaunchPacket& l) {
  HopperParams p;
  std::memcpy(&p, l.args, sizeof p);
  return p;
}

TEST(HopperPack, PacksGeometryMapsAndParameters) {
  const HopperConfig c = Default();
  ForwardArgs a = Args(c, 2, 1000, 300, 8, 2);
  LaunchPacket l;
  Status packed = PackHopper(c, a, 0, &l);
  ASSERT_TRUE(packed.ok()) << packed.ToString();
  EXPECT_EQ(l.grid[0], 8u);
  EXPECT_EQ(l.grid[1], 8u);
  EXPECT_EQ(l.grid[2], 2u);
  EXPECT_EQ(l.block[0], 384u);
  EXPECT_EQ(l.smem_bytes, unsigned(HopperSmemBytes(c)));
  ASSERT_EQ(l.tensor_maps, 4);
  EXPECT_EQ(l.arg_bytes, sizeof(HopperParams));
  EXPECT_EQ(l.maps[0].offset, 0u);
  EXPECT_EQ(l.maps[1].offset, 128u);
  EXPECT_EQ(l.maps[2].offset, 256u);
  EXPECT_EQ(l.maps[3].offset, 384u);
  const TensorMapRequest& q = l.maps[0];
  EXPECT_EQ(q.base, a.q);
  EXPECT_TRUE(q.bf16);
  EXPECT_EQ(q.rank, 4u);
  EXPECT_EQ(q.dims[0], 128u);
  EXPECT_EQ(q.dims[1], 8u);
  EXPECT_EQ(q.dims[2], 1000u);
  EXPECT_EQ(q.dims[3], 2u);
  EXPECT_EQ(q.strides_bytes[0], 128u * 2);             // head
  EXPECT_EQ(q.strides_bytes[1], 8u * 128 * 2);         // seq
  EXPECT_EQ(q.strides_bytes[2], 1000u * 8 * 128 * 2);  // batch
  EXPECT_EQ(q.box[0], 64u);
  EXPECT_EQ(q.box[1], 1u);
  EXPECT_EQ(q.box[2], 128u);
  EXPECT_EQ(q.swizzle, TensorMapRequest::Swizzle::k128B);
  EXPECT_TRUE(q.oob_zero);
  EXPECT_EQ(l.maps[1].dims[1], 2u);  // k: Hkv heads
  EXPECT_EQ(l.maps[1].dims[2], 300u);
  EXPECT_EQ(l.maps[1].box[2], 128u);  // block_n rows
  EXPECT_EQ(l.maps[3].box[2], 64u);   // o: one warpgroup's rows per store
  const HopperParams p = ParamsOf(l);
  EXPECT_EQ(p.o, a.o);
  EXPECT_EQ(p.lse, a.lse);
  EXPECT_EQ(p.seqlen_q, 1000);
  EXPECT_EQ(p.seqlen_k, 300);
  EXPECT_EQ(p.heads_q, 8);
  EXPECT_EQ(p.heads_kv, 2);
  EXPECT_EQ(p.batch, 2);
  EXPECT_FLOAT_EQ(p.scale_log2, float(1.0 / std::sqrt(128.0) * 1.4426950408889634));
}

// Varlen: the packed tensors are maps of one batch over all rows, the grid covers the longest
// sequence of every batch entry, and the kernel gets the offsets and totals; a dense call's
// parameters have no offsets (the kernel's dense indexing).
TEST(HopperPack, VarlenMapsThePackedRows) {
  const HopperConfig c = Default();
  ForwardArgs a = Args(c, 3, 1000, 300, 8, 2);
  EXPECT_EQ(ParamsOf([&] {
              LaunchPacket l;
              EXPECT_TRUE(PackHopper(c, a, 0, &l).ok());
              return l;
            }()).cu_seqlens_q,
            nullptr);
  a.problem.layout = Layout::kVarlen;
  a.q_strides.batch = a.k_strides.batch = a.v_strides.batch = a.o_strides.batch = 0;
  a.varlen.cu_seqlens_q = reinterpret_cast<const int32_t*>(uintptr_t(0x600000));
  a.varlen.cu_seqlens_k = reinterpret_cast<const int32_t*>(uintptr_t(0x700000));
  a.varlen.total_q = 1500;
  a.varlen.total_k = 0;  // every sequence without keys: a map still needs one row
  LaunchPacket l;
  Status packed = PackHopper(c, a, 0, &l);
  ASSERT_TRUE(packed.ok()) << packed.ToString();
  EXPECT_EQ(l.grid[0], 8u);  // ceil(1000 / 128)
  EXPECT_EQ(l.grid[1], 8u);
  EXPECT_EQ(l.grid[2], 3u);
  EXPECT_EQ(l.maps[0].dims[2], 1500u);
  EXPECT_EQ(l.maps[0].dims[3], 1u);
  EXPECT_EQ(l.maps[1].dims[2], 1u);
  EXPECT_EQ(l.maps[1].dims[3], 1u);
  EXPECT_EQ(l.maps[3].dims[2], 1500u);
  EXPECT_EQ(l.maps[0].strides_bytes[1], 8u * 128 * 2);  // seq: the packed row
  const HopperParams p = ParamsOf(l);
  EXPECT_EQ(p.cu_seqlens_q, a.varlen.cu_seqlens_q);
  EXPECT_EQ(p.cu_seqlens_k, a.varlen.cu_seqlens_k);
  EXPECT_EQ(p.total_q, 1500);
  EXPECT_EQ(p.total_k, 0);
  EXPECT_EQ(p.seqlen_q, 1000);
  EXPECT_EQ(p.o_stride[1], 8 * 128);
}

// p3: the p2 tile with its tiles claimed at run time. It serves packed calls only, with the
// workspace's first word as the counter (zeroed by the launch) where the sequences differ in
// length, the call gives the workspace and has tiles enough (else the static deal, no counter),
// and its shared memory has the tile ring's barriers.
TEST(HopperPack, ClaimedTilesServePackedCallsFromTheWorkspaceCounter) {
  HopperConfig two = Default();
  two.persistent = true;
  two.q_buffers = 2;
  HopperConfig c = two;
  c.claims = true;
  ASSERT_TRUE(CheckHopperConfig(c).ok()) << CheckHopperConfig(c).ToString();
  EXPECT_EQ(HopperUri(c), "hopper_fwd_bf16_d128_bm128_bn128_wg2_s2_p3_pp1_ov1_full");
  EXPECT_TRUE(HopperTileClaims(c));
  EXPECT_FALSE(HopperTileClaims(two));
  EXPECT_EQ(HopperSmemBytes(c), HopperSmemBytes(two) + 6 * 8);
  // The producer's 32 registers where the consumers lose none by it: three warpgroups (160
  // either way), not two (232 against 240).
  EXPECT_EQ(HopperConsumerRegs(two), 240);
  EXPECT_EQ(HopperConsumerRegs(c), 240);
  EXPECT_NE(HopperPrologue(c, HopperUri(c)).find("kClaimTiles = true"), std::string::npos);
  EXPECT_NE(HopperPrologue(c, HopperUri(c)).find("kClaimTiles = true"), std::string::npos);
  EXPECT_NE(HopperPrologue(two, HopperUri(two)).find("kClaimTiles = false"), std::string::npos);
  HopperConfig one_q = c;
  one_q.q_buffers = 1;
  EXPECT_NE(CheckHopperConfig(one_q).message().find("claimed tiles (p3)"), std::string::npos)
      << CheckHopperConfig(one_q).ToString();

  ForwardArgs a = Args(c, 3, 1000, 1000, 96, 8);  // 1500 rows: 14 x 96 tiles at most, 10 a block
  LaunchPacket l;
  Status dense = PackHopper(c, a, 132, &l);
  EXPECT_NE(dense.message().find("serves packed sequences (layout varlen)"), std::string::npos) << dense.ToString();
  a.problem.layout = Layout::kVarlen;
  a.q_strides.batch = a.k_strides.batch = a.v_strides.batch = a.o_strides.batch = 0;
  a.varlen.cu_seqlens_q = a.varlen.cu_seqlens_k = reinterpret_cast<const int32_t*>(uintptr_t(0x600000));
  a.varlen.total_q = a.varlen.total_k = 1500;
  LaunchPacket bare;
  ASSERT_TRUE(PackHopper(c, a, 132, &bare).ok());  // no workspace: the static deal
  EXPECT_EQ(ParamsOf(bare).tile_counter, nullptr);
  EXPECT_EQ(bare.zero_bytes, 0u);
  a.workspace = reinterpret_cast<void*>(uintptr_t(0x800000));
  a.workspace_bytes = kHopperClaimWorkspaceBytes - 1;
  ASSERT_TRUE(PackHopper(c, a, 132, &bare).ok());  // too little for the counter: the same
  EXPECT_EQ(ParamsOf(bare).tile_counter, nullptr);
  a.workspace_bytes = kHopperClaimWorkspaceBytes;
  Status packed = PackHopper(c, a, 132, &l);
  ASSERT_TRUE(packed.ok()) << packed.ToString();
  EXPECT_EQ(static_cast<void*>(ParamsOf(l).tile_counter), a.workspace);
  EXPECT_EQ(l.zero, a.workspace);
  EXPECT_EQ(l.zero_bytes, 4u);
  EXPECT_EQ(l.grid[0], 132u);
  // Every sequence the longest (3 x 1000 rows): the static deal, which balances them.
  a.varlen.total_q = a.varlen.total_k = 3000;
  LaunchPacket equal;
  ASSERT_TRUE(PackHopper(c, a, 132, &equal).ok());
  EXPECT_EQ(ParamsOf(equal).tile_counter, nullptr);
  EXPECT_EQ(equal.zero_bytes, 0u);
  a.varlen.total_k = 2999;  // one key short somewhere: ragged
  ASSERT_TRUE(PackHopper(c, a, 132, &equal).ok());
  EXPECT_EQ(static_cast<void*>(ParamsOf(equal).tile_counter), a.workspace);
  a.varlen.total_q = a.varlen.total_k = 1500;
  // The p2 tile on the same packed call deals its tiles statically: no counter, nothing zeroed.
  LaunchPacket static_deal;
  ASSERT_TRUE(PackHopper(two, a, 132, &static_deal).ok());
  EXPECT_EQ(ParamsOf(static_deal).tile_counter, nullptr);
  EXPECT_EQ(static_deal.zero_bytes, 0u);
}

// A packed call too small to repay the counter's memset (about 2 us of the GPU's timeline) deals
// its tiles statically: under kHopperClaimMinTilesPerBlock tiles a block of the persistent grid,
// counting ceil(rows / block_m) tiles a sequence and head. Measured (session 50, H100, bf16 Hq 32
// d128 128x128): the first 8 sequences of varlen_bench's short batch (1548 rows, at most 4.9 tiles
// a block) ran 1.09x / 0.97x the static deal's time claimed (full / causal), the first 16 (5464
// rows, 14.2) 0.89x / 0.80x.
TEST(HopperPack, SmallPackedCallsDealTheirTilesStatically) {
  HopperConfig c = Default();
  c.persistent = true;
  c.q_buffers = 2;
  c.claims = true;
  EXPECT_FALSE(HopperClaimsRepay(c, 1548, 8, 32, 132));   // (1548 + 8 x 127) / 128 = 20 rows of tiles: 640
  EXPECT_TRUE(HopperClaimsRepay(c, 5464, 16, 32, 132));   // 58 x 32 = 1856 >= 8 x 132
  EXPECT_FALSE(HopperClaimsRepay(c, 4096, 1, 32, 132));   // 32 x 32 = 1024: one row of tiles short
  EXPECT_TRUE(HopperClaimsRepay(c, 4097, 1, 32, 132));    // 33 x 32 = 1056: exactly 8 a block
  EXPECT_TRUE(HopperClaimsRepay(c, 4097, 1, 32, 0));      // (a grid of at least one block)
  HopperConfig wide = c;  // 256-row tiles (d64's four warpgroups) count half as many
  wide.block_m = 256;
  EXPECT_FALSE(HopperClaimsRepay(wide, 4097, 1, 32, 132));
  EXPECT_TRUE(HopperClaimsRepay(wide, 5464, 16, 32, 132));  // (5464 + 16 x 255) / 256 = 37: 1184
  // Through the packing: the short batch's first 8 sequences without the counter, 16 with it.
  ForwardArgs a = Args(c, 8, 963, 963, 32, 8);
  a.problem.layout = Layout::kVarlen;
  a.q_strides.batch = a.k_strides.batch = a.v_strides.batch = a.o_strides.batch = 0;
  a.varlen.cu_seqlens_q = a.varlen.cu_seqlens_k = reinterpret_cast<const int32_t*>(uintptr_t(0x600000));
  a.varlen.total_q = a.varlen.total_k = 1548;
  a.workspace = reinterpret_cast<void*>(uintptr_t(0x800000));
  a.workspace_bytes = kHopperClaimWorkspaceBytes;
  LaunchPacket l;
  ASSERT_TRUE(PackHopper(c, a, 132, &l).ok());
  EXPECT_EQ(ParamsOf(l).tile_counter, nullptr);
  EXPECT_EQ(l.zero_bytes, 0u);
  a.problem.batch = 16;
  a.varlen.total_q = a.varlen.total_k = 5464;
  ASSERT_TRUE(PackHopper(c, a, 132, &l).ok());
  EXPECT_EQ(static_cast<void*>(ParamsOf(l).tile_counter), a.workspace);
  EXPECT_EQ(l.zero_bytes, 4u);
}

// The claimed-tile twins of the tiles packed calls run most (d64 192x128 and 256x64, d128
// 128x128, d192 128x80; d256 has no two-Q-buffer tile, so no twin): no serialised wgmma, and at
// most 20 bytes of spill, all in the producer's loading thread, whose tile arithmetic a run-time
// tile id moves out of uniform registers (read in the SASS: the consumers, with p2's registers,
// spill nothing).
TEST(HopperPack, ClaimedTileTwinsKeepTheirWgmmasAsynchronous) {
  Compiler compiler(Compiler::Options{"-", 1});
  HopperConfig d64 = {DType::kBF16, 64, true, 192, 128, 3, 2, true, true, true, 2};
  HopperConfig four = {DType::kBF16, 64, true, 256, 64, 4, 3, true, true, true, 2};
  HopperConfig d128 = {DType::kBF16, 128, false, 128, 128, 2, 2, true, true, true, 2};
  HopperConfig d192 = {DType::kBF16, 192, true, 128, 80, 2, 2, true, true, true, 2};
  for (HopperConfig c : {d64, four, d128, d192}) {
    c.claims = true;
    ASSERT_TRUE(CheckHopperConfig(c).ok()) << CheckHopperConfig(c).ToString();
    auto cubin = compiler.Compile(GeneratedSourceRequest(HopperUri(c), HopperSource(c), "sm_90a"));
    ASSERT_TRUE(cubin.ok()) << HopperUri(c) << ": " << cubin.status().ToString() << cubin.status().log();
    EXPECT_LE(cubin->resources.spill_store_bytes, 20) << HopperUri(c);
    EXPECT_EQ(cubin->log.find("C7520"), std::string::npos) << cubin->log;
    EXPECT_EQ(cubin->log.find("C7515"), std::string::npos) << cubin->log;
  }
  // hopper_paged's twins (the paged producer spills already at p2: 48-120 bytes, all in its
  // warps; the twins no more than their p2 tiles).
  for (HopperConfig c : {d64, d128}) {
    c.paged = true;
    HopperConfig twin = c;
    twin.claims = true;
    ASSERT_TRUE(CheckHopperConfig(twin).ok()) << CheckHopperConfig(twin).ToString();
    auto p2 = compiler.Compile(GeneratedSourceRequest(HopperUri(c), HopperSource(c), "sm_90a"));
    auto p3 = compiler.Compile(GeneratedSourceRequest(HopperUri(twin), HopperSource(twin), "sm_90a"));
    ASSERT_TRUE(p2.ok() && p3.ok()) << HopperUri(twin);
    EXPECT_LE(p3->resources.spill_store_bytes, p2->resources.spill_store_bytes) << HopperUri(twin);
    EXPECT_EQ(p3->log.find("C7520"), std::string::npos) << p3->log;
    EXPECT_EQ(p3->log.find("C7515"), std::string::npos) << p3->log;
  }
}

TEST(HopperPack, PersistentGridIsAtMostOneBlockPerSm) {
  HopperConfig c = Default();
  c.persistent = true;
  EXPECT_EQ(HopperUri(c), "hopper_fwd_bf16_d128_bm128_bn128_wg2_s2_p1_pp1_ov1_full");
  ForwardArgs a = Args(c, 2, 1000, 300, 8, 2);  // 8 x 8 x 2 = 128 tiles
  LaunchPacket l;
  EXPECT_FALSE(PackHopper(c, a, 0, &l).ok());  // no SM count
  ASSERT_TRUE(PackHopper(c, a, 132, &l).ok());
  EXPECT_EQ(l.grid[0], 128u);
  EXPECT_EQ(l.grid[1], 1u);
  ASSERT_TRUE(PackHopper(c, Args(c, 4, 1000, 300, 8, 2), 132, &l).ok());
  EXPECT_EQ(l.grid[0], 132u);
  EXPECT_NE(HopperPrologue(c, "x").find("constexpr bool kPersistent = true;"), std::string::npos);
  HopperConfig one = {DType::kBF16, 64, false, 64, 128, 1, 2, true};  // 74 KB: two blocks per SM
  ASSERT_TRUE(PackHopper(one, Args(one, 4, 1000, 300, 8, 2), 132, &l).ok());
  EXPECT_EQ(l.grid[0], 264u);
  one.block_n = 64;  // 42 KB and 80 accumulator registers: three blocks per SM
  ASSERT_TRUE(PackHopper(one, Args(one, 4, 1000, 300, 8, 2), 132, &l).ok());
  EXPECT_EQ(l.grid[0], 396u);
  one.block_n = 128;
  one.head_dim = 128;
  one.stages = 4;
  one.block_n = 96;  // 209 KB: one block per SM
  ASSERT_TRUE(PackHopper(one, Args(one, 4, 1000, 300, 8, 2), 132, &l).ok());
  EXPECT_EQ(l.grid[0], 132u);
  c.causal = true;  // tiles in pairs of equal cost (ft_tile_schedule.cuh)
  EXPECT_TRUE(CheckHopperConfig(c).ok());
  ASSERT_TRUE(PackHopper(c, Args(c, 4, 1000, 1000, 8, 2), 132, &l).ok());
  EXPECT_EQ(l.grid[0], 132u);
}

// One consumer warpgroup runs as many blocks per SM as its accumulators' registers and its
// shared memory allow (short d64 tiles are latency-bound: three blocks per SM won 20% at causal
// N 512, bench/data/h200-2026-12-01-hopper3); two or three consumer warpgroups run one.
TEST(HopperPack, BlocksPerSmFollowRegistersAndSharedMemory) {
  HopperConfig c = {DType::kBF16, 64, true, 64, 64, 1, 2};
  EXPECT_EQ(HopperBlocksPerSm(c), 3);  // S 32 + P 16 + O 32 = 80 <= 136 - 32
  EXPECT_EQ(HopperConsumerRegs(c), 136);
  EXPECT_NE(HopperPrologue(c, "x").find("constexpr int kBlocksPerSm = 3;"), std::string::npos);
  c.block_n = 48;  // 68 <= 104 - 32
  EXPECT_EQ(HopperBlocksPerSm(c), 4);
  EXPECT_EQ(HopperConsumerRegs(c), 104);
  c.block_n = 112;  // 116 > 104: two blocks, 232 registers
  EXPECT_EQ(HopperBlocksPerSm(c), 2);
  EXPECT_EQ(HopperConsumerRegs(c), 232);
  c = {DType::kBF16, 64, true, 64, 80, 1, 4};  // 91 KB of shared memory: three do not fit 228 KB
  EXPECT_EQ(HopperBlocksPerSm(c), 2);
  c = {DType::kBF16, 128, false, 64, 96, 1, 2};  // d128: 48 + 64 + 24 > 104
  EXPECT_EQ(HopperBlocksPerSm(c), 2);
  // Without the overlap, the S wgmma (whole, or its larger half of ceil(bn / 2) to 16 keys when
  // the whole does not fit) and O must also fit the launch bound's registers (64 at four blocks,
  // 80 at three): what ptxas compiles the S wgmma in.
  c = {DType::kBF16, 64, true, 64, 64, 1, 2};
  c.overlap = false;  // S 32 + O 32 = 64 <= 64, whole
  EXPECT_EQ(HopperBlocksPerSm(c), 4);
  c.block_n = 80;  // half 24 + O 32 = 56 <= 64; S + O 72 <= 104 - 32
  EXPECT_EQ(HopperBlocksPerSm(c), 4);
  c.block_n = 128;  // half 32 + 32 <= 80; S + O 96 <= 136 - 32, but 96 > 104 - 32: three
  EXPECT_EQ(HopperBlocksPerSm(c), 3);
  c.block_n = 160;  // S + O 112 > 136 - 32: two
  EXPECT_EQ(HopperBlocksPerSm(c), 2);
  c = {DType::kBF16, 128, true, 64, 64, 1, 2};
  c.overlap = false;  // d128: half 16 + O 64 = 80 <= 80 and 96 <= 136 - 32, but 83 KB of
  EXPECT_EQ(HopperBlocksPerSm(c), 2);  // shared memory: three do not fit 228 KB
  EXPECT_EQ(HopperBlocksPerSm(Default()), 1);
  EXPECT_EQ(HopperConsumerRegs(Default()), 240);
  EXPECT_EQ(HopperConsumerRegs({DType::kBF16, 64, false, 192, 128, 3, 2}), 160);
}

// The thresholded rescale (a row's max kept until a block passes it by 2^8) where it measured
// faster: d256, and three consumer warpgroups at d64 / d128; the prologue carries it to the template.
TEST(HopperPack, RescaleThresholdWhereItMeasuredFaster) {
  HopperConfig c = {DType::kBF16, 256, false, 128, 80, 2, 2};
  EXPECT_EQ(HopperRescaleThreshold(c), 8);
  EXPECT_NE(HopperPrologue(c, "x").find("constexpr int kRescaleThreshold = 8;"), std::string::npos);
  c.block_n = 64;
  c.causal = true;
  EXPECT_EQ(HopperRescaleThreshold(c), 8);
  c = {DType::kF16, 64, false, 192, 128, 3, 2};
  EXPECT_EQ(HopperRescaleThreshold(c), 8);
  c.consumer_wgs = 1;  // 64x128, one warpgroup: 1-2% slower with it
  c.block_m = 64;
  EXPECT_EQ(HopperRescaleThreshold(c), 0);
  EXPECT_NE(HopperPrologue(c, "x").find("constexpr int kRescaleThreshold = 0;"), std::string::npos);
  EXPECT_EQ(HopperRescaleThreshold(Default()), 0);  // d128 two warpgroups: up to 7.5% slower with it
  EXPECT_EQ(HopperRescaleThreshold({DType::kBF16, 128, false, 128, 192, 2, 2}), 0);
  EXPECT_EQ(HopperRescaleThreshold({DType::kBF16, 64, false, 128, 128, 2, 2}), 0);  // 1-2% slower
  EXPECT_EQ(HopperRescaleThreshold({DType::kBF16, 128, false, 192, 80, 3, 2}), 8);  // 4.6-4.8% faster
  EXPECT_EQ(HopperRescaleThreshold({DType::kBF16, 192, false, 192, 64, 3, 2}), 0);  // unmeasured
}

TEST(HopperPack, ThreeBlocksPerSmCompileWithinTheirShare) {
  HopperConfig c = {DType::kBF16, 64, true, 64, 64, 1, 2};
  ASSERT_EQ(HopperBlocksPerSm(c), 3);
  Compiler compiler(Compiler::Options{"-", 1});
  auto cubin = compiler.Compile(
      GeneratedSourceRequest(HopperUri(c), HopperSource(c), "sm_90a"));
  ASSERT_TRUE(cubin.ok()) << cubin.status().ToString();
  // The launch bound: 65536 / (3 x 256 threads), rounded down to 8; the consumers' 136 after
  // setmaxnreg hold S, P and O without spilling.
  EXPECT_EQ(cubin->resources.registers, 80);
  EXPECT_EQ(cubin->resources.spill_store_bytes, 0);
  EXPECT_EQ(cubin->log.find("C7508"), std::string::npos) << cubin->log;
  EXPECT_EQ(cubin->log.find("C7515"), std::string::npos) << cubin->log;
}

// Without the overlap, one warpgroup compiles at the generator's blocks per SM without spilling
// or serialised wgmmas: 64x64 at four, 64x80 at four and 64x112 / 64x128 at three, the last
// three with S in two wgmma halves (the template's kSplitS). Unsplit, ptxas stopped them at the
// S wgmma (C7602: insufficient registers (64) / (80), session 15): their S and O do not fit the
// launch bound's registers, though they fit setmaxnreg's.
TEST(HopperPack, NoOverlapTilesCompileAtTheirBlocksPerSm) {
  Compiler compiler(Compiler::Options{"-", 1});
  for (const auto& [bn, blocks, registers] : {std::array<int, 3>{64, 4, 64}, std::array<int, 3>{80, 4, 64},
                                              std::array<int, 3>{112, 3, 80}, std::array<int, 3>{128, 3, 80}}) {
    HopperConfig c = {DType::kBF16, 64, true, 64, bn, 1, 2};
    c.overlap = false;
    ASSERT_EQ(HopperBlocksPerSm(c), blocks) << bn;
    auto cubin = compiler.Compile(
        GeneratedSourceRequest(HopperUri(c), HopperSource(c), "sm_90a"));
    ASSERT_TRUE(cubin.ok()) << cubin.status().ToString() << cubin.status().log();
    EXPECT_EQ(cubin->resources.registers, registers) << bn;
    EXPECT_EQ(cubin->resources.spill_store_bytes, 0) << bn;
    EXPECT_EQ(cubin->log.find("C7520"), std::string::npos) << cubin->log;
    EXPECT_EQ(cubin->log.find("C7515"), std::string::npos) << cubin->log;
  }
}

// The split is for tiles without the overlap: with it, S of one block and P of the previous one
// are live together and the halves would not lower the peak, so 64x128 with the overlap stays at
// two blocks per SM. FT_HOPPER_BLOCKS (an A/B knob) refuses a persistent variant by name: the
// host sizes its grid by the generator's blocks per SM.
TEST(HopperPack, OverlapTilesKeepTheirBlocksAndTheBlocksKnobRefusesPersistentVariants) {
  HopperConfig c = {DType::kBF16, 64, true, 64, 128, 1, 2};
  c.overlap = true;
  EXPECT_EQ(HopperBlocksPerSm(c), 2);
  c.overlap = false;
  EXPECT_EQ(HopperBlocksPerSm(c), 3);
  c.persistent = true;
  Compiler compiler(Compiler::Options{"-", 1});
  CompileRequest r =
      GeneratedSourceRequest(HopperUri(c), HopperSource(c), "sm_90a");
  r.options.push_back("-DFT_HOPPER_BLOCKS=3");
  auto persistent = compiler.Compile(r);
  ASSERT_FALSE(persistent.ok());
  EXPECT_NE(persistent.status().log().find("FT_HOPPER_BLOCKS: 1-4 blocks per SM"), std::string::npos)
      << persistent.status().log();
}

// One tile of each kind compiles without spilling or serialised wgmmas (d256 128x80 spilled
// 24 bytes before the descriptors were built by addition, docs/perf-notes.md).
TEST(HopperPack, EveryKindOfTileCompilesWithoutSpilling) {
  Compiler compiler(Compiler::Options{"-", 1});
  HopperConfig one = {DType::kBF16, 64, true, 64, 64, 1, 2};
  HopperConfig persistent = {DType::kF16, 128, false, 128, 176, 2, 2};
  persistent.persistent = true;
  HopperConfig two_q = {DType::kBF16, 128, true, 128, 128, 2, 2, true, true, true, 2};  // p2
  HopperConfig two_q64 = {DType::kBF16, 64, false, 192, 128, 3, 2, true, true, true, 2};
  for (const HopperConfig& c : {one, persistent, HopperConfig{DType::kBF16, 256, true, 128, 80, 2, 2}, two_q, two_q64}) {
    auto cubin = compiler.Compile(
        GeneratedSourceRequest(HopperUri(c), HopperSource(c), "sm_90a"));
    ASSERT_TRUE(cubin.ok()) << HopperUri(c) << ": " << cubin.status().ToString() << cubin.status().log();
    EXPECT_EQ(cubin->resources.spill_store_bytes, 0) << HopperUri(c);
    EXPECT_EQ(cubin->log.find("C7520"), std::string::npos) << cubin->log;
    EXPECT_EQ(cubin->log.find("C7515"), std::string::npos) << cubin->log;
  }
}

// A persistent block loops from its epilogue's per-thread branches back to the next tile's
// wgmma; without a proven warp reconvergence there (the __syncwarp() closing a tile) ptxas
// serialises every wgmma of the kernel (C7520), which cost 1.3-1.9x on the H200.
TEST(HopperPack, PersistentVariantsKeepTheirWgmmasAsynchronous) {
  HopperConfig c = {DType::kBF16, 64, true, 64, 64, 1, 3};  // without it: C7520 (session 14)
  c.persistent = true;
  Compiler compiler(Compiler::Options{"-", 1});
  auto cubin = compiler.Compile(
      GeneratedSourceRequest(HopperUri(c), HopperSource(c), "sm_90a"));
  ASSERT_TRUE(cubin.ok()) << cubin.status().ToString();
  EXPECT_EQ(cubin->log.find("C7520"), std::string::npos) << cubin->log;
  EXPECT_EQ(cubin->log.find("C7515"), std::string::npos) << cubin->log;
  EXPECT_EQ(cubin->resources.spill_store_bytes, 0);
}

TEST(HopperPack, ExtentOneDimensionsGetALegalStride) {
  const HopperConfig c = Default();
  ForwardArgs a = Args(c, 1, 5, 5, 1, 1);
  a.q_strides.batch = 0;  // never stepped: any value is fine for the kernel
  LaunchPacket l;
  ASSERT_TRUE(PackHopper(c, a, 0, &l).ok());
  for (int i = 0; i < l.tensor_maps; ++i)
    for (int d = 0; d + 1 < int(l.maps[i].rank); ++d) EXPECT_EQ(l.maps[i].strides_bytes[d] % 16, 0u) << i << " " << d;
}

TEST(HopperPack, CanServeSaysWhyNot) {
  const HopperConfig c = Default();
  ForwardArgs a = Args(c, 2, 100, 100, 4, 4);
  EXPECT_TRUE(CanServe(c, a).ok());
  ForwardArgs b = a;
  b.problem.dtype = DType::kF16;
  EXPECT_NE(CanServe(c, b).message().find("cannot serve dtype f16"), std::string::npos);
  b = a;
  b.problem.causal = true;
  EXPECT_NE(CanServe(c, b).message().find("causal"), std::string::npos);
  b = a;
  b.k_strides.head = 0;  // broadcast heads: TMA needs a nonzero stride
  EXPECT_NE(CanServe(c, b).message().find("TMA cannot describe k_strides.head"), std::string::npos);
  b = a;
  b.q = reinterpret_cast<const void*>(uintptr_t(0x100008));
  EXPECT_FALSE(CanServe(c, b).ok());  // ValidateForwardArgs: 16-byte alignment
}

// A paged call (hopper_paged): B sequences over a pool of `block_size`-key pages, Nk the longest.
ForwardArgs PagedArgs(const HopperConfig& c, int block_size, int64_t nq = 300, int64_t nk = 4096) {
  Problem p{c.dtype, c.head_dim, c.causal, 3, nq, nk, 8, 2};
  p.layout = Layout::kPaged;
  ForwardArgs a = ForwardArgs::Contiguous(p, block_size);
  a.q = reinterpret_cast<const void*>(uintptr_t(0x100000));
  a.k = reinterpret_cast<const void*>(uintptr_t(0x200000));
  a.v = reinterpret_cast<const void*>(uintptr_t(0x300000));
  a.o = reinterpret_cast<void*>(uintptr_t(0x400000));
  a.lse = reinterpret_cast<float*>(uintptr_t(0x500000));
  a.seqlens_k = reinterpret_cast<const int32_t*>(uintptr_t(0x600000));
  a.paged.block_table = reinterpret_cast<const int32_t*>(uintptr_t(0x700000));
  return a;
}

// K/V maps over the page pool {D, Hkv, block_size, num_blocks}, boxes within a page that tile a
// key block (min(block_size, the largest power of two dividing block_n) rows), and the table,
// lengths and shifts in the parameters; the queries as dense (or packed) as ever.
TEST(HopperPack, PagedCallsMapThePoolInBoxesWithinAPage) {
  HopperConfig c = Default();
  c.paged = true;
  EXPECT_EQ(HopperUri(c), "hopper_paged_bf16_d128_bm128_bn128_wg2_s2_p0_pp1_ov1_full");
  HopperConfig dense = Default();
  EXPECT_EQ(HopperSmemBytes(c), HopperSmemBytes(dense) + 2 * 8);  // a V raw barrier per stage
  EXPECT_NE(HopperPrologue(c, HopperUri(c)).find("kPagedKv = true"), std::string::npos);
  EXPECT_NE(HopperPrologue(dense, HopperUri(dense)).find("kPagedKv = false"), std::string::npos);
  const struct {
    int block_n, block_size, box_rows;
  } cases[] = {{128, 256, 128}, {128, 16, 16}, {176, 256, 16}, {80, 64, 16}, {192, 64, 64}, {192, 32, 32}};
  for (const auto& k : cases) {
    c.block_n = k.block_n;
    ForwardArgs a = PagedArgs(c, k.block_size);
    LaunchPacket l;
    Status packed = PackHopper(c, a, 132, &l);
    ASSERT_TRUE(packed.ok()) << packed.ToString();
    EXPECT_EQ(l.grid[0], 3u);  // ceil(300 / 128) query blocks
    EXPECT_EQ(l.grid[1], 8u);
    EXPECT_EQ(l.grid[2], 3u);
    EXPECT_EQ(l.smem_bytes, unsigned(HopperSmemBytes(c)));
    for (int m : {1, 2}) {
      EXPECT_EQ(l.maps[m].dims[0], 128u);
      EXPECT_EQ(l.maps[m].dims[1], 2u);
      EXPECT_EQ(l.maps[m].dims[2], uint64_t(k.block_size));
      EXPECT_EQ(l.maps[m].dims[3], uint64_t(a.paged.num_blocks));
      EXPECT_EQ(l.maps[m].box[2], uint32_t(k.box_rows)) << k.block_n << " / " << k.block_size;
      EXPECT_EQ(l.maps[m].strides_bytes[1], uint64_t(2 * 128 * 2));                     // a page's row
      EXPECT_EQ(l.maps[m].strides_bytes[2], uint64_t(k.block_size) * 2 * 128 * 2);  // a page
    }
    EXPECT_EQ(l.maps[0].dims[2], 300u);  // dense queries [B, Nq, Hq, D]
    EXPECT_EQ(l.maps[0].dims[3], 3u);
    const HopperParams p = ParamsOf(l);
    EXPECT_EQ(p.seqlens_k, a.seqlens_k);
    EXPECT_EQ(p.block_table, a.paged.block_table);
    EXPECT_EQ(p.block_table_stride, a.paged.block_table_stride);
    EXPECT_EQ(1 << p.block_shift, k.block_size);
    EXPECT_EQ(1 << p.box_shift, k.box_rows);
    EXPECT_EQ(p.seqlen_k, 4096);
    EXPECT_EQ(p.cu_seqlens_q, nullptr);
    EXPECT_EQ(p.cu_seqlens_k, nullptr);
  }
  // Packed queries over pages (vLLM's varlen q): q / o as one batch of total_q rows.
  c.block_n = 128;
  ForwardArgs a = PagedArgs(c, 16);
  a.q_strides.batch = a.o_strides.batch = 0;
  a.varlen.cu_seqlens_q = reinterpret_cast<const int32_t*>(uintptr_t(0x800000));
  a.varlen.total_q = 700;
  LaunchPacket l;
  Status packed = PackHopper(c, a, 132, &l);
  ASSERT_TRUE(packed.ok()) << packed.ToString();
  EXPECT_EQ(l.maps[0].dims[2], 700u);
  EXPECT_EQ(l.maps[0].dims[3], 1u);
  EXPECT_EQ(l.maps[3].dims[2], 700u);
  EXPECT_EQ(l.maps[1].dims[3], uint64_t(a.paged.num_blocks));
  const HopperParams p = ParamsOf(l);
  EXPECT_EQ(p.cu_seqlens_q, a.varlen.cu_seqlens_q);
  EXPECT_EQ(p.total_q, 700);
  EXPECT_EQ(p.cu_seqlens_k, nullptr);
}

// hopper_paged's p3: the keys' counts are on the device, so a paged call (or a dense cache with
// lengths) claims its tiles wherever it gives the workspace and has tiles enough, whether its
// queries are packed or not; the ring's barriers come after the raw ones (48 bytes more).
TEST(HopperPack, ClaimedTilesServePagedCachesFromTheWorkspaceCounter) {
  HopperConfig two = Default();
  two.paged = true;
  two.persistent = true;
  two.q_buffers = 2;
  HopperConfig c = two;
  c.claims = true;
  ASSERT_TRUE(CheckHopperConfig(c).ok()) << CheckHopperConfig(c).ToString();
  EXPECT_TRUE(HopperTileClaims(c));
  EXPECT_EQ(HopperUri(c), "hopper_paged_bf16_d128_bm128_bn128_wg2_s2_p3_pp1_ov1_full");
  EXPECT_EQ(HopperSmemBytes(c), HopperSmemBytes(two) + 6 * 8);
  ForwardArgs a = PagedArgs(c, 16, 300, 4096);  // 3 sequences of 300 queries over 8 heads: 3 x 3 x 8 tiles
  LaunchPacket bare;
  ASSERT_TRUE(PackHopper(c, a, 132, &bare).ok());
  EXPECT_EQ(ParamsOf(bare).tile_counter, nullptr) << "no workspace";
  a.workspace = reinterpret_cast<void*>(uintptr_t(0x800000));
  a.workspace_bytes = kHopperClaimWorkspaceBytes;
  LaunchPacket small;
  ASSERT_TRUE(PackHopper(c, a, 132, &small).ok());
  EXPECT_EQ(ParamsOf(small).tile_counter, nullptr) << "72 tiles on 72 blocks: nothing to balance";
  EXPECT_EQ(small.zero_bytes, 0u);
  LaunchPacket l;
  a.problem.heads_q = 128;  // 3 x 3 x 128 = 1152 tiles on 132 blocks: 8.7 a block
  a.problem.heads_kv = 16;
  a.q_strides = a.o_strides = Strides::Contiguous(300, 128, 128);
  a.k_strides = a.v_strides = Strides{16 * 16 * 128, 16 * 128, 128};
  Status packed = PackHopper(c, a, 132, &l);
  ASSERT_TRUE(packed.ok()) << packed.ToString();
  EXPECT_EQ(static_cast<void*>(ParamsOf(l).tile_counter), a.workspace);
  EXPECT_EQ(l.zero, a.workspace);
  EXPECT_EQ(l.zero_bytes, 4u);
  // The p2 tile on the same call deals statically.
  LaunchPacket static_deal;
  ASSERT_TRUE(PackHopper(two, a, 132, &static_deal).ok());
  EXPECT_EQ(ParamsOf(static_deal).tile_counter, nullptr);
  EXPECT_EQ(static_deal.zero_bytes, 0u);
  // A dense cache with lengths (one page a sequence) claims the same way.
  ForwardArgs dense = Args(c, 3, 300, 1000, 128, 16);
  dense.seqlens_k = reinterpret_cast<const int32_t*>(uintptr_t(0x600000));
  dense.workspace = a.workspace;
  dense.workspace_bytes = a.workspace_bytes;
  LaunchPacket cache;
  ASSERT_TRUE(PackHopper(c, dense, 132, &cache).ok());
  EXPECT_EQ(static_cast<void*>(ParamsOf(cache).tile_counter), dense.workspace);
}

// A dense cache with per-sequence lengths (flash_attn_with_kvcache's cache_seqlens) on the
// paged kernel: one page a sequence. K/V maps are the dense {D, Hkv, Nk, B}, boxes the largest
// power of two dividing block_n; no table (page b for sequence b), every key in that page
// (block_shift 30), the lengths in the parameters. hopper_fwd's kernel refuses the lengths.
TEST(HopperPack, ADenseCacheWithLengthsIsOnePageASequence) {
  HopperConfig c = Default();
  c.paged = true;
  for (int block_n : {128, 192, 176, 80}) {
    c.block_n = block_n;
    ForwardArgs a = Args(c, 3, 300, 1000, 8, 2);
    a.seqlens_k = reinterpret_cast<const int32_t*>(uintptr_t(0x600000));
    LaunchPacket l;
    Status packed = PackHopper(c, a, 132, &l);
    ASSERT_TRUE(packed.ok()) << packed.ToString();
    EXPECT_EQ(l.grid[0], 3u);
    EXPECT_EQ(l.grid[2], 3u);
    for (int m : {1, 2}) {
      EXPECT_EQ(l.maps[m].dims[1], 2u);
      EXPECT_EQ(l.maps[m].dims[2], 1000u);
      EXPECT_EQ(l.maps[m].dims[3], 3u);
      EXPECT_EQ(l.maps[m].box[2], uint32_t(block_n & -block_n)) << block_n;
      EXPECT_EQ(l.maps[m].strides_bytes[2], uint64_t(1000) * 2 * 128 * 2);  // a sequence
    }
    const HopperParams p = ParamsOf(l);
    EXPECT_EQ(p.seqlens_k, a.seqlens_k);
    EXPECT_EQ(p.block_table, nullptr);
    EXPECT_EQ(p.block_table_stride, 0);
    EXPECT_EQ(p.block_shift, 30);
    EXPECT_EQ(1 << p.box_shift, block_n & -block_n);
    EXPECT_EQ(p.seqlen_k, 1000);
  }
  ForwardArgs a = Args(c, 3, 300, 1000, 8, 2);
  Status no_lengths = CanServe(c, a);
  EXPECT_NE(no_lengths.message().find("dense without seqlens_k"), std::string::npos) << no_lengths.ToString();
  a.seqlens_k = reinterpret_cast<const int32_t*>(uintptr_t(0x600000));
  Status dense_kernel = CanServe(Default(), a);
  EXPECT_NE(dense_kernel.message().find("does not read per-sequence key counts (seqlens_k); hopper_paged does"),
            std::string::npos)
      << dense_kernel.ToString();
  // Past 2^30 keys the kernel's row mask would not hold a key: refused, for fa2_fwd to serve.
  ForwardArgs huge = Args(c, 1, 300, (int64_t(1) << 30) + 1, 8, 2);
  huge.seqlens_k = a.seqlens_k;
  Status too_long = CheckTmaDescribable(huge);
  EXPECT_NE(too_long.message().find("hopper_paged: seqlen_k (1073741825) exceeds 2^30"), std::string::npos)
      << too_long.ToString();
  huge.seqlens_k = nullptr;
  EXPECT_TRUE(CheckTmaDescribable(huge).ok()) << CheckTmaDescribable(huge).ToString();
}

// What a paged kernel cannot serve, said: the other layout either way, and pages below 16 keys
// (fa2_paged's: a key block would take many boxes of a few rows).
TEST(HopperPack, PagedCanServeSaysWhyNot) {
  HopperConfig c = Default();
  c.paged = true;
  EXPECT_TRUE(CanServe(c, PagedArgs(c, 16)).ok());
  Status small = CanServe(c, PagedArgs(c, 8));
  EXPECT_NE(small.message().find("paged.block_size (8) is below 16"), std::string::npos) << small.ToString();
  Status dense = CanServe(c, Args(c, 2, 100, 100, 4, 4));
  EXPECT_NE(dense.message().find("reads a paged K/V cache or a dense one with seqlens_k; this call's layout is "
                                 "dense without seqlens_k"),
            std::string::npos)
      << dense.ToString();
  Status paged = CanServe(Default(), PagedArgs(c, 16));
  EXPECT_NE(paged.message().find("reads dense or packed K/V; this call's layout is paged"), std::string::npos)
      << paged.ToString();
  ForwardArgs odd = PagedArgs(c, 16);
  odd.k_strides.head = 4;  // 8 bytes: TMA needs multiples of 16
  Status tma = CheckTmaDescribable(odd);
  EXPECT_NE(tma.message().find("hopper_paged: TMA cannot describe k_strides.head"), std::string::npos)
      << tma.ToString();
}

// The paged kernel compiles for sm_90a in each kind of tile, its wgmmas asynchronous.
TEST(HopperPack, PagedTilesCompileWithAsynchronousWgmmas) {
  Compiler compiler(Compiler::Options{"-", 1});
  HopperConfig two = Default();
  HopperConfig three = {DType::kBF16, 64, true, 192, 128, 3, 2, true, true, true, 2};
  HopperConfig one = {DType::kF16, 64, false, 64, 64, 1, 2, false, true, false};
  HopperConfig wide = {DType::kBF16, 256, true, 128, 80, 2, 2, true};
  // Three stages: three producer warps load K/V (two at two stages).
  HopperConfig staged = {DType::kBF16, 128, false, 128, 128, 2, 3};
  HopperConfig staged3 = {DType::kBF16, 128, true, 192, 80, 3, 3};
  for (HopperConfig c : {two, three, one, wide, staged, staged3}) {
    c.paged = true;
    auto cubin = compiler.Compile(
        GeneratedSourceRequest(HopperUri(c), HopperSource(c), "sm_90a"));
    ASSERT_TRUE(cubin.ok()) << HopperUri(c) << ": " << cubin.status().ToString() << cubin.status().log();
    EXPECT_EQ(cubin->log.find("C7520"), std::string::npos) << cubin->log;
    EXPECT_EQ(cubin->log.find("C7515"), std::string::npos) << cubin->log;
    // The d128 default on pages (128x128, three stages): its producer's 24 registers hold the
    // block loop without spills.
    if (c.head_dim == 128 && c.block_m == 128 && c.stages == 3) {
      EXPECT_EQ(cubin->resources.spill_store_bytes, 0) << HopperUri(c);
    }
  }
}

TEST(HopperPack, PrologueAndTemplateCompileForSm90a) {
  HopperConfig c = {DType::kF16, 64, true, 192, 128, 3, 2};
  const std::string uri = HopperUri(c);
  const std::string prologue = HopperPrologue(c, uri);
  EXPECT_NE(prologue.find("constexpr int kConsumerWarpgroups = 3;"), std::string::npos);
  EXPECT_NE(prologue.find("#define FT_KERNEL_NAME " + uri), std::string::npos);
  const std::string text = prologue + *ExpandedTemplate("hopper_fwd.cuh");
  Compiler compiler(Compiler::Options{"-", 1});
  auto cubin = compiler.Compile(GeneratedSourceRequest(uri, text, "sm_90a"));
  ASSERT_TRUE(cubin.ok()) << cubin.status().ToString();
  // setmaxnreg needs the launch-time cap: 65536 / 512 threads.
  EXPECT_EQ(cubin->resources.registers, 128);
  EXPECT_EQ(cubin->resources.spill_store_bytes, 0);
  EXPECT_EQ(cubin->log.find("C7508"), std::string::npos) << cubin->log;  // setmaxnreg ignored
  // wgmma serialised: a non-wgmma instruction may define an accumulator while a wgmma using it
  // is in flight (the overlapped loop must leave S retired at its head).
  EXPECT_EQ(cubin->log.find("C7515"), std::string::npos) << cubin->log;
}

TEST(HopperPack, TemplateRejectsAWrongSharedMemorySize) {
  const HopperConfig c = Default();
  std::string prologue = HopperPrologue(c, HopperUri(c));
  const std::string smem = "kSmemBytes = " + std::to_string(HopperSmemBytes(c));
  ASSERT_NE(prologue.find(smem), std::string::npos);
  prologue.replace(prologue.find(smem), smem.size(), "kSmemBytes = 4096");
  Compiler compiler(Compiler::Options{"-", 1});
  auto r = compiler.Compile({"bad", prologue + *ExpandedTemplate("hopper_fwd.cuh"), "sm_90a", {}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().log().find("kSmemBytes disagrees with the template's shared-memory layout"), std::string::npos);
  EXPECT_NE(r.status().log().find("hopper_fwd.cuh("), std::string::npos) << r.status().log();
}

// The tuner's switches compile in every combination the family allows; here the one furthest
// from the default: persistent causal (tiles in pairs), no ping-pong, no overlap.
TEST(HopperPack, TemplateCompilesTheSwitchesOff) {
  HopperConfig c = Default();
  c.causal = c.persistent = true;
  c.pingpong = c.overlap = false;
  const std::string prologue = HopperPrologue(c, HopperUri(c));
  EXPECT_NE(prologue.find("constexpr bool kPingPong = false;"), std::string::npos);
  EXPECT_NE(prologue.find("constexpr bool kOverlap = false;"), std::string::npos);
  Compiler compiler(Compiler::Options{"-", 1});
  auto cubin = compiler.Compile(GeneratedSourceRequest(HopperUri(c), prologue + *ExpandedTemplate("hopper_fwd.cuh"), "sm_90a"));
  ASSERT_TRUE(cubin.ok()) << cubin.status().ToString();
  EXPECT_EQ(cubin->resources.spill_store_bytes, 0);
  EXPECT_EQ(cubin->log.find("C7508"), std::string::npos) << cubin->log;
}

TEST(HopperPack, PingPongNeedsTwoConsumerWarpgroups) {
  HopperConfig c = {DType::kBF16, 128, false, 64, 96, 1, 2};
  // The prologue never asks a single consumer warpgroup to take turns ...
  EXPECT_NE(HopperPrologue(c, "x").find("constexpr bool kPingPong = false;"), std::string::npos);
  // ... and the template refuses it when asked.
  std::string prologue = HopperPrologue(c, "bad");
  const std::string off = "kPingPong = false";
  prologue.replace(prologue.find(off), off.size(), "kPingPong = true");
  Compiler compiler(Compiler::Options{"-", 1});
  auto r = compiler.Compile({"bad", prologue + *ExpandedTemplate("hopper_fwd.cuh"), "sm_90a", {}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().log().find("ping-pong needs two or more consumer warpgroups"), std::string::npos)
      << r.status().log();
}

}  // namespace
}  // namespace flashtune::detail
