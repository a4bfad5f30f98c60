// CPU tests of the hopper_bwd family (generator/families/hopper_bwd.cpp, templates/hopper_bwd.cuh):
// what it serves, that it is searched (dqw 0 and 1) and the untuned default (dqw 1), its URI, its
// three-kernel launch packet with four tensor maps, its deterministic mode (det 1: accepted calls,
// counters, a layout of its own), the calls it refuses (strides TMA cannot describe), and its
// sources (det 0 and 1) compiling for sm_90a with NVRTC without spills or
// serialised wgmmas (no GPU needed).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "flashtune/arch.h"
#include "flashtune/backward_args.h"
#include "flashtune/compiler.h"
#include "flashtune/source.h"
#include "flashtune/space.h"
#include "generator/embedded_templates.h"
#include "generator/family.h"
#include "templates/ft_kernel_abi.cuh"

namespace flashtune {
namespace {

ProblemClass Bwd(DType dtype, int head_dim, bool causal) { return ProblemClass{dtype, head_dim, causal, Operation::kBackward}; }

const Family& Hopper() {
  const Family* f = FindFamily("hopper_bwd");
  EXPECT_NE(f, nullptr);
  return *f;
}

// The untuned default with the consumers adding dQ themselves (dqw 0; the default is dqw 1).
Variant V(DType dtype, int head_dim, bool causal) {
  Variant v = Hopper().Default(Bwd(dtype, head_dim, causal), Target{});
  v.SetParam("dqw", 0);
  return v;
}

// Device-looking pointers: only their values matter to the pack.
BackwardArgs Args(const Problem& shape) {
  BackwardArgs a = BackwardArgs::Contiguous(shape);
  auto at = [](uintptr_t x) { return reinterpret_cast<void*>(x); };
  a.forward.q = at(0x100000);
  a.forward.k = at(0x200000);
  a.forward.v = at(0x300000);
  a.forward.o = at(0x400000);
  a.forward.lse = static_cast<float*>(at(0x500000));
  a.d_o = at(0x600000);
  a.dq = at(0x700000);
  a.dk = at(0x800000);
  a.dv = at(0x900000);
  a.forward.workspace = at(0x1000000);
  a.forward.workspace_bytes = BackwardWorkspaceBytes(a.problem());
  return a;
}

TEST(HopperBwdFamily, ServesBackwardD64D96AndD128OnSm90aOnly) {
  const Family& f = Hopper();
  EXPECT_EQ(f.operation(), Operation::kBackward);
  for (int d : {64, 96, 128}) {
    EXPECT_TRUE(f.Serves(Bwd(DType::kBF16, d, false), Target{"sm_90a"})) << d;
    EXPECT_TRUE(f.Serves(Bwd(DType::kF16, d, true), Target{"sm_90a"})) << d;
    EXPECT_FALSE(f.Serves(Bwd(DType::kBF16, d, false), Target{"sm_90"})) << d;  // no wgmma without "a"
    EXPECT_FALSE(f.Serves(Bwd(DType::kBF16, d, false), Target{"sm_80"})) << d;
  }
  for (int d : {32, 160, 192, 256}) EXPECT_FALSE(f.Serves(Bwd(DType::kBF16, d, false), Target{"sm_90a"})) << d;
  EXPECT_FALSE(f.Serves(ProblemClass{DType::kBF16, 128, false}, Target{"sm_90a"}));  // the forward pass
  // Each refusal says why, for a plan that passes the family over.
  EXPECT_EQ(f.Unserved(Bwd(DType::kBF16, 192, false), Target{"sm_90a"}), "head dims 64, 96 and 128 only");
  EXPECT_EQ(f.Unserved(Bwd(DType::kBF16, 128, false), Target{"sm_90"}),
            "needs wgmma and setmaxnreg, which only sm_90a has; this target is sm_90");
  EXPECT_EQ(f.Unserved(ProblemClass{DType::kBF16, 128, false}, Target{"sm_90a"}), "computes the backward pass only");
  EXPECT_EQ(f.Unserved(Bwd(DType::kBF16, 128, false), Target{"sm_90a"}), "");
}

// Searched beside fa2_bwd and the untuned choice where it serves (1.40-1.45x fa2_bwd's default at
// d128, 1.05-1.09x at d64, session 16); fa2_bwd elsewhere.
TEST(HopperBwdFamily, IsSearchedAndTheUntunedDefaultWhereItServes) {
  const ProblemClass cls = Bwd(DType::kBF16, 128, true);
  EXPECT_EQ(Hopper().Space(cls, Target{}).size(), 2u);  // dqw 0 and 1
  auto space = EnumerateSpace(cls);
  ASSERT_TRUE(space.ok()) << space.status().ToString();
  int hopper = 0, fa2 = 0;
  for (const Variant& v : *space) (v.family == "hopper_bwd" ? hopper : fa2) += 1;
  EXPECT_EQ(hopper, 2);
  EXPECT_GT(fa2, 1);
  EXPECT_EQ(DefaultVariant(cls).family, "hopper_bwd");
  EXPECT_EQ(DefaultVariant(cls).Param("dqw"), 1);  // the writer warps add dQ
  EXPECT_EQ(DefaultVariant(Bwd(DType::kBF16, 96, true)).family, "hopper_bwd");  // on d128's tiles
  EXPECT_EQ(DefaultVariant(Bwd(DType::kBF16, 256, true)).family, "fa2_bwd");
  EXPECT_EQ(DefaultVariant(cls, MaxSharedMemoryForArch("sm_80"), "sm_80").family, "fa2_bwd");
  // Named by URI it is valid (what `flashtune bench --variant` and the GPU tests use).
  auto v = Variant::FromUri("hopper_bwd_bf16_d128_bn128_bm64_det0_dg0_dqw0_causal");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, V(DType::kBF16, 128, true));
  EXPECT_EQ(v->Uri(), "hopper_bwd_bf16_d128_bn128_bm64_det0_dg0_dqw0_causal");
  EXPECT_TRUE(CheckVariant(*v).ok()) << CheckVariant(*v).ToString();
  EXPECT_EQ(ThreadsPerBlock(*v), 384);
  // det 1 is a valid variant (what the runtime runs for a deterministic call), not searched.
  auto det = Variant::FromUri("hopper_bwd_bf16_d64_bn128_bm64_det1_dg0_dqw0_full");
  ASSERT_TRUE(det.ok()) << det.status().ToString();
  EXPECT_EQ(det->Param("det"), 1);
  EXPECT_EQ(det->Uri(), "hopper_bwd_bf16_d64_bn128_bm64_det1_dg0_dqw0_full");
  EXPECT_TRUE(CheckVariant(*det).ok()) << CheckVariant(*det).ToString();
  EXPECT_TRUE(FamilyAllows(*det, "det", 1));
  for (const Variant& u : *space) EXPECT_FALSE(u.family == "hopper_bwd" && u.Param("det") != 0) << u.Uri();
  // det 2 (descending turns) orders causal blocks only: valid causal, refused otherwise, naming it.
  auto det2 = Variant::FromUri("hopper_bwd_bf16_d64_bn128_bm64_det2_dg0_dqw0_causal");
  ASSERT_TRUE(det2.ok()) << det2.status().ToString();
  EXPECT_TRUE(CheckVariant(*det2).ok()) << CheckVariant(*det2).ToString();
  auto det2_full = Variant::FromUri("hopper_bwd_bf16_d64_bn128_bm64_det2_dg0_dqw0_full");
  ASSERT_FALSE(det2_full.ok());
  EXPECT_NE(det2_full.status().message().find("det 2 (descending turns) orders causal blocks"), std::string::npos)
      << det2_full.status().ToString();
  // Dispatch groups order deterministic turns: valid with det 1 or 2, refused with det 0, naming it.
  auto grouped = Variant::FromUri("hopper_bwd_bf16_d64_bn128_bm64_det1_dg8_dqw0_full");
  ASSERT_TRUE(grouped.ok()) << grouped.status().ToString();
  EXPECT_EQ(grouped->Param("dg"), 8);
  const std::string described = Hopper().Describe(*grouped);
  EXPECT_NE(described.find("8 key blocks a head at a time"), std::string::npos) << described;
  auto grouped_det0 = Variant::FromUri("hopper_bwd_bf16_d64_bn128_bm64_det0_dg8_dqw1_full");
  ASSERT_FALSE(grouped_det0.ok());
  EXPECT_NE(grouped_det0.status().message().find("dg (8) orders deterministic turns"), std::string::npos)
      << grouped_det0.status().ToString();
  EXPECT_FALSE(Variant::FromUri("hopper_bwd_bf16_d64_bn128_bm64_det1_dg3_dqw0_full").ok());  // not an allowed value
  for (const Variant& u : *space) EXPECT_FALSE(u.family == "hopper_bwd" && u.Param("dg") != 0) << u.Uri();
  // dqw 1 (det 0 through the writer warps) is searched next to dqw 0.
  auto writer = Variant::FromUri("hopper_bwd_bf16_d128_bn128_bm64_det0_dg0_dqw1_full");
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  EXPECT_TRUE(CheckVariant(*writer).ok()) << CheckVariant(*writer).ToString();
  int writers = 0, hoppers = 0;
  for (const Variant& u : *space) {
    hoppers += u.family == "hopper_bwd";
    writers += u.family == "hopper_bwd" && u.Param("dqw") == 1;
  }
  EXPECT_EQ(hoppers, 2);
  EXPECT_EQ(writers, 1);
}

TEST(HopperBwdFamily, SharedMemoryFollowsTheTemplatesLayout) {
  // 1 KB slack + K, V + 2 Q + 2 d_o stages + dSᵀ (16 KB) + the dQ tile ([64][D] fp32, rows
  // padded by 8 floats) + lse / delta + barriers.
  EXPECT_EQ(SharedMemoryBytes(V(DType::kBF16, 128, false)), 1024 + 65536 + 65536 + 16384 + 64 * 136 * 4 + 1024 + 40);
  EXPECT_EQ(SharedMemoryBytes(V(DType::kF16, 64, true)), 1024 + 32768 + 32768 + 16384 + 64 * 72 * 4 + 1024 + 40);
  // det 1: two buffers of the dQ tile, one per writer warp, unpadded (swizzled).
  Variant det = V(DType::kBF16, 128, false);
  det.SetParam("det", 1);
  EXPECT_EQ(SharedMemoryBytes(det), 1024 + 65536 + 65536 + 16384 + 2 * 64 * 128 * 4 + 1024 + 40);
  EXPECT_TRUE(Hopper().CheckRules(det, MaxSharedMemoryForArch("sm_90a")).ok());
  det = V(DType::kF16, 64, true);
  det.SetParam("det", 1);
  EXPECT_EQ(SharedMemoryBytes(det), 1024 + 32768 + 32768 + 16384 + 2 * 64 * 64 * 4 + 1024 + 40);
  // d96 on d128's tiles: K, V, Q and d_o at 128 columns, the dQ tile at the data's 96 (+ 8).
  EXPECT_EQ(SharedMemoryBytes(V(DType::kBF16, 96, false)), 1024 + 65536 + 65536 + 16384 + 64 * 104 * 4 + 1024 + 40);
  det = V(DType::kBF16, 96, true);
  det.SetParam("det", 1);
  EXPECT_EQ(SharedMemoryBytes(det), 1024 + 65536 + 65536 + 16384 + 2 * 64 * 96 * 4 + 1024 + 40);
  // dqw 1: det 0 through the writer, two buffers of padded rows.
  Variant writer = V(DType::kF16, 64, true);
  writer.SetParam("dqw", 1);
  EXPECT_EQ(SharedMemoryBytes(writer), 1024 + 32768 + 32768 + 16384 + 2 * 64 * 72 * 4 + 1024 + 40);
  Variant bad = V(DType::kBF16, 128, false);
  Status s = Hopper().CheckRules(bad, 100000);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("exceeds max_smem_bytes (100000)"), std::string::npos) << s.message();
}

TEST(HopperBwdFamily, PacksThreeKernelsAndFourTensorMaps) {
  const Problem shape{DType::kBF16, 128, true, 2, 1000, 1500, 8, 2, Operation::kBackward};
  const Variant v = V(DType::kBF16, 128, true);
  const BackwardArgs a = Args(shape);
  LaunchPacket packet;
  Status s = PackBackward(v, a, &packet);
  ASSERT_TRUE(s.ok()) << s.ToString();
  // Preprocess: 16 query rows per block of 128 threads; main: one block per 128-key block and
  // K/V head; convert as the preprocess.
  EXPECT_EQ(packet.grid[0], 63u);
  EXPECT_EQ(packet.grid[1], 8u);
  EXPECT_EQ(packet.grid[2], 2u);
  EXPECT_EQ(packet.block[0], 128u);
  ASSERT_EQ(packet.next_steps, 2);
  EXPECT_EQ(packet.next[0].kernel, 0);
  EXPECT_EQ(packet.next[0].grid[0], 12u);
  EXPECT_EQ(packet.next[0].grid[1], 2u);
  EXPECT_EQ(packet.next[0].grid[2], 2u);
  EXPECT_EQ(packet.next[0].block[0], 384u);
  EXPECT_EQ(packet.next[0].smem_bytes, uint32_t(SharedMemoryBytes(v)));
  EXPECT_EQ(packet.next[1].kernel, 1);
  EXPECT_EQ(packet.next[1].grid[0], 63u);
  EXPECT_EQ(packet.arg_bytes, sizeof(ft_abi::HopperBwdParams));
  ASSERT_EQ(packet.tensor_maps, 4);
  const void* bases[] = {a.forward.q, a.forward.k, a.forward.v, a.d_o};
  const uint32_t offsets[] = {0, 128, 256, 384};
  const uint32_t rows[] = {64, 128, 128, 64};
  const uint64_t seqlen[] = {1000, 1500, 1500, 1000}, heads[] = {8, 2, 2, 8};
  for (int i = 0; i < 4; ++i) {
    const TensorMapRequest& m = packet.maps[i];
    EXPECT_EQ(m.base, bases[i]) << i;
    EXPECT_EQ(m.offset, offsets[i]) << i;
    EXPECT_EQ(m.box[2], rows[i]) << i;
    EXPECT_EQ(m.box[0], 64u) << i;
    EXPECT_EQ(m.dims[0], 128u) << i;
    EXPECT_EQ(m.dims[1], heads[i]) << i;
    EXPECT_EQ(m.dims[2], seqlen[i]) << i;
    EXPECT_EQ(m.dims[3], 2u) << i;
    EXPECT_EQ(m.strides_bytes[1], heads[i] * 128 * 2) << i;  // seq stride of a dense tensor
    EXPECT_EQ(m.swizzle, TensorMapRequest::Swizzle::k128B) << i;
  }
  ft_abi::HopperBwdParams p;
  std::memcpy(&p, packet.args, sizeof p);
  EXPECT_EQ(p.base.d_o, a.d_o);
  EXPECT_EQ(p.base.dq_accum, static_cast<float*>(a.forward.workspace));
  EXPECT_EQ(p.base.seqlen_q, 1000);
  EXPECT_EQ(p.base.seqlen_k, 1500);
  EXPECT_EQ(p.base.heads_q, 8);
  EXPECT_EQ(p.base.heads_kv, 2);
  EXPECT_FLOAT_EQ(p.base.scale, 1.f / std::sqrt(128.f));
  EXPECT_FLOAT_EQ(p.base.scale_log2, 1.4426950408889634f / std::sqrt(128.f));
}

// d96 runs on d128's tiles: the maps describe the tensors' 96 columns (TMA reads the box's last 32
// of chunk 1 as zeros), and the template is told both widths.
TEST(HopperBwdFamily, D96RunsOnD128TilesWithMapsOfTheDatasWidth) {
  const Problem shape{DType::kF16, 96, false, 1, 300, 300, 4, 1, Operation::kBackward};
  const Variant v = V(DType::kF16, 96, false);
  EXPECT_TRUE(CheckVariant(v).ok()) << CheckVariant(v).ToString();
  const BackwardArgs a = Args(shape);
  LaunchPacket packet;
  Status s = PackBackward(v, a, &packet);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(packet.tensor_maps, 4);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(packet.maps[i].dims[0], 96u) << i;
    EXPECT_EQ(packet.maps[i].box[0], 64u) << i;
    EXPECT_TRUE(packet.maps[i].oob_zero) << i;
  }
  EXPECT_EQ(packet.maps[0].strides_bytes[1], 4u * 96 * 2);  // q's seq stride: 4 heads of 96
  const std::string prologue = Hopper().Prologue(v);
  EXPECT_NE(prologue.find("kHeadDim = 128;"), std::string::npos) << prologue;
  EXPECT_NE(prologue.find("kHeadDimData = 96;"), std::string::npos) << prologue;
  EXPECT_EQ(Hopper().Describe(v), "128x64 wgmma on d128's tiles");
  // Other head dims have no tiles.
  auto d160 = Variant::FromUri("hopper_bwd_bf16_d160_bn128_bm64_det0_dg0_dqw1_full");
  ASSERT_FALSE(d160.ok());
  EXPECT_NE(d160.status().message().find("hopper_bwd: head_dim (160) must be 64, 96 or 128"), std::string::npos)
      << d160.status().ToString();
}

TEST(HopperBwdFamily, AcceptsDeterministicCallsRefusesStridesTmaCannotDescribe) {
  const Problem shape{DType::kF16, 64, false, 2, 100, 100, 2, 2, Operation::kBackward};
  const Variant v = V(DType::kF16, 64, false);
  LaunchPacket packet;
  BackwardArgs a = Args(shape);
  a.deterministic = true;
  Variant det = v;
  det.SetParam("det", 1);
  Status s = PackBackward(det, a, &packet);
  ASSERT_TRUE(s.ok()) << s.ToString();
  // The ordering counters: one per 16 query rows of each (batch, query head), past dq_accum
  // and delta in the workspace, and the main kernel's shared memory is det 1's.
  ft_abi::HopperBwdParams p;
  std::memcpy(&p, packet.args, sizeof p);
  EXPECT_EQ(p.base.counters_per_head, 7);
  auto* ws = static_cast<unsigned char*>(a.forward.workspace);
  EXPECT_GT(reinterpret_cast<unsigned char*>(p.base.counters), reinterpret_cast<unsigned char*>(p.base.delta));
  EXPECT_LE(reinterpret_cast<unsigned char*>(p.base.counters) + 2 * 2 * 7 * 4, ws + a.forward.workspace_bytes);
  EXPECT_EQ(packet.next[0].smem_bytes, uint32_t(SharedMemoryBytes(det)));
  EXPECT_GT(SharedMemoryBytes(det), SharedMemoryBytes(v));
  // A batch stride of 0 (every batch reads the same d_o) is legal for the call, not for TMA.
  a = Args(shape);
  a.d_o_strides.batch = 0;
  ASSERT_TRUE(ValidateBackwardArgs(a).ok()) << ValidateBackwardArgs(a).ToString();
  s = PackBackward(v, a, &packet);
  EXPECT_EQ(s.code(), Code::kUnsupported);
  EXPECT_NE(s.message().find("hopper_bwd: TMA cannot describe d_o_strides.batch (0 elements)"), std::string::npos)
      << s.message();
  // fa2_bwd serves it.
  a.deterministic = true;
  Variant fa2 = DefaultVariant(ClassOf(v), MaxSharedMemoryForArch("sm_80"), "sm_80");
  ASSERT_EQ(fa2.family, "fa2_bwd");
  fa2.SetParam("det", 1);
  s = PackBackward(fa2, a, &packet);
  EXPECT_TRUE(s.ok()) << s.ToString();
}

// One variant per head dim (and both dtypes, causal and not between them), and det 1 at both
// head dims (its dQ writer on the producer's 24 registers), compiles for sm_90a:
// no ptxas error, no spill, setmaxnreg honoured (C7508), no serialised wgmma (C7515, C7520), at
// the launch bound's 168 registers (65536 / 384 threads, rounded down to 8).
TEST(HopperBwdFamily, CompilesForSm90aWithoutSpills) {
  Compiler compiler(Compiler::Options{"-", 1});
  // (d64 causal: where the writer's first version spilled 4 bytes.)
  // (The swizzled dQ tile's offsets, hoisted, spilled 12 bytes in d128's det 1 / dqw 1.)
  Variant det128 = V(DType::kBF16, 128, true), det64 = V(DType::kBF16, 64, true);
  Variant writer128 = V(DType::kBF16, 128, false), writer64 = V(DType::kBF16, 64, true);
  Variant descending64 = V(DType::kF16, 64, true);
  det128.SetParam("det", 1);
  det64.SetParam("det", 1);
  writer128.SetParam("dqw", 1);
  writer64.SetParam("dqw", 1);
  descending64.SetParam("det", 2);  // the turn's key block computed on the writer's 24 registers
  Variant grouped128 = det128;  // the dispatch group's remapping of the block index
  grouped128.SetParam("dg", 8);
  // d96 on d128's tiles: P V and dS Q at N = 96, the dQ stores of consumer 1 cut at column 96.
  // Its deterministic writer's row products by 96 spilled 8 bytes on 24 registers (det 1 causal,
  // det 1 with dispatch groups): d96's producer has 40.
  Variant writer96 = V(DType::kBF16, 96, false), det96 = V(DType::kF16, 96, true), descending96 = det96;
  writer96.SetParam("dqw", 1);
  det96.SetParam("det", 1);
  descending96.SetParam("det", 2);
  Variant grouped96 = V(DType::kBF16, 96, false);
  grouped96.SetParam("det", 1);
  grouped96.SetParam("dg", 8);
  for (const Variant& v : {V(DType::kBF16, 128, false), V(DType::kF16, 64, true), det128, det64, writer128, writer64,
                           descending64, grouped128, V(DType::kBF16, 96, true), writer96, det96, descending96,
                           grouped96}) {
    SCOPED_TRACE(v.Uri());
    auto source = GenerateSource(v);
    ASSERT_TRUE(source.ok()) << source.status().ToString();
    auto cubin = compiler.Compile(GeneratedSourceRequest(v.Uri(), source->text, "sm_90a"));
    ASSERT_TRUE(cubin.ok()) << cubin.status().ToString();
    EXPECT_EQ(cubin->resources.registers, 168) << cubin->log;
    EXPECT_EQ(cubin->resources.spill_store_bytes, 0) << cubin->log;
    EXPECT_EQ(cubin->log.find("C7508"), std::string::npos) << cubin->log;
    EXPECT_EQ(cubin->log.find("C7515"), std::string::npos) << cubin->log;
    EXPECT_EQ(cubin->log.find("C7520"), std::string::npos) << cubin->log;
  }
}

TEST(HopperBwdFamily, TemplateRejectsAWrongSharedMemorySize) {
  const Variant v = V(DType::kBF16, 128, false);
  std::string prologue = Hopper().Prologue(v);
  const std::string smem = "kSmemBytes = " + std::to_string(SharedMemoryBytes(v));
  ASSERT_NE(prologue.find(smem), std::string::npos) << prologue;
  prologue.replace(prologue.find(smem), smem.size(), "kSmemBytes = 4096");
  Compiler compiler(Compiler::Options{"-", 1});
  auto r = compiler.Compile({"bad", prologue + *ExpandedTemplate("hopper_bwd.cuh"), "sm_90a", {}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().log().find("kSmemBytes disagrees with the template's shared-memory layout"), std::string::npos)
      << r.status().log();
}

}  // namespace
}  // namespace flashtune
