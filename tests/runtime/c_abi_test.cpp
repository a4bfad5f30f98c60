#include "flashtune/flashtune.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include <thread>

#include "tests/runtime/tuned_db.h"
#include "tests/support/replay_fixture.h"

namespace flashtune {
namespace {

using namespace flashtune::testing;

ft_problem SmallProblem() {
  ft_problem p{};
  p.dtype = FT_DTYPE_BF16;
  p.head_dim = 64;
  p.causal = 0;
  p.batch = 2;
  p.seqlen_q = p.seqlen_k = 256;
  p.heads_q = p.heads_kv = 4;
  return p;
}

struct Handle {
  ft_runtime* rt = nullptr;
  ~Handle() { ft_runtime_close(rt); }
};

TEST(CAbi, NullPointersAreInvalidArguments) {
  EXPECT_EQ(ft_runtime_open(nullptr, nullptr), FT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ft_last_error()).find("out is NULL"), std::string::npos) << ft_last_error();
  ft_plan_info info;
  ft_problem p = SmallProblem();
  EXPECT_EQ(ft_plan(nullptr, &p, &info), FT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ft_last_error()).find("runtime is NULL"), std::string::npos);
  EXPECT_EQ(ft_forward(nullptr, nullptr, nullptr), FT_INVALID_ARGUMENT);
  Handle h;
  ASSERT_EQ(ft_runtime_open((TempDir("c_abi_null") + "/absent.db").c_str(), &h.rt), FT_OK) << ft_last_error();
  EXPECT_STREQ(ft_last_error(), "");
  EXPECT_EQ(ft_plan(h.rt, nullptr, &info), FT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ft_last_error()).find("problem is NULL"), std::string::npos);
  EXPECT_EQ(ft_plan(h.rt, &p, nullptr), FT_INVALID_ARGUMENT);
  EXPECT_EQ(ft_forward(h.rt, nullptr, nullptr), FT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ft_last_error()).find("args is NULL"), std::string::npos);
  ft_runtime_close(nullptr);  // ignored
}

TEST(CAbi, RuntimeOptionsAreChecked) {
  Handle h;
  ft_runtime_options o{};
  o.struct_size = sizeof o;
  const std::string db = TempDir("c_abi_options") + "/absent.db";
  o.db_path = db.c_str();
  EXPECT_EQ(ft_runtime_open_ex(nullptr, &h.rt), FT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ft_last_error()).find("options is NULL"), std::string::npos) << ft_last_error();
  EXPECT_EQ(ft_runtime_open_ex(&o, nullptr), FT_INVALID_ARGUMENT);
  o.struct_size = 4;
  EXPECT_EQ(ft_runtime_open_ex(&o, &h.rt), FT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ft_last_error()).find("options.struct_size (4)"), std::string::npos) << ft_last_error();
  o.struct_size = sizeof o;
  o.online_tuning = 7;
  EXPECT_EQ(ft_runtime_open_ex(&o, &h.rt), FT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ft_last_error()).find("options.online_tuning (7); allowed: FT_ONLINE_TUNING_FROM_ENV (0)"),
            std::string::npos)
      << ft_last_error();
  EXPECT_EQ(h.rt, nullptr);
  o.online_tuning = FT_ONLINE_TUNING_ON;
  o.online_tuning_budget = -2;
  EXPECT_EQ(ft_runtime_open_ex(&o, &h.rt), FT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ft_last_error()).find("online_tuning_budget (-2)"), std::string::npos) << ft_last_error();
  o.online_tuning_budget = 8;
  o.online_tuning_cli = "/bin/true";
  ASSERT_EQ(ft_runtime_open_ex(&o, &h.rt), FT_OK) << ft_last_error();
  ft_problem p = SmallProblem();
  ft_plan_info info;
  EXPECT_EQ(ft_plan(h.rt, &p, &info), FT_OK) << ft_last_error();
}

TEST(CAbi, BadDtypeAndArgumentsNameTheField) {
  Handle h;
  ASSERT_EQ(ft_runtime_open((TempDir("c_abi_bad") + "/absent.db").c_str(), &h.rt), FT_OK);
  ft_problem p = SmallProblem();
  p.dtype = 7;
  ft_plan_info info;
  EXPECT_EQ(ft_plan(h.rt, &p, &info), FT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ft_last_error()).find("problem.dtype"), std::string::npos) << ft_last_error();
  p = SmallProblem();
  p.causal = 2;
  EXPECT_EQ(ft_plan(h.rt, &p, &info), FT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ft_last_error()).find("causal"), std::string::npos) << ft_last_error();
  p = SmallProblem();
  p.head_dim = 100;
  EXPECT_EQ(ft_plan(h.rt, &p, &info), FT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ft_last_error()).find("head_dim"), std::string::npos) << ft_last_error();

  ft_forward_args args{};
  args.problem = SmallProblem();
  EXPECT_EQ(ft_forward(h.rt, &args, nullptr), FT_INVALID_ARGUMENT);  // q is NULL: nothing launched
  EXPECT_NE(std::string(ft_last_error()).find("q"), std::string::npos) << ft_last_error();
  args.problem.dtype = 0;
  EXPECT_EQ(ft_forward(h.rt, &args, nullptr), FT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ft_last_error()).find("args.problem.dtype"), std::string::npos) << ft_last_error();
}

// A paged decode call that passes every host check: 16-key pages, device pointers faked
// (nothing is launched in these tests: each call fails before the launch, or only sizes).
ft_attention_args PagedDecodeArgs() {
  alignas(16) static char storage[8][64];
  ft_attention_args a;
  std::memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.layout = FT_LAYOUT_PAGED;
  a.problem = ft_problem{FT_DTYPE_BF16, 128, 0, 4, 1, 8192, 32, 8};
  a.q = storage[0];
  a.k = storage[1];
  a.v = storage[2];
  a.o = storage[3];
  const int64_t qs[3] = {32 * 128, 32 * 128, 128}, ks[3] = {16 * 8 * 128, 8 * 128, 128};
  std::memcpy(a.q_strides, qs, sizeof qs);
  std::memcpy(a.o_strides, qs, sizeof qs);
  std::memcpy(a.k_strides, ks, sizeof ks);
  std::memcpy(a.v_strides, ks, sizeof ks);
  a.block_table = reinterpret_cast<const int32_t*>(storage[4]);
  a.block_table_stride = a.max_blocks_per_seq = 512;
  a.num_blocks = 4 * 512;
  a.block_size = 16;
  a.seqlens_k = reinterpret_cast<const int32_t*>(storage[5]);
  return a;
}

TEST(CAbi, ForwardExRefusesBadArgumentsNamingThem) {
  Handle h;
  ASSERT_EQ(ft_runtime_open((TempDir("c_abi_ex") + "/absent.db").c_str(), &h.rt), FT_OK);
  EXPECT_EQ(ft_forward_ex(nullptr, nullptr, nullptr), FT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ft_last_error()).find("runtime is NULL"), std::string::npos) << ft_last_error();
  EXPECT_EQ(ft_forward_ex(h.rt, nullptr, nullptr), FT_INVALID_ARGUMENT);
  auto refused = [&](ft_attention_args a, const std::string& fragment) {
    EXPECT_EQ(ft_forward_ex(h.rt, &a, nullptr), FT_INVALID_ARGUMENT) << fragment;
    EXPECT_NE(std::string(ft_last_error()).find(fragment), std::string::npos) << ft_last_error();
  };
  ft_attention_args a = PagedDecodeArgs();
  a.struct_size = 8;
  refused(a, "args.struct_size (8) is not a known ft_attention_args size");
  a = PagedDecodeArgs();
  a.layout = 3;
  refused(a, "args.layout (3); allowed: FT_LAYOUT_DENSE (0), FT_LAYOUT_PAGED (1), FT_LAYOUT_VARLEN (2)");
  a = PagedDecodeArgs();
  a.block_table = nullptr;
  refused(a, "paged.block_table must not be null");
  a = PagedDecodeArgs();
  a.block_size = 48;
  refused(a, "paged.block_size (48) must be a power of two in [1, 256]");
  a = PagedDecodeArgs();
  a.max_blocks_per_seq = a.block_table_stride = 100;
  refused(a, "seqlen_k (8192) exceeds the cache a sequence can address");
  a = PagedDecodeArgs();
  a.seqlens_k = nullptr;
  refused(a, "seqlens_k must not be null for the paged layout");
  a = PagedDecodeArgs();
  a.workspace_bytes = 64;  // and no workspace pointer
  refused(a, "workspace must not be null");
}

TEST(CAbi, CheckTablesReadsHostCopiesOfThePagedTables) {
  ft_attention_args a = PagedDecodeArgs();  // B4, 512 columns of 16-key pages, 2048 pages
  std::vector<int32_t> table(4 * 512, 7), lens = {8192, 100, 0, 17};
  EXPECT_EQ(ft_check_tables(&a, table.data(), lens.data(), nullptr, nullptr), FT_OK) << ft_last_error();
  EXPECT_STREQ(ft_last_error(), "");
  table[1 * 512 + 6] = -3;  // sequence 1's 7th page: 100 keys need pages 0-6
  EXPECT_EQ(ft_check_tables(&a, table.data(), lens.data(), nullptr, nullptr), FT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ft_last_error()).find("block_table[1][6] (-3) is not a page: must be in [0, "
                                              "paged.num_blocks = 2048)"),
            std::string::npos)
      << ft_last_error();
  table[1 * 512 + 6] = 7;
  lens[2] = 9000;
  EXPECT_EQ(ft_check_tables(&a, table.data(), lens.data(), nullptr, nullptr), FT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ft_last_error()).find("seqlens_k[2] (9000) must be in [0, seqlen_k = 8192]"),
            std::string::npos)
      << ft_last_error();
  EXPECT_EQ(ft_check_tables(&a, nullptr, lens.data(), nullptr, nullptr), FT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ft_last_error()).find("tables.block_table is null"), std::string::npos) << ft_last_error();
  a.struct_size = 8;  // the args are read as ft_forward_ex reads them
  EXPECT_EQ(ft_check_tables(&a, table.data(), lens.data(), nullptr, nullptr), FT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ft_last_error()).find("args.struct_size (8)"), std::string::npos) << ft_last_error();
  EXPECT_EQ(ft_check_tables(nullptr, nullptr, nullptr, nullptr, nullptr), FT_INVALID_ARGUMENT);
}

// Version 2 appends the mixed-batch fields; a version-1 caller (struct_size up to
// decode_seqs) is still served, its missing fields read as zero.
TEST(CAbi, ForwardExReadsBothArgsVersions) {
  Handle h;
  ASSERT_EQ(ft_runtime_open((TempDir("c_abi_v2") + "/absent.db").c_str(), &h.rt), FT_OK);
  ft_attention_args a = PagedDecodeArgs();
  a.layout = FT_LAYOUT_VARLEN;
  a.problem.seqlen_q = 64;
  a.block_table = nullptr;
  a.seqlens_k = nullptr;
  a.q_strides[0] = a.k_strides[0] = a.v_strides[0] = a.o_strides[0] = 0;
  alignas(16) static int32_t offsets[2][8];
  a.cu_seqlens_q = offsets[0];
  a.cu_seqlens_k = offsets[1];
  a.total_q = 64;
  a.total_k = 8192;
  a.decode_seqs = 5;  // more than the batch: version 2 reads it and refuses it
  a.decode_max_seqlen_q = 1;
  EXPECT_EQ(ft_forward_ex(h.rt, &a, nullptr), FT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ft_last_error()).find("varlen.decode_seqs (5) must be in [0, batch = 4]"), std::string::npos)
      << ft_last_error();
  a.struct_size = offsetof(ft_attention_args, decode_seqs);  // version 1: the fields are not read
  int64_t v1 = -1, v2 = -1;
  ASSERT_EQ(ft_workspace_size(h.rt, &a, &v1), FT_OK) << ft_last_error();
  a.struct_size = sizeof a;
  a.decode_seqs = 2;
  ASSERT_EQ(ft_workspace_size(h.rt, &a, &v2), FT_OK) << ft_last_error();
  EXPECT_EQ(v1, v2);  // the workspace covers any decode part: it does not depend on decode_seqs
  EXPECT_GT(v2, 0);
}

TEST(CAbi, WorkspaceSizeFollowsTheProblem) {
  Handle h;
  ASSERT_EQ(ft_runtime_open((TempDir("c_abi_ws") + "/absent.db").c_str(), &h.rt), FT_OK);
  ft_attention_args a = PagedDecodeArgs();
  int64_t bytes = -1;
  ASSERT_EQ(ft_workspace_size(h.rt, &a, &bytes), FT_OK) << ft_last_error();
  EXPECT_GT(bytes, 0);  // B4 x Hkv8: 32 blocks, the keys are split
  a.problem.batch = 256;
  ASSERT_EQ(ft_workspace_size(h.rt, &a, &bytes), FT_OK) << ft_last_error();
  EXPECT_EQ(bytes, 0);  // 2048 blocks fill the GPU unsplit
  EXPECT_EQ(ft_workspace_size(h.rt, &a, nullptr), FT_INVALID_ARGUMENT);
  a.problem.heads_kv = 7;
  EXPECT_EQ(ft_workspace_size(h.rt, &a, &bytes), FT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ft_last_error()).find("heads_q (32) must be a multiple of heads_kv (7)"), std::string::npos)
      << ft_last_error();
}

TEST(CAbi, PlanReportsTheChoice) {
  Handle h;
  ASSERT_EQ(ft_runtime_open((TempDir("c_abi_plan") + "/absent.db").c_str(), &h.rt), FT_OK);
  ft_problem p = SmallProblem();
  ft_plan_info info;
  ASSERT_EQ(ft_plan(h.rt, &p, &info), FT_OK) << ft_last_error();
  // The family the plan chose (hopper_fwd where the target is sm_90a, the default without a
  // GPU) leads the URI.
  EXPECT_EQ(std::string(info.variant_uri).rfind(std::string(info.family) + "_bf16_d64_", 0), 0u) << info.variant_uri;
  // Without a GPU here, or with one that the absent database cannot know: heuristic.
  EXPECT_EQ(info.source, FT_PLAN_HEURISTIC);
  EXPECT_STREQ(info.source_name, "heuristic");
  EXPECT_STREQ(info.bucket, "bf16/d64/full/q8/k8/bh3");
  EXPECT_GT(info.block_m, 0);
  EXPECT_NE(std::string(info.why).find("default tile"), std::string::npos) << info.why;
}

// ft_plan_ex plans any layout from the args (no pointer read): a paged call its own bucket, a
// varlen call its dense one (RuntimePaged.PagedCallsPlanTheirOwnBuckets shows a tuned dense
// winner is never a paged call's plan); a mixed call, which launches two plans, is refused
// naming decode_seqs.
TEST(CAbi, PlanExPlansEveryLayout) {
  Handle h;
  ASSERT_EQ(ft_runtime_open((TempDir("c_abi_plan_ex") + "/absent.db").c_str(), &h.rt), FT_OK) << ft_last_error();
  ft_attention_args a = PagedDecodeArgs();
  a.q = a.k = a.v = a.o = nullptr;  // not read
  a.block_table = nullptr;
  ft_plan_info paged, as_dense, varlen, dense_plan;
  ASSERT_EQ(ft_plan_ex(h.rt, &a, &paged), FT_OK) << ft_last_error();
  EXPECT_STREQ(paged.bucket, "bf16/d128/full/q0/k13/bh7/g2/paged");
  EXPECT_STREQ(paged.family, "decode_fwd");
  EXPECT_NE(paged.source, FT_PLAN_EXACT) << paged.why;
  a.layout = FT_LAYOUT_DENSE;
  ASSERT_EQ(ft_plan_ex(h.rt, &a, &as_dense), FT_OK) << ft_last_error();
  EXPECT_STREQ(as_dense.bucket, "bf16/d128/full/q0/k13/bh7/g2");
  ASSERT_EQ(ft_plan(h.rt, &a.problem, &dense_plan), FT_OK) << ft_last_error();
  EXPECT_STREQ(dense_plan.variant_uri, as_dense.variant_uri);
  EXPECT_EQ(dense_plan.source, as_dense.source);
  {
    // A dense cache with per-sequence key counts and 64 queries: the problem's plan (hopper_fwd,
    // untuned on sm_90a) cannot read the lengths, so the call's plan is the fallback forward()
    // takes, and says so.
    ft_attention_args d;
    std::memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.layout = FT_LAYOUT_DENSE;
    d.problem = {FT_DTYPE_BF16, 128, 0, 4, 64, 8192, 32, 8};
    const int64_t q_strides[3] = {64 * 32 * 128, 32 * 128, 128}, kv_strides[3] = {8192 * 8 * 128, 8 * 128, 128};
    std::memcpy(d.q_strides, q_strides, sizeof q_strides);
    std::memcpy(d.o_strides, q_strides, sizeof q_strides);
    std::memcpy(d.k_strides, kv_strides, sizeof kv_strides);
    std::memcpy(d.v_strides, kv_strides, sizeof kv_strides);
    alignas(16) static const int32_t lengths[4] = {8192, 100, 0, 64};
    ft_plan_info with_lengths, problem_only;
    ASSERT_EQ(ft_plan_ex(h.rt, &d, &with_lengths), FT_OK) << ft_last_error();
    EXPECT_STREQ(with_lengths.family, "hopper_fwd");  // no lengths: the problem's plan
    d.seqlens_k = lengths;
    ASSERT_EQ(ft_plan_ex(h.rt, &d, &with_lengths), FT_OK) << ft_last_error();
    ASSERT_EQ(ft_plan(h.rt, &d.problem, &problem_only), FT_OK) << ft_last_error();
    EXPECT_STREQ(problem_only.family, "hopper_fwd");
    EXPECT_STREQ(with_lengths.family, "hopper_paged");  // hopper_fwd's tile, reading the lengths
    EXPECT_NE(std::string(with_lengths.why).find("cannot run this call"), std::string::npos) << with_lengths.why;
  }
  a.layout = FT_LAYOUT_VARLEN;
  ASSERT_EQ(ft_plan_ex(h.rt, &a, &varlen), FT_OK) << ft_last_error();
  EXPECT_STREQ(varlen.bucket, as_dense.bucket);
  a.problem.seqlen_q = 512;
  a.decode_seqs = 2;
  a.decode_max_seqlen_q = 1;
  EXPECT_EQ(ft_plan_ex(h.rt, &a, &varlen), FT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ft_last_error()).find("args.decode_seqs (2) makes a mixed call"), std::string::npos)
      << ft_last_error();
  EXPECT_EQ(ft_plan_ex(h.rt, nullptr, &varlen), FT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ft_last_error()).find("ft_plan_ex: args is NULL"), std::string::npos);
  EXPECT_EQ(ft_plan_ex(h.rt, &a, nullptr), FT_INVALID_ARGUMENT);
  a.layout = 9;
  EXPECT_EQ(ft_plan_ex(h.rt, &a, &varlen), FT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ft_last_error()).find("args.layout (9)"), std::string::npos) << ft_last_error();
}

TEST(CAbi, BackwardSizesItsWorkspaceAndRefusesBadArguments) {
  ft_problem p = SmallProblem();
  int64_t bytes = 0;
  ASSERT_EQ(ft_backward_workspace_bytes(&p, &bytes), FT_OK) << ft_last_error();
  EXPECT_GE(bytes, int64_t(2 * 4 * 256) * 64 * 4);  // at least the fp32 dq accumulator
  EXPECT_EQ(ft_backward_workspace_bytes(&p, nullptr), FT_INVALID_ARGUMENT);
  ft_problem bad = p;
  bad.heads_kv = 3;
  EXPECT_EQ(ft_backward_workspace_bytes(&bad, &bytes), FT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ft_last_error()).find("heads_kv"), std::string::npos) << ft_last_error();

  Handle h;
  ASSERT_EQ(ft_runtime_open((TempDir("c_abi_backward") + "/absent.db").c_str(), &h.rt), FT_OK) << ft_last_error();
  EXPECT_EQ(ft_backward(h.rt, nullptr, nullptr), FT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ft_last_error()).find("ft_backward: args is NULL"), std::string::npos);
  ft_backward_args args{};
  args.forward.problem = p;
  EXPECT_EQ(ft_backward(h.rt, &args, nullptr), FT_INVALID_ARGUMENT);  // q is NULL: nothing launched
  EXPECT_NE(std::string(ft_last_error()).find("q must not be null"), std::string::npos) << ft_last_error();
  args.deterministic = 2;
  EXPECT_EQ(ft_backward(h.rt, &args, nullptr), FT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ft_last_error()).find("args.deterministic"), std::string::npos) << ft_last_error();

  ft_plan_info info;
  ASSERT_EQ(ft_plan_backward(h.rt, &p, &info), FT_OK) << ft_last_error();
  EXPECT_EQ(std::string(info.family).substr(std::string(info.family).size() - 4), "_bwd") << info.family;
  EXPECT_EQ(std::string(info.bucket).rfind("bwd/", 0), 0u) << info.bucket;
  ASSERT_EQ(ft_plan(h.rt, &p, &info), FT_OK);
  EXPECT_NE(std::string(info.family).substr(std::string(info.family).size() - 4), "_bwd") << info.family;
}

TEST(CAbi, LastErrorIsPerThread) {
  ASSERT_EQ(ft_runtime_open(nullptr, nullptr), FT_INVALID_ARGUMENT);
  std::string other = "unset";
  std::thread([&] { other = ft_last_error(); }).join();
  EXPECT_EQ(other, "");
  EXPECT_NE(std::string(ft_last_error()), "");
}

TEST(CAbi, StatusNames) {
  EXPECT_STREQ(ft_status_name(FT_OK), "ok");
  EXPECT_STREQ(ft_status_name(FT_INVALID_ARGUMENT), "invalid_argument");
  EXPECT_STREQ(ft_status_name(FT_NO_DRIVER), "no_driver");
  EXPECT_STREQ(ft_status_name(FT_INTERNAL), "internal");
  EXPECT_STREQ(ft_status_name(99), "unknown");
  EXPECT_STREQ(ft_status_name(-1), "unknown");
  EXPECT_NE(std::string(ft_version()).find('.'), std::string::npos);
}

TEST(CAbi, HeaderIsPlainC99AndTheSharedLibraryExportsIt) {
  const std::string dir = TempDir("c_abi_c99");
  const std::string exe = dir + "/c_abi_check";
  const std::string log = dir + "/log.txt";
  // In a sanitizer tree the library needs the sanitizer's runtime first in the program.
  ASSERT_EQ(RunShell("cc -std=c99 -pedantic -Wall -Wextra -Werror " FLASHTUNE_SANITIZE_LINK_FLAGS " -I '" FLASHTUNE_SOURCE_DIR
                     "/include' '"
                     FLASHTUNE_SOURCE_DIR "/tests/runtime/c_abi_check.c' -o '" + exe + "' -L '" FLASHTUNE_BINARY_DIR
                     "' -lflashtune -Wl,-rpath,'" FLASHTUNE_BINARY_DIR "' > '" + log + "' 2>&1"),
            0)
      << [&] { std::ifstream in(log); std::stringstream s; s << in.rdbuf(); return s.str(); }();
  EXPECT_EQ(RunShell("'" + exe + "' '" + dir + "/absent.db' > '" + log + "' 2>/dev/null"), 0);
  std::ifstream in(log);
  std::string line;
  std::getline(in, line);
  EXPECT_NE(line.find("_fwd_bf16_d64_"), std::string::npos) << line;
}

}  // namespace
}  // namespace flashtune
