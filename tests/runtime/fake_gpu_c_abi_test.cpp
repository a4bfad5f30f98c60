// The C ABI's launch path without a GPU, on the recording fake GPU (tests/fixtures/fake_gpu.h):
// ft_forward_ex reads every field of ft_attention_args it is given and none past struct_size
// (a version-1 caller's mixed batch runs as one call), a paged decode call launches the paged
// split kernel and its combine, a mixed prefill + decode batch launches decode_fwd first and
// the prefill family second, a refused call launches nothing, and ft_runtime_options'
// online_tuning decides over the environment whether an untuned bucket spawns a worker.
#include "flashtune/flashtune.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/fake_gpu_record.h"
#include "tests/support/temp_dir.h"
#include "tests/runtime/tuned_db.h"

namespace flashtune {
namespace {

using flashtune::testing::FakeDeviceRecord;
using flashtune::testing::FakeGpuRecord;
using flashtune::testing::HostBuffers;
using flashtune::testing::TuneSyntheticInto;

struct Handle {
  class flashtune::testing::TempDir dir;  // the class (replay_fixture.h also has a TempDir function)
  ft_runtime* rt = nullptr;
  Handle() {
    EXPECT_TRUE(flashtune::testing::UseFakeDevice(0));
    EXPECT_EQ(ft_runtime_open((dir.path() + "/absent.db").c_str(), &rt), FT_OK) << ft_last_error();
  }
  ~Handle() { ft_runtime_close(rt); }
};

void SetStrides(int64_t (&s)[3], int64_t batch, int64_t seq, int64_t head) {
  s[0] = batch, s[1] = seq, s[2] = head;
}

// A paged decode step: B2, one query token, 8192 keys on 16-key pages, Hq 32, Hkv 8, d128.
ft_attention_args PagedDecode(HostBuffers& b) {
  ft_attention_args a;
  std::memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.layout = FT_LAYOUT_PAGED;
  a.problem = {FT_DTYPE_BF16, 128, 0, 2, 1, 8192, 32, 8};
  const int64_t pages_per_seq = 8192 / 16, pages = 2 * pages_per_seq;
  a.q = b.Get(2 * 32 * 128 * 2);
  a.o = b.Get(2 * 32 * 128 * 2);
  a.k = b.Get(size_t(pages * 16 * 8 * 128 * 2));
  a.v = b.Get(size_t(pages * 16 * 8 * 128 * 2));
  SetStrides(a.q_strides, 32 * 128, 32 * 128, 128);
  a.o_strides[0] = a.q_strides[0], a.o_strides[1] = a.q_strides[1], a.o_strides[2] = a.q_strides[2];
  SetStrides(a.k_strides, 16 * 8 * 128, 8 * 128, 128);
  a.v_strides[0] = a.k_strides[0], a.v_strides[1] = a.k_strides[1], a.v_strides[2] = a.k_strides[2];
  auto* table = static_cast<int32_t*>(b.Get(size_t(pages) * 4));
  for (int64_t i = 0; i < pages; ++i) table[i] = int32_t((i * 7919) % pages);  // shuffled pages
  a.block_table = table;
  a.block_table_stride = a.max_blocks_per_seq = pages_per_seq;
  a.num_blocks = pages;
  a.block_size = 16;
  auto* lens = static_cast<int32_t*>(b.Get(8));
  lens[0] = 8192, lens[1] = 4097;
  a.seqlens_k = lens;
  return a;
}

void GiveWorkspace(ft_runtime* rt, ft_attention_args& a, HostBuffers& b) {
  int64_t bytes = 0;
  ASSERT_EQ(ft_workspace_size(rt, &a, &bytes), FT_OK) << ft_last_error();
  a.workspace = bytes > 0 ? b.Get(size_t(bytes)) : nullptr;
  a.workspace_bytes = bytes;
}

TEST(FakeGpuCAbi, PagedDecodeLaunchesThePagedKernelAndItsCombine) {
  FakeGpuRecord fake;
  Handle h;
  HostBuffers b;
  ft_attention_args a = PagedDecode(b);
  GiveWorkspace(h.rt, a, b);
  ASSERT_GT(a.workspace_bytes, 0);
  ft_plan_info plan;
  ASSERT_EQ(ft_plan_ex(h.rt, &a, &plan), FT_OK) << ft_last_error();
  fake.Reset();
  ASSERT_EQ(ft_forward_ex(h.rt, &a, nullptr), FT_OK) << ft_last_error();
  const auto launches = fake.Launches();
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_STREQ(launches[0].kernel, plan.variant_uri);
  EXPECT_NE(std::string(plan.variant_uri).find("decode_fwd_bf16_d128_"), std::string::npos) << plan.variant_uri;
  EXPECT_NE(std::string(plan.variant_uri).find("_kv1_"), std::string::npos) << plan.variant_uri;
  EXPECT_EQ(std::string(launches[1].kernel), std::string(plan.variant_uri) + "_combine");
  EXPECT_EQ(launches[0].grid[0], 2u * 8u);
  EXPECT_EQ(launches[1].grid[0], 2u * 32u);
}

// Varlen, four sequences: two decode steps (1 query; 1000 keys each) first, then two prefill
// sequences of 300 queries over 300 keys.
ft_attention_args MixedBatch(HostBuffers& b) {
  ft_attention_args a;
  std::memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.layout = FT_LAYOUT_VARLEN;
  a.problem = {FT_DTYPE_BF16, 128, 1, 4, 300, 1000, 8, 2};
  static const int32_t cu_q[] = {0, 1, 2, 302, 602}, cu_k[] = {0, 1000, 2000, 2300, 2600};
  auto* q_offsets = static_cast<int32_t*>(b.Get(sizeof cu_q));
  auto* k_offsets = static_cast<int32_t*>(b.Get(sizeof cu_k));
  std::memcpy(q_offsets, cu_q, sizeof cu_q);
  std::memcpy(k_offsets, cu_k, sizeof cu_k);
  a.cu_seqlens_q = q_offsets;
  a.cu_seqlens_k = k_offsets;
  a.total_q = 602;
  a.total_k = 2600;
  a.q = b.Get(602 * 8 * 128 * 2);
  a.o = b.Get(602 * 8 * 128 * 2);
  a.k = b.Get(2600 * 2 * 128 * 2);
  a.v = b.Get(2600 * 2 * 128 * 2);
  SetStrides(a.q_strides, 0, 8 * 128, 128);
  a.o_strides[1] = a.q_strides[1], a.o_strides[2] = a.q_strides[2];
  SetStrides(a.k_strides, 0, 2 * 128, 128);
  a.v_strides[1] = a.k_strides[1], a.v_strides[2] = a.k_strides[2];
  a.decode_seqs = 2;
  a.decode_max_seqlen_q = 1;
  return a;
}

TEST(FakeGpuCAbi, AMixedBatchLaunchesDecodeThenPrefill) {
  FakeGpuRecord fake;
  Handle h;
  HostBuffers b;
  ft_attention_args a = MixedBatch(b);
  GiveWorkspace(h.rt, a, b);
  fake.Reset();
  ASSERT_EQ(ft_forward_ex(h.rt, &a, nullptr), FT_OK) << ft_last_error();
  auto launches = fake.Launches();
  ASSERT_GE(launches.size(), 2u);
  EXPECT_EQ(std::string(launches[0].kernel).rfind("decode_fwd_bf16_d128_", 0), 0u) << launches[0].kernel;
  EXPECT_EQ(launches[0].grid[0], 2u * 2u) << "the decode part: 2 sequences x 2 K/V heads";
  const FtFakeLaunch& prefill = launches.back();
  EXPECT_EQ(std::string(prefill.kernel).find("decode_fwd"), std::string::npos) << prefill.kernel;
  EXPECT_NE(std::string(prefill.kernel).find("_bf16_d128_"), std::string::npos) << prefill.kernel;
  EXPECT_NE(std::string(prefill.kernel).find("_causal"), std::string::npos) << prefill.kernel;

  // A version-1 caller (struct_size without the decode fields): the library must not read past
  // it, so the batch is one call on one prefill kernel, whatever follows in memory.
  std::vector<unsigned char> v1(offsetof(ft_attention_args, decode_seqs) + 64, 0xAB);  // garbage after
  a.struct_size = uint32_t(offsetof(ft_attention_args, decode_seqs));
  std::memcpy(v1.data(), &a, a.struct_size);
  fake.Reset();
  ASSERT_EQ(ft_forward_ex(h.rt, reinterpret_cast<const ft_attention_args*>(v1.data()), nullptr), FT_OK)
      << ft_last_error();
  launches = fake.Launches();
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(std::string(launches[0].kernel).find("decode_fwd"), std::string::npos) << launches[0].kernel;
}

TEST(FakeGpuCAbi, RefusedCallsLaunchNothingAndSayWhy) {
  FakeGpuRecord fake;
  Handle h;
  HostBuffers b;
  ft_attention_args a = PagedDecode(b);
  GiveWorkspace(h.rt, a, b);
  struct Case {
    const char* expect;
    void (*mutate)(ft_attention_args&);
  } cases[] = {
      {"block_size", [](ft_attention_args& x) { x.block_size = 24; }},
      {"layout", [](ft_attention_args& x) { x.layout = 7; }},
      {"struct_size", [](ft_attention_args& x) { x.struct_size = 12; }},
      {"num_blocks", [](ft_attention_args& x) { x.num_blocks = 0; }},
      {"seqlens_k", [](ft_attention_args& x) { x.seqlens_k = nullptr; }},
  };
  for (const Case& c : cases) {
    ft_attention_args bad = a;
    c.mutate(bad);
    fake.Reset();
    EXPECT_EQ(ft_forward_ex(h.rt, &bad, nullptr), FT_INVALID_ARGUMENT) << c.expect;
    EXPECT_NE(std::string(ft_last_error()).find(c.expect), std::string::npos) << c.expect << ": " << ft_last_error();
    EXPECT_TRUE(fake.Launches().empty()) << c.expect;
  }
  fake.Reset();
  EXPECT_EQ(ft_forward_ex(h.rt, nullptr, nullptr), FT_INVALID_ARGUMENT);
  EXPECT_TRUE(fake.Launches().empty());
}

// ft_runtime_options.online_tuning over $FLASHTUNE_ONLINE_TUNE=1: OFF spawns no worker for an
// untuned bucket (its plan is the nearest tuned bucket's), ON does, FROM_ENV follows the
// variable. The worker is a stand-in that logs its call.
TEST(FakeGpuCAbi, OnlineTuningOptionOverridesTheEnvironment) {
  ASSERT_TRUE(flashtune::testing::UseFakeDevice(0));
  class flashtune::testing::TempDir dir;  // the class (replay_fixture.h also has a TempDir function)
  const std::string db = dir.path() + "/t.db", calls = dir.path() + "/calls.txt", cli = dir.path() + "/fake-flashtune";
  TuneSyntheticInto(db, {Problem{DType::kBF16, 128, false, 2, 512, 512, 4, 4}}, 7, FakeDeviceRecord());
  std::ofstream(cli) << "#!/bin/sh\necho \"$*\" >> '" << calls << "'\n";
  ::chmod(cli.c_str(), 0755);
  ::setenv("FLASHTUNE_ONLINE_TUNE", "1", 1);
  // Whether a worker was spawned: waited for up to 20 s where one is expected, 1 s where not.
  auto spawned = [&](int setting, int64_t seqlen, bool expected) {
    ft_runtime_options o{};
    o.struct_size = sizeof o;
    o.db_path = db.c_str();
    o.online_tuning = setting;
    o.online_tuning_cli = cli.c_str();
    ft_runtime* rt = nullptr;
    EXPECT_EQ(ft_runtime_open_ex(&o, &rt), FT_OK) << ft_last_error();
    ft_problem p = {FT_DTYPE_BF16, 128, 0, 2, seqlen, seqlen, 4, 4};  // untuned: a bucket of its own
    ft_plan_info info;
    EXPECT_EQ(ft_plan(rt, &p, &info), FT_OK) << ft_last_error();
    EXPECT_STREQ(info.source_name, "nearest");
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(expected ? 20 : 1);
    while (!std::filesystem::exists(calls) && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ft_runtime_close(rt);
    const bool any = std::filesystem::exists(calls);
    std::filesystem::remove(calls);
    return any;
  };
  EXPECT_FALSE(spawned(FT_ONLINE_TUNING_OFF, 1024, false));
  EXPECT_TRUE(spawned(FT_ONLINE_TUNING_ON, 2048, true));
  EXPECT_TRUE(spawned(FT_ONLINE_TUNING_FROM_ENV, 4096, true));
  ::unsetenv("FLASHTUNE_ONLINE_TUNE");
  EXPECT_FALSE(spawned(FT_ONLINE_TUNING_FROM_ENV, 8192, false));
}

}  // namespace
}  // namespace flashtune
