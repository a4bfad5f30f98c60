// The runtime's launch path without a GPU, on the recording fake (tests/fixtures/fake_gpu.h: one
// H200-like sm_90 device that runs nothing and records what it is asked to run). What forward()
// launches for each kind of call (prefill on hopper_fwd with its tensor maps, prefill over pages
// on hopper_paged with maps of the page pools, decode's split
// kernel of the call's K/V layout and its combine as programmatic dependents, the fa2_fwd
// fallback), that a refused call launches and loads nothing, that a warm call allocates nothing,
// and that a call captured into a CUDA graph needs no capture-unsafe driver call. The binary
// opens the fake for every Driver::Load() (tests/fixtures/fake_gpu_install.cpp); kernels compile
// with NVRTC as on a GPU machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "flashtune/backward_args.h"
#include "flashtune/compiler.h"
#include "flashtune/driver.h"
#include "flashtune/source.h"
#include "flashtune/runtime.h"
#include "generator/families/decode_fwd.h"
#include "generator/family.h"
#include "generator/hopper_fwd_pack.h"
#include "jit/cuda_api.h"
#include "tests/support/allocation_counter.h"
#include "tests/support/fake_gpu_record.h"
#include "tests/support/graph_capture.h"

namespace flashtune {
namespace {

using flashtune::testing::HostBuffers;
using flashtune::testing::PackQueries;
using flashtune::testing::CaptureForward;
using flashtune::testing::PackSequences;

using flashtune::testing::FakeCallArgs;
using detail::HopperParams;

class FakeGpuLaunch : public flashtune::testing::FakeGpuTest {};

// What the library's own packing says the launch of `v` for `a` is, on the fake's device.
LaunchPacket Packed(const Variant& v, const ForwardArgs& a) {
  LaunchPacket packet;
  packet.sm_count = 132;
  packet.cc_major = 9;
  Status s = PackForward(v, a, &packet);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return packet;
}

TEST_F(FakeGpuLaunch, TheFakeIsTheDriver) {
  auto driver = Driver::Load();
  ASSERT_TRUE(driver.ok()) << driver.status().ToString();
  auto info = (*driver)->Device(0);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->name, "NVIDIA H200");
  EXPECT_EQ(info->Arch(), "sm_90a");
  EXPECT_EQ(info->sm_count, 132);
  // A cubin of another arch does not load (what makes EachDeviceRunsKernelsOfItsOwnArch bite).
  auto ctx = Context::Primary(**driver, 1);
  ASSERT_TRUE(ctx.ok());
  auto source = GenerateSource(*Variant::FromUri("hopper_fwd_bf16_d128_bm128_bn128_wg2_s2_p0_pp1_ov1_full"));
  ASSERT_TRUE(source.ok());
  Compiler compiler(Compiler::Options{});
  auto cubin = compiler.Compile(GeneratedSourceRequest(source->uri, source->text, "sm_90a"));
  ASSERT_TRUE(cubin.ok()) << cubin.status().ToString();
  auto module = Module::Load(*ctx, *cubin);
  ASSERT_FALSE(module.ok());
  EXPECT_NE(module.status().message().find("CUDA_ERROR_NO_BINARY_FOR_GPU"), std::string::npos)
      << module.status().ToString();
}

// A prefill call on sm_90a: one launch of the planned hopper_fwd kernel, as the family packs
// it, through tensor maps of the call's own tensors (head dim innermost, rows H * D apart).
TEST_F(FakeGpuLaunch, PrefillLaunchesThePlannedKernelThroughMapsOfTheCallsTensors) {
  const Problem p{DType::kBF16, 128, false, 2, 1000, 1000, 8, 2};
  auto plan = r.rt->plan(p);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->variant.family, "hopper_fwd") << plan->why;
  HostBuffers b;
  ForwardArgs a = FakeCallArgs(p, b, 0);
  fake.Reset();
  Status s = r.rt->forward(a, nullptr);
  ASSERT_TRUE(s.ok()) << s.ToString();
  const auto launches = fake.Launches();
  ASSERT_EQ(launches.size(), 1u);
  const LaunchPacket want = Packed(plan->variant, a);
  EXPECT_EQ(std::string(launches[0].kernel), plan->variant.Uri());
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(launches[0].grid[i], want.grid[i]) << i;
    EXPECT_EQ(launches[0].block[i], want.block[i]) << i;
  }
  EXPECT_EQ(launches[0].smem_bytes, want.smem_bytes);
  EXPECT_EQ(fake.ModuleLoads(), 1);
  // q, k and v each described by a map at their own address, in the launched parameters
  // (encoded now, or by an earlier call with the same request: the cache of encoded maps is the
  // process's).
  const auto maps = fake.MapsLaunched(0);
  EXPECT_GE(maps.size(), 3u);
  for (const void* t : {a.q, a.k, a.v}) {
    const int64_t heads = t == a.q ? p.heads_q : p.heads_kv;
    bool found = false;
    for (const FtFakeTensorMap& m : maps) {
      if (m.address != reinterpret_cast<uintptr_t>(t)) continue;
      found = true;
      EXPECT_EQ(m.dims[0], 128u) << "head dim innermost";
      EXPECT_EQ(m.box[0] * 2, 128u) << "one 128-byte swizzle span";
      bool row_stride = false;
      for (unsigned i = 0; i + 1 < m.rank; ++i) row_stride |= m.strides[i] == uint64_t(heads * 128 * 2);
      EXPECT_TRUE(row_stride) << "rows H * D elements apart";
    }
    EXPECT_TRUE(found) << (t == a.q ? "q" : t == a.k ? "k" : "v");
  }
  // Warm: the same launch with the same maps, no module load, no encoding (the cache).
  fake.Reset();
  ASSERT_TRUE(r.rt->forward(a, nullptr).ok());
  ASSERT_EQ(fake.Launches().size(), 1u);
  EXPECT_EQ(fake.ModuleLoads(), 0);
  EXPECT_TRUE(fake.TensorMaps().empty()) << "the cache of encoded maps serves the same pointers";
  const auto again = fake.MapsLaunched(0);
  ASSERT_EQ(again.size(), maps.size());
  for (size_t i = 0; i < maps.size(); ++i) EXPECT_EQ(std::memcmp(&again[i], &maps[i], sizeof maps[i]), 0) << i;
}

// Two devices of different architectures in one process (the fake's H200 and A100): a call
// runs on the device of the current context, with kernels planned for and compiled to that
// device's arch (the fake refuses an sm_90a cubin on the A100), each context with its own loads.
TEST_F(FakeGpuLaunch, EachDeviceRunsKernelsOfItsOwnArch) {
  auto driver = Driver::Load();
  ASSERT_TRUE(driver.ok());
  ASSERT_EQ((*driver)->device_count(), 2);
  auto a100 = (*driver)->Device(1);
  ASSERT_TRUE(a100.ok());
  ASSERT_EQ(a100->Arch(), "sm_80");
  const Problem p{DType::kBF16, 128, false, 2, 1000, 1000, 8, 2};
  HostBuffers b;
  const ForwardArgs a = FakeCallArgs(p, b, 0);
  std::string kernels[3];
  int devices[3];
  for (int call = 0; call < 3; ++call) {  // device 0, device 1, device 0 again
    const int ordinal = call == 1 ? 1 : 0;
    auto ctx = Context::Primary(**driver, ordinal);  // made current
    ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
    fake.Reset();
    Status s = r.rt->forward(a, nullptr);
    ASSERT_TRUE(s.ok()) << "device " << ordinal << ": " << s.ToString();
    const auto launches = fake.Launches();
    ASSERT_EQ(launches.size(), 1u);
    kernels[call] = launches[0].kernel;
    devices[call] = launches[0].device;
    EXPECT_EQ(fake.ModuleLoads(), call == 2 ? 0 : 1) << "call " << call << ": one load per context";
  }
  EXPECT_EQ(devices[0], 0);
  EXPECT_EQ(devices[1], 1);
  EXPECT_EQ(devices[2], 0);
  EXPECT_EQ(kernels[0].rfind("hopper_fwd_bf16_d128_", 0), 0u) << kernels[0];
  EXPECT_EQ(kernels[1].rfind("fa2_fwd_bf16_d128_", 0), 0u) << kernels[1] << ": sm_80 has no wgmma";
  EXPECT_EQ(kernels[2], kernels[0]);
}

// Decode: the split kernel compiled for the call's K/V layout, then its combine; both
// programmatic dependents on sm_90 (each waits for the kernel before it on the stream).
TEST_F(FakeGpuLaunch, DecodeLaunchesTheKernelOfItsLayoutThenTheCombine) {
  for (Layout layout : {Layout::kDense, Layout::kPaged}) {
    Problem p{DType::kBF16, 128, false, 2, 1, 8192, 32, 8};
    p.layout = layout;
    auto plan = r.rt->plan(p);
    ASSERT_TRUE(plan.ok());
    ASSERT_EQ(plan->variant.family, "decode_fwd") << plan->why;
    HostBuffers b;
    ForwardArgs a = r.ArgsFor(p, b);
    ASSERT_GT(a.workspace_bytes, 0);
    fake.Reset();
    Status s = r.rt->forward(a, nullptr);
    ASSERT_TRUE(s.ok()) << s.ToString();
    const auto launches = fake.Launches();
    ASSERT_EQ(launches.size(), 2u) << p.ToString();
    const std::string uri = plan->variant.Uri();
    EXPECT_EQ(std::string(launches[0].kernel), uri);
    EXPECT_NE(uri.find(layout == Layout::kPaged ? "_kv1_" : "_kv0_"), std::string::npos) << uri;
    EXPECT_EQ(std::string(launches[1].kernel), uri + "_combine");
    EXPECT_EQ(launches[0].programmatic, 1);
    EXPECT_EQ(launches[1].programmatic, 1);
    const LaunchPacket want = Packed(plan->variant, a);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(launches[0].grid[i], want.grid[i]) << i;
    EXPECT_EQ(launches[0].grid[0], unsigned(p.batch * p.heads_kv)) << "a block row per (sequence, K/V head)";
    EXPECT_GT(launches[0].grid[1], 1u) << "8192 keys at B2 are split";
    EXPECT_EQ(launches[1].grid[0], unsigned(p.batch * p.heads_q * p.seqlen_q)) << "a combine block per output row";
    // The parameter block both kernels read: the call's tensors, pages and workspace.
    for (int i = 0; i < 2; ++i) {
      detail::DecodeParams k;
      ASSERT_EQ(launches[i].param_bytes, int(sizeof k)) << i;
      ASSERT_EQ(fake.Params(i, &k, sizeof k), int(sizeof k)) << i;
      EXPECT_EQ(k.q, a.q);
      EXPECT_EQ(k.k, a.k);
      EXPECT_EQ(k.v, a.v);
      EXPECT_EQ(k.o, a.o);
      EXPECT_EQ(k.splits, int(launches[0].grid[1]));
      EXPECT_EQ(k.heads_q, 32);
      EXPECT_EQ(k.heads_kv, 8);
      EXPECT_EQ(k.seqlen_k, 8192);
      EXPECT_GE(reinterpret_cast<const char*>(k.ws_o), static_cast<const char*>(a.workspace));
      EXPECT_LE(reinterpret_cast<const char*>(k.ws_lse + int64_t(k.splits) * p.batch * p.heads_q),
                static_cast<const char*>(a.workspace) + a.workspace_bytes) << "the partials fit the workspace";
      if (layout == Layout::kPaged) {
        EXPECT_EQ(k.block_table, a.paged.block_table);
        EXPECT_EQ(k.seqlens_k, a.seqlens_k);
        EXPECT_EQ(k.block_shift, 4) << "16-key pages";
        EXPECT_EQ(k.num_blocks, int(a.paged.num_blocks));
      } else {
        EXPECT_EQ(k.block_table, nullptr);
      }
    }
  }
}

// Packed prefill (layout varlen): the planned p2 tile runs as its p3 twin, which claims its
// tiles from a counter in the call's workspace; the launch zeroes the counter first and hands
// it to the kernel. Without enough workspace for it the call still runs, on the static deal.
TEST_F(FakeGpuLaunch, PackedPrefillClaimsItsTilesFromTheZeroedWorkspaceCounter) {
  Problem p{DType::kBF16, 128, true, 3, 2000, 2000, 32, 8};
  p.layout = Layout::kVarlen;
  auto plan = r.rt->plan(p);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->variant.family, "hopper_fwd") << plan->why;
  EXPECT_EQ(plan->variant.Param("p"), 3) << plan->variant.Uri();
  EXPECT_NE(plan->why.find("claims its tiles at run time"), std::string::npos) << plan->why;
  HostBuffers b;
  ForwardArgs a = r.ArgsFor(p, b);
  ASSERT_GE(a.workspace_bytes, 16);
  PackSequences(a, b, {0, 2000, 2017, 4017});  // 34 x 32 tiles at most: enough to claim
  std::memset(a.workspace, 0xAB, size_t(a.workspace_bytes));
  fake.Reset();
  Status s = r.rt->forward(a, nullptr);
  ASSERT_TRUE(s.ok()) << s.ToString();
  const auto launches = fake.Launches();
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(std::string(launches[0].kernel), plan->variant.Uri());
  HopperParams k;
  ASSERT_EQ(fake.Params(0, &k, sizeof k), int(sizeof k));
  EXPECT_EQ(static_cast<void*>(k.tile_counter), a.workspace);
  EXPECT_EQ(*static_cast<const uint32_t*>(a.workspace), 0u) << "the counter is zeroed before the launch";
  EXPECT_EQ(static_cast<const unsigned char*>(a.workspace)[4], 0xAB) << "only the counter";
  // A workspace short of the counter: the same kernel, no counter, the workspace left alone.
  a.workspace_bytes = 8;
  std::memset(a.workspace, 0xAB, 8);
  fake.Reset();
  s = r.rt->forward(a, nullptr);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(fake.Launches().size(), 1u);
  EXPECT_EQ(std::string(fake.Launches()[0].kernel), plan->variant.Uri());
  ASSERT_EQ(fake.Params(0, &k, sizeof k), int(sizeof k));
  EXPECT_EQ(k.tile_counter, nullptr);
  EXPECT_EQ(static_cast<const unsigned char*>(a.workspace)[0], 0xAB);
  // A dense call of the same shape keeps the p2 tile and its static deal: no counter.
  Problem dense = p;
  dense.layout = Layout::kDense;
  auto dense_plan = r.rt->plan(dense);
  ASSERT_TRUE(dense_plan.ok());
  EXPECT_EQ(dense_plan->variant.Param("p"), 2) << dense_plan->variant.Uri();
}

// A paged call whose queries are packed (vLLM's varlen q over its cache): the paged decode
// kernel, given the query offsets; q, o and lse as packed rows.
TEST_F(FakeGpuLaunch, PagedCallWithPackedQueriesPassesTheQueryOffsets) {
  Problem p{DType::kBF16, 128, true, 3, 4, 4096, 32, 8};  // up to 4 new tokens a sequence
  p.layout = Layout::kPaged;
  HostBuffers b;
  ForwardArgs a = r.ArgsFor(p, b);
  const int32_t* offsets = PackQueries(a, b, {0, 1, 5, 7});  // 1, 4 and 2 new tokens
  fake.Reset();
  Status s = r.rt->forward(a, nullptr);
  ASSERT_TRUE(s.ok()) << s.ToString();
  const auto launches = fake.Launches();
  ASSERT_FALSE(launches.empty());
  EXPECT_NE(std::string(launches[0].kernel).find("_kv1_"), std::string::npos) << launches[0].kernel;
  detail::DecodeParams k;
  ASSERT_EQ(fake.Params(0, &k, sizeof k), int(sizeof k));
  EXPECT_EQ(k.cu_seqlens_q, offsets);
  EXPECT_EQ(k.total_q, 7);
  EXPECT_EQ(k.cu_seqlens_k, nullptr) << "the keys stay the pages'";
  EXPECT_EQ(k.block_table, a.paged.block_table);
  EXPECT_EQ(k.q_stride[0], 0);
  EXPECT_EQ(k.seqlen_q, 4) << "the longest sequence's queries";
  // Without the offsets the same call is the dense-q paged call it always was.
  a.varlen.cu_seqlens_q = nullptr;
  a.varlen.total_q = 0;
  a.q_strides = a.o_strides = Strides::Contiguous(4, 32, 128);
  fake.Reset();
  ASSERT_TRUE(r.rt->forward(a, nullptr).ok());
  ASSERT_EQ(fake.Params(0, &k, sizeof k), int(sizeof k));
  EXPECT_EQ(k.cu_seqlens_q, nullptr);
}

// vLLM's mixed batch over pages (packed queries, decode sequences first, varlen.decode_seqs):
// the decode sequences on decode_fwd's paged kernel (and its combine), then the rest on
// hopper_paged from table row, length and query offset decode_seqs on; without decode_seqs one
// hopper_paged launch serves every sequence.
TEST_F(FakeGpuLaunch, AMixedBatchOverPagesRunsItsDecodeSequencesOnTheDecodeKernel) {
  Problem p{DType::kBF16, 128, true, 4, 300, 4096, 32, 8};
  p.layout = Layout::kPaged;
  HostBuffers b;
  ForwardArgs a = r.ArgsFor(p, b);
  const int32_t* offsets = PackQueries(a, b, {0, 1, 2, 3, 303});  // three decode tokens, a 300-token chunk
  fake.Reset();
  ASSERT_TRUE(r.rt->forward(a, nullptr).ok());
  auto launches = fake.Launches();
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(std::string(launches[0].kernel).rfind("hopper_paged_", 0), 0u) << launches[0].kernel;
  a.varlen.decode_seqs = 3;
  a.varlen.decode_max_seqlen_q = 1;
  fake.Reset();
  Status s = r.rt->forward(a, nullptr);
  ASSERT_TRUE(s.ok()) << s.ToString();
  launches = fake.Launches();
  ASSERT_GE(launches.size(), 2u);
  EXPECT_EQ(std::string(launches[0].kernel).rfind("decode_fwd_", 0), 0u) << launches[0].kernel;
  EXPECT_NE(std::string(launches[0].kernel).find("_kv1_"), std::string::npos) << launches[0].kernel;
  detail::DecodeParams d;
  ASSERT_EQ(fake.Params(0, &d, sizeof d), int(sizeof d));
  EXPECT_EQ(d.batch, 3);
  EXPECT_EQ(d.seqlen_q, 1);
  EXPECT_EQ(d.block_table, a.paged.block_table);
  EXPECT_EQ(d.seqlens_k, a.seqlens_k);
  EXPECT_EQ(d.cu_seqlens_q, offsets);
  const size_t last = launches.size() - 1;
  EXPECT_EQ(std::string(launches[last].kernel).rfind("hopper_paged_", 0), 0u) << launches[last].kernel;
  ft_abi::HopperParams h;
  ASSERT_EQ(fake.Params(int(last), &h, sizeof h), int(sizeof h));
  EXPECT_EQ(h.batch, 1);
  EXPECT_EQ(h.block_table, a.paged.block_table + 3 * a.paged.block_table_stride);
  EXPECT_EQ(h.seqlens_k, a.seqlens_k + 3);
  EXPECT_EQ(h.cu_seqlens_q, offsets + 3);
  EXPECT_EQ(h.total_q, 303);
}

// Prefill over a paged cache on sm_90a: one launch of hopper_paged, whose K and V maps describe
// the page pools (head dim innermost, a page's rows Hkv * D apart, pages block_size rows apart)
// in boxes within one page, with the table and the lengths in its parameters. Pages of 8 keys,
// which its boxes do not read, launch fa2_paged instead.
TEST_F(FakeGpuLaunch, PagedPrefillLaunchesHopperPagedThroughMapsOfThePagePools) {
  Problem p{DType::kBF16, 128, true, 3, 300, 4096, 32, 8};
  p.layout = Layout::kPaged;
  HostBuffers b;
  ForwardArgs a = r.ArgsFor(p, b);
  fake.Reset();
  Status s = r.rt->forward(a, nullptr);
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto launches = fake.Launches();
  ASSERT_EQ(launches.size(), 1u);
  auto plan = r.rt->plan(a);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->variant.family, "hopper_paged") << plan->why;
  EXPECT_EQ(std::string(launches[0].kernel), plan->variant.Uri());
  const LaunchPacket want = Packed(plan->variant, a);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(launches[0].grid[i], want.grid[i]) << i;
  const auto maps = fake.MapsLaunched(0);
  for (const void* t : {a.k, a.v}) {
    bool found = false;
    for (const FtFakeTensorMap& m : maps) {
      if (m.address != reinterpret_cast<uintptr_t>(t)) continue;
      found = true;
      ASSERT_EQ(m.rank, 4u);
      EXPECT_EQ(m.dims[0], 128u);
      EXPECT_EQ(m.dims[1], 8u);
      EXPECT_EQ(m.dims[2], 16u) << "a page's rows";
      EXPECT_EQ(m.dims[3], uint64_t(a.paged.num_blocks)) << "the pool's pages";
      EXPECT_EQ(m.strides[1], uint64_t(8 * 128 * 2)) << "rows Hkv * D apart";
      EXPECT_EQ(m.strides[2], uint64_t(16 * 8 * 128 * 2)) << "pages 16 rows apart";
      EXPECT_EQ(m.box[2], 16u) << "a box within one 16-key page";
    }
    EXPECT_TRUE(found) << (t == a.k ? "k" : "v");
  }
  ft_abi::HopperParams k;
  ASSERT_EQ(fake.Params(0, &k, sizeof k), int(sizeof k));
  EXPECT_EQ(k.block_table, a.paged.block_table);
  EXPECT_EQ(k.seqlens_k, a.seqlens_k);
  EXPECT_EQ(k.block_shift, 4);
  EXPECT_EQ(k.box_shift, 4);
  // Pages of 8 keys: fa2_paged.
  HostBuffers small_buffers;
  ForwardArgs small = FakeCallArgs(p, small_buffers, a.workspace_bytes, 8);
  fake.Reset();
  ASSERT_TRUE(r.rt->forward(small, nullptr).ok());
  launches = fake.Launches();
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(std::string(launches[0].kernel).rfind("fa2_paged_", 0), 0u) << launches[0].kernel;
}

// Prefill over pages of a short K/V stream: the untuned plan is the class default's p2 twin run
// as its p3 twin, which claims its tiles from a counter in the workspace (the keys' counts are on
// the device, so any paged call may be ragged); the launch zeroes the counter ahead of the kernel.
// Without the workspace, or in a call of too few tiles, the same kernel deals them statically; a
// longer stream keeps the class default (one tile a block, dealt by the hardware).
TEST_F(FakeGpuLaunch, PagedPrefillClaimsItsTilesFromTheZeroedWorkspaceCounter) {
  Problem p{DType::kBF16, 128, true, 24, 300, 2048, 32, 8};  // 80 x 32 tiles of 128 rows at most
  p.layout = Layout::kPaged;
  auto plan = r.rt->plan(p);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->variant.family, "hopper_paged") << plan->why;
  EXPECT_EQ(plan->variant.Param("p"), 3) << plan->variant.Uri();
  EXPECT_NE(plan->why.find("a short paged K/V stream"), std::string::npos) << plan->why;
  EXPECT_NE(plan->why.find("a paged cache runs it as"), std::string::npos) << plan->why;
  HostBuffers b;
  ForwardArgs a = r.ArgsFor(p, b);
  ASSERT_GE(a.workspace_bytes, 16);
  std::memset(a.workspace, 0xAB, size_t(a.workspace_bytes));
  fake.Reset();
  Status s = r.rt->forward(a, nullptr);
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto launches = fake.Launches();
  auto memsets = fake.Memsets();
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(std::string(launches[0].kernel), plan->variant.Uri());
  ASSERT_EQ(memsets.size(), 1u);
  EXPECT_EQ(memsets[0].launches_before, 0) << "the counter is zeroed ahead of the kernel";
  EXPECT_EQ(memsets[0].address, reinterpret_cast<uintptr_t>(a.workspace));
  HopperParams k;
  ASSERT_EQ(fake.Params(0, &k, sizeof k), int(sizeof k));
  EXPECT_EQ(static_cast<void*>(k.tile_counter), a.workspace);
  EXPECT_EQ(k.block_table, a.paged.block_table);
  EXPECT_EQ(*static_cast<const uint32_t*>(a.workspace), 0u);
  EXPECT_EQ(static_cast<const unsigned char*>(a.workspace)[4], 0xAB) << "only the counter";
  // No workspace: the same kernel, no counter, no memset.
  ForwardArgs bare = a;
  bare.workspace = nullptr;
  bare.workspace_bytes = 0;
  fake.Reset();
  ASSERT_TRUE(r.rt->forward(bare, nullptr).ok());
  ASSERT_EQ(fake.Launches().size(), 1u);
  EXPECT_EQ(std::string(fake.Launches()[0].kernel), plan->variant.Uri());
  EXPECT_TRUE(fake.Memsets().empty());
  ASSERT_EQ(fake.Params(0, &k, sizeof k), int(sizeof k));
  EXPECT_EQ(k.tile_counter, nullptr);
  // Two sequences: too few tiles to repay the memset, so the same kernel deals them statically.
  Problem few = p;
  few.batch = 2;
  HostBuffers few_buffers;
  ForwardArgs small = r.ArgsFor(few, few_buffers);
  ASSERT_GE(small.workspace_bytes, 16);
  fake.Reset();
  ASSERT_TRUE(r.rt->forward(small, nullptr).ok());
  ASSERT_EQ(fake.Launches().size(), 1u);
  EXPECT_EQ(std::string(fake.Launches()[0].kernel), plan->variant.Uri());
  EXPECT_TRUE(fake.Memsets().empty());
  // A longer stream: the class default, persistent or not as the class says, never claimed.
  Problem longer = p;
  longer.seqlen_k = 4096;
  auto long_plan = r.rt->plan(longer);
  ASSERT_TRUE(long_plan.ok()) << long_plan.status().ToString();
  EXPECT_EQ(long_plan->why.find("a short paged K/V stream"), std::string::npos) << long_plan->why;
  EXPECT_NE(long_plan->variant.Param("p"), 3) << long_plan->variant.Uri();
  HostBuffers long_buffers;
  ForwardArgs la = r.ArgsFor(longer, long_buffers);
  fake.Reset();
  ASSERT_TRUE(r.rt->forward(la, nullptr).ok());
  ASSERT_EQ(fake.Launches().size(), 1u);
  EXPECT_EQ(std::string(fake.Launches()[0].kernel), long_plan->variant.Uri());
  EXPECT_TRUE(fake.Memsets().empty());
}

// A dense cache with per-sequence lengths and more than 16 queries (flash_attn_with_kvcache's
// cache_seqlens, prefill over a cache): forward() launches hopper_paged, the planned hopper_fwd
// tile reading the lengths, through maps of the dense cache {D, Hkv, Nk, B} and no table; the
// same call without lengths launches hopper_fwd.
TEST_F(FakeGpuLaunch, ADenseCacheWithLengthsLaunchesHopperPagedOnePageASequence) {
  const Problem p{DType::kBF16, 128, true, 3, 300, 4096, 32, 8};
  HostBuffers b;
  ForwardArgs a = r.ArgsFor(p, b);
  auto* lens = static_cast<int32_t*>(b.Get(3 * 4));
  lens[0] = 4096, lens[1] = 17, lens[2] = 0;
  fake.Reset();
  ASSERT_TRUE(r.rt->forward(a, nullptr).ok());
  auto launches = fake.Launches();
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(std::string(launches[0].kernel).rfind("hopper_fwd_", 0), 0u) << launches[0].kernel;
  const std::string dense_kernel = launches[0].kernel;
  a.seqlens_k = lens;
  fake.Reset();
  Status s = r.rt->forward(a, nullptr);
  ASSERT_TRUE(s.ok()) << s.ToString();
  launches = fake.Launches();
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(std::string(launches[0].kernel), "hopper_paged_" + dense_kernel.substr(std::string("hopper_fwd_").size()));
  auto plan = r.rt->plan(a);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(std::string(launches[0].kernel), plan->variant.Uri()) << plan->why;
  const auto maps = fake.MapsLaunched(0);
  for (const void* t : {a.k, a.v}) {
    bool found = false;
    for (const FtFakeTensorMap& m : maps) {
      if (m.address != reinterpret_cast<uintptr_t>(t)) continue;
      found = true;
      ASSERT_EQ(m.rank, 4u);
      EXPECT_EQ(m.dims[1], 8u);
      EXPECT_EQ(m.dims[2], 4096u) << "a sequence's rows";
      EXPECT_EQ(m.dims[3], 3u) << "the batch";
      EXPECT_EQ(m.strides[2], uint64_t(4096) * 8 * 128 * 2) << "sequences Nk rows apart";
    }
    EXPECT_TRUE(found) << (t == a.k ? "k" : "v");
  }
  ft_abi::HopperParams k;
  ASSERT_EQ(fake.Params(0, &k, sizeof k), int(sizeof k));
  EXPECT_EQ(k.seqlens_k, lens);
  EXPECT_EQ(k.block_table, nullptr);
  EXPECT_EQ(k.block_shift, 30);
}

// Nothing launched or loaded for a call the host can refuse; the error names the argument.
TEST_F(FakeGpuLaunch, RefusedCallsLaunchAndLoadNothing) {
  Problem dec{DType::kBF16, 128, false, 2, 1, 4096, 32, 8};
  dec.layout = Layout::kPaged;
  auto ws = r.rt->workspace_size(dec);
  ASSERT_TRUE(ws.ok());
  struct Case {
    const char* name;
    void (*mutate)(ForwardArgs&);
  } cases[] = {
      {"q", [](ForwardArgs& a) { a.q = nullptr; }},
      {"head_dim", [](ForwardArgs& a) { a.problem.head_dim = 48; }},
      {"heads_kv", [](ForwardArgs& a) { a.problem.heads_kv = 3; }},
      {"softmax_scale", [](ForwardArgs& a) { a.softmax_scale = -1.0f; }},
      {"k", [](ForwardArgs& a) { a.k = static_cast<const char*>(a.k) + 2; }},
      {"block_size", [](ForwardArgs& a) { a.paged.block_size = 24; }},
      {"block_table", [](ForwardArgs& a) { a.paged.block_table = nullptr; }},
      {"workspace", [](ForwardArgs& a) { a.workspace_bytes = 256; }},
  };
  for (const Case& c : cases) {
    HostBuffers b;
    ForwardArgs a = FakeCallArgs(dec, b, *ws);
    c.mutate(a);
    fake.Reset();
    Status s = r.rt->forward(a, nullptr);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << c.name << ": " << s.ToString();
    EXPECT_NE(s.message().find(c.name), std::string::npos) << c.name << ": " << s.message();
    EXPECT_TRUE(fake.Launches().empty()) << c.name;
    // The workspace a call needs is its planned family's (decode_fwd's splits): checked once the
    // call is planned, before its kernel is compiled or loaded; the others before planning.
    EXPECT_EQ(fake.ModuleLoads(), 0) << c.name;
  }
}

// K and V sharing one head (head stride 0): TMA cannot describe it, so the call falls back to
// fa2_fwd, says so once, and keeps launching it.
TEST_F(FakeGpuLaunch, StridesTmaCannotDescribeFallBackToFa2) {
  const Problem p{DType::kBF16, 128, false, 1, 300, 300, 4, 2};
  HostBuffers b;
  ForwardArgs a = FakeCallArgs(p, b, 0);
  a.k_strides.head = a.v_strides.head = 0;
  fake.Reset();
  for (int i = 0; i < 2; ++i) {
    Status s = r.rt->forward(a, nullptr);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  const auto launches = fake.Launches();
  ASSERT_EQ(launches.size(), 2u);
  for (const FtFakeLaunch& l : launches)
    EXPECT_EQ(std::string(l.kernel).rfind("fa2_fwd_bf16_d128_", 0), 0u) << l.kernel;
  int fallbacks = 0;
  for (const std::string& w : r.warnings) fallbacks += w.find("falling back to fa2_fwd_bf16_d128_") != std::string::npos;
  EXPECT_EQ(fallbacks, 1);
}

// Eight threads, none with a current context, calling one runtime for four buckets at once
// (every first call of a bucket races the others through the cold path): every call succeeds
// and launches its own bucket's planned kernel, in device 0's primary context, loaded once.
TEST_F(FakeGpuLaunch, ThreadsRacingThroughTheColdPathEachLaunchTheirPlan) {
  const Problem problems[4] = {{DType::kBF16, 128, false, 1, 512, 512, 8, 8},
                               {DType::kBF16, 128, true, 1, 2048, 2048, 8, 8},
                               {DType::kF16, 64, false, 2, 1024, 1024, 4, 4},
                               {DType::kBF16, 128, false, 4, 1, 4096, 32, 8}};
  std::string planned[4];
  HostBuffers b;
  std::vector<ForwardArgs> args;
  for (int i = 0; i < 4; ++i) {
    auto plan = r.rt->plan(problems[i]);
    ASSERT_TRUE(plan.ok());
    planned[i] = plan->variant.Uri();
    args.push_back(r.ArgsFor(problems[i], b));
  }
  fake.Reset();
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {  // a new thread: no current context
      for (int call = 0; call < 20; ++call)
        if (!r.rt->forward(args[size_t((t + call) % 4)], nullptr).ok()) failures.fetch_add(1);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  const auto launches = fake.Launches();
  int by_bucket[4] = {};
  for (const FtFakeLaunch& l : launches) {
    EXPECT_EQ(l.device, 0);
    for (int i = 0; i < 4; ++i) by_bucket[i] += std::string(l.kernel) == planned[i];
  }
  for (int i = 0; i < 3; ++i) EXPECT_EQ(by_bucket[i], 40) << planned[i];
  EXPECT_EQ(by_bucket[3], 40) << planned[3] << ": the decode split kernel (its combine follows each)";
  EXPECT_EQ(fake.ModuleLoads(), 4) << "one load per bucket's kernel, whatever the race";
}

// Warm calls allocate nothing on the calling thread, prefill and paged decode alike, whether
// the tensors repeat or alternate between two sets.
TEST_F(FakeGpuLaunch, WarmForwardAllocatesNothing) {
  Problem dec{DType::kBF16, 128, false, 2, 1, 4096, 32, 8};
  dec.layout = Layout::kPaged;
  const Problem pre{DType::kBF16, 128, false, 2, 1000, 1000, 8, 2};
  for (const Problem& p : {pre, dec}) {
    HostBuffers b;
    const ForwardArgs sets[2] = {r.ArgsFor(p, b), r.ArgsFor(p, b)};
    for (const ForwardArgs& a : sets) ASSERT_TRUE(r.rt->forward(a, nullptr).ok());  // load, encode
    fake.Reset();
    bool ok = true;
    int64_t allocations = 0;
    {
      flashtune::testing::CountAllocations counter;
      for (int i = 0; i < 50; ++i) ok &= r.rt->forward(sets[i % 2], nullptr).ok();
      allocations = counter.count();
    }
    EXPECT_TRUE(ok);
    EXPECT_EQ(allocations, 0) << p.ToString();
    EXPECT_EQ(fake.Launches().size(), p.layout == Layout::kPaged ? 100u : 50u);
  }
}

// A stream on device 0 (the fake H200) and the driver's table, to capture calls into graphs.
struct CaptureStream {
  Driver* driver = nullptr;
  std::optional<Context> ctx;
  std::optional<Stream> stream;
  CaptureStream() {
    auto d = Driver::Load();
    if (!d.ok()) return;
    driver = *d;
    auto c = Context::Primary(*driver, 0);
    if (!c.ok()) return;
    ctx.emplace(std::move(*c));
    auto s = Stream::Create(*ctx);
    if (s.ok()) stream.emplace(std::move(*s));
  }
  bool ok() const { return stream.has_value(); }
  const detail::CudaApi& api() const { return driver->api(); }
  CUgraphExec Capture(Runtime& rt, const ForwardArgs& a) const { return CaptureForward(api(), rt, a, stream->get()); }
};

// A warm call captured records its launches into the graph, and the graph replays them.
TEST_F(FakeGpuLaunch, AWarmCallCapturesIntoAGraphThatReplaysIt) {
  CaptureStream cs;
  ASSERT_TRUE(cs.ok());
  Problem dec{DType::kBF16, 128, false, 4, 1, 8192, 32, 8};
  dec.layout = Layout::kPaged;
  const Problem pre{DType::kBF16, 128, true, 1, 2048, 2048, 8, 8};
  for (const Problem& p : {pre, dec}) {
    HostBuffers b;
    const ForwardArgs a = r.ArgsFor(p, b);
    ASSERT_TRUE(r.rt->forward(a, cs.stream->get()).ok());  // warm-up: compile, load, encode
    fake.Reset();
    CUgraphExec exec = cs.Capture(*r.rt, a);
    ASSERT_NE(exec, nullptr);
    ASSERT_EQ(cs.api().cuGraphLaunch(exec, cs.stream->get()), CUDA_SUCCESS);
    const auto launches = fake.Launches();
    const size_t n = p.layout == Layout::kPaged ? 2 : 1;
    ASSERT_EQ(launches.size(), 2 * n) << p.ToString();
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(launches[i].captured, 1);
      EXPECT_EQ(launches[n + i].captured, 2);
      EXPECT_STREQ(launches[n + i].kernel, launches[i].kernel);
    }
  }
}

// A packed call that claims its tiles, captured: the counter's memset is recorded into the graph
// ahead of the kernel (the capture runs neither), and every replay zeroes the counter before its
// launch, so a graph replayed after the kernel left the counter at its tile count claims afresh.
TEST_F(FakeGpuLaunch, ACapturedPackedCallZeroesItsTileCounterOnEveryReplay) {
  CaptureStream cs;
  ASSERT_TRUE(cs.ok());
  Problem p{DType::kBF16, 128, true, 3, 2000, 2000, 32, 8};
  p.layout = Layout::kVarlen;
  HostBuffers b;
  ForwardArgs a = r.ArgsFor(p, b);
  PackSequences(a, b, {0, 2000, 2017, 4017});  // 34 x 32 tiles at most: enough to claim
  ASSERT_TRUE(r.rt->forward(a, cs.stream->get()).ok());  // warm-up
  auto* counter = static_cast<uint32_t*>(a.workspace);
  *counter = 77;  // what a kernel leaves behind: tiles claimed
  fake.Reset();
  CUgraphExec exec = cs.Capture(*r.rt, a);
  ASSERT_NE(exec, nullptr);
  EXPECT_EQ(*counter, 77u) << "a capture runs nothing";
  for (int replay = 0; replay < 2; ++replay) {
    *counter = 77;
    ASSERT_EQ(cs.api().cuGraphLaunch(exec, cs.stream->get()), CUDA_SUCCESS);
    EXPECT_EQ(*counter, 0u) << "replay " << replay;
  }
  const auto launches = fake.Launches();
  const auto memsets = fake.Memsets();
  ASSERT_EQ(launches.size(), 3u);  // captured, then two replays
  ASSERT_EQ(memsets.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(launches[i].captured, i == 0 ? 1 : 2);
    EXPECT_EQ(memsets[i].captured, i == 0 ? 1 : 2);
    EXPECT_EQ(memsets[i].launches_before, i) << "each memset runs ahead of its kernel";
    EXPECT_EQ(memsets[i].address, reinterpret_cast<uintptr_t>(a.workspace));
    EXPECT_EQ(memsets[i].value, 0);
    EXPECT_GE(memsets[i].bytes, 4u);
    EXPECT_LE(memsets[i].bytes, 16u) << "the counter alone";
  }
}

// The backward pass: its family's three kernels of one module in order (the preprocess, then
// "<uri>_main" and "<uri>_convert"), the deterministic mode another variant; a missing
// gradient or a short workspace launches nothing.
TEST_F(FakeGpuLaunch, BackwardLaunchesItsThreeKernelsInOrder) {
  const Problem p{DType::kBF16, 128, true, 2, 1024, 1024, 8, 2};
  HostBuffers b;
  BackwardArgs a = BackwardArgs::Contiguous(p);
  ForwardArgs f = FakeCallArgs(p, b, 0);
  a.forward.q = f.q, a.forward.k = f.k, a.forward.v = f.v, a.forward.o = f.o, a.forward.lse = f.lse;
  const size_t q_bytes = size_t(p.batch * p.seqlen_q * p.heads_q * p.head_dim) * 2;
  const size_t kv_bytes = size_t(p.batch * p.seqlen_k * p.heads_kv * p.head_dim) * 2;
  a.d_o = b.Get(q_bytes);
  a.dq = b.Get(q_bytes);
  a.dk = b.Get(kv_bytes);
  a.dv = b.Get(kv_bytes);
  Problem bwd = p;
  bwd.operation = Operation::kBackward;
  auto ws = r.rt->workspace_size(bwd);
  ASSERT_TRUE(ws.ok());
  a.forward.workspace = b.Get(size_t(*ws));
  a.forward.workspace_bytes = *ws;
  std::string uris[2];
  for (bool det : {false, true}) {
    a.deterministic = det;
    fake.Reset();
    Status s = r.rt->backward(a, nullptr);
    ASSERT_TRUE(s.ok()) << s.ToString();
    const auto launches = fake.Launches();
    ASSERT_EQ(launches.size(), 3u) << "det " << det;
    const std::string uri = launches[0].kernel;
    EXPECT_EQ(std::string(launches[1].kernel), uri + "_main");
    EXPECT_EQ(std::string(launches[2].kernel), uri + "_convert");
    uris[det] = uri;
  }
  EXPECT_NE(uris[0], uris[1]) << "the deterministic mode is its own variant";
  BackwardArgs no_grad = a;
  no_grad.dk = nullptr;
  fake.Reset();
  EXPECT_EQ(r.rt->backward(no_grad, nullptr).code(), Code::kInvalidArgument);
  BackwardArgs short_ws = a;
  short_ws.forward.workspace_bytes = 256;
  EXPECT_EQ(r.rt->backward(short_ws, nullptr).code(), Code::kInvalidArgument);
  EXPECT_TRUE(fake.Launches().empty());
}

}  // namespace
}  // namespace flashtune
