// ft_forward_ex, ft_workspace_size and ft_plan_ex on arguments a caller can get wrong, drawn at
// random (fixed seeds) on the recording fake GPU, which checks launches and tensor maps as the
// driver does. Each call must either succeed with launches the driver accepts, or be refused as
// invalid or unsupported, with a message and no launch: never a driver error (an argument the
// library's checks let through to the driver), an internal error, or a crash. Built with
// -fsanitize=address,undefined the same test also finds overflow in the size arithmetic.
//
// The calls start from eight valid ones (dense prefill, a dense decode with lengths, a paged
// decode, a paged call with packed queries, a paged prefill, a dense cache with lengths and 64
// queries, a ragged varlen prefill, a mixed prefill + decode batch) and change one to three fields each to values at the edges: 0, -1, powers of two
// around the 32-bit limits, the field's own value off by one, doubled or halved; pointers null
// or misaligned.
#include "flashtune/flashtune.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/fake_gpu_record.h"
#include "tests/support/temp_dir.h"

namespace flashtune {
namespace {

using flashtune::testing::FakeGpuRecord;
using flashtune::testing::HostBuffers;
using flashtune::testing::TempDir;

void Set3(int64_t* s, int64_t batch, int64_t seq, int64_t head) { s[0] = batch, s[1] = seq, s[2] = head; }

// q and o strides {batch, seq} (and k, v's) of an args struct, each head a row of head_dim.
void Rows(ft_attention_args& a, std::pair<int64_t, int64_t> q, std::pair<int64_t, int64_t> kv) {
  const int64_t d = a.problem.head_dim;
  Set3(a.q_strides, q.first, q.second, d);
  Set3(a.o_strides, q.first, q.second, d);
  Set3(a.k_strides, kv.first, kv.second, d);
  Set3(a.v_strides, kv.first, kv.second, d);
}

// Zeroed args of `layout` for `problem` with q/o/k/v of `q_rows` and `kv_rows` rows in `b`
// (strides left to the caller).
ft_attention_args Base(int layout, ft_problem problem, int64_t q_rows, int64_t kv_rows, HostBuffers& b) {
  ft_attention_args a;
  std::memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.layout = layout;
  a.problem = problem;
  const size_t q_bytes = size_t(q_rows * problem.heads_q * problem.head_dim) * 2;
  const size_t kv_bytes = size_t(kv_rows * problem.heads_kv * problem.head_dim) * 2;
  a.q = b.Get(q_bytes), a.o = b.Get(q_bytes);
  a.k = b.Get(kv_bytes), a.v = b.Get(kv_bytes);
  a.lse = static_cast<float*>(b.Get(size_t(q_rows * problem.heads_q) * 4));
  return a;
}

int32_t* Ints(HostBuffers& b, const std::vector<int32_t>& values) {
  auto* p = static_cast<int32_t*>(b.Get(values.size() * 4));
  std::memcpy(p, values.data(), values.size() * 4);
  return p;
}

// A paged call's table and lengths: `per_seq` columns a sequence of 16-key pages, entry i page
// (i * step) % pages (shuffled; `step` odd, so each page once), one column set per sequence.
void Pages(ft_attention_args& a, HostBuffers& b, int64_t per_seq, int step, const std::vector<int32_t>& lens) {
  const int64_t pages = int64_t(lens.size()) * per_seq;
  std::vector<int32_t> table(static_cast<size_t>(pages));
  for (int64_t i = 0; i < pages; ++i) table[size_t(i)] = int32_t(i * step % pages);
  a.block_table = Ints(b, table);
  a.block_table_stride = a.max_blocks_per_seq = per_seq;
  a.num_blocks = pages;
  a.block_size = 16;
  a.seqlens_k = Ints(b, lens);
}

std::vector<ft_attention_args> ValidCalls(HostBuffers& b) {
  std::vector<ft_attention_args> calls;
  {  // Dense prefill: B2 N300 Hq8 Hkv2 d128 causal, [B, N, H, D].
    ft_attention_args a = Base(FT_LAYOUT_DENSE, {FT_DTYPE_BF16, 128, 1, 2, 300, 300, 8, 2}, 600, 600, b);
    Rows(a, {300 * 8 * 128, 8 * 128}, {300 * 2 * 128, 2 * 128});
    calls.push_back(a);
  }
  {  // Dense decode with lengths: B2 Nq1 Nk4096 Hq32 Hkv8 d128.
    ft_attention_args a = Base(FT_LAYOUT_DENSE, {FT_DTYPE_BF16, 128, 0, 2, 1, 4096, 32, 8}, 2, 8192, b);
    Rows(a, {32 * 128, 32 * 128}, {4096 * 8 * 128, 8 * 128});
    a.seqlens_k = Ints(b, {4096, 1000});
    calls.push_back(a);
  }
  {  // Paged decode: B2 Nq1, 4096 keys on 16-key pages (shuffled), Hq32 Hkv8 d128.
    ft_attention_args a = Base(FT_LAYOUT_PAGED, {FT_DTYPE_BF16, 128, 0, 2, 1, 4096, 32, 8}, 2, 8192, b);
    Rows(a, {32 * 128, 32 * 128}, {16 * 8 * 128, 8 * 128});
    Pages(a, b, 256, 97, {4096, 17});
    calls.push_back(a);
  }
  {  // Paged with packed queries (vLLM's call): B2, 1 and 3 new tokens, 16-key pages, causal.
    ft_attention_args a = Base(FT_LAYOUT_PAGED, {FT_DTYPE_BF16, 128, 1, 2, 3, 2048, 32, 8}, 4, 4096, b);
    Rows(a, {0, 32 * 128}, {16 * 8 * 128, 8 * 128});
    Pages(a, b, 128, 31, {2048, 5});
    a.cu_seqlens_q = Ints(b, {0, 1, 4});
    a.total_q = 4;
    calls.push_back(a);
  }
  {  // Paged prefill (chunked prefill: hopper_paged on sm_90a): B2, 40 and 200 new tokens packed, 16-key pages.
    ft_attention_args a = Base(FT_LAYOUT_PAGED, {FT_DTYPE_BF16, 128, 1, 2, 200, 2048, 32, 8}, 240, 4096, b);
    Rows(a, {0, 32 * 128}, {16 * 8 * 128, 8 * 128});
    Pages(a, b, 128, 31, {2048, 300});
    a.cu_seqlens_q = Ints(b, {0, 40, 240});
    a.total_q = 240;
    calls.push_back(a);
  }
  {  // A dense cache with lengths and 64 queries (fa2_fwd reads seqlens_k): B2 Nk4096 Hq32 Hkv8.
    ft_attention_args a = Base(FT_LAYOUT_DENSE, {FT_DTYPE_BF16, 128, 1, 2, 64, 4096, 32, 8}, 128, 8192, b);
    Rows(a, {64 * 32 * 128, 32 * 128}, {4096 * 8 * 128, 8 * 128});
    a.seqlens_k = Ints(b, {4096, 1000});
    calls.push_back(a);
  }
  {  // Varlen prefill: B3 (0, 700, 300 queries over 5, 700, 1000 keys) Hq8 Hkv8 d64 causal.
    ft_attention_args a = Base(FT_LAYOUT_VARLEN, {FT_DTYPE_BF16, 64, 1, 3, 700, 1000, 8, 8}, 1000, 1705, b);
    Rows(a, {0, 8 * 64}, {0, 8 * 64});
    a.cu_seqlens_q = Ints(b, {0, 0, 700, 1000});
    a.cu_seqlens_k = Ints(b, {0, 5, 705, 1705});
    a.total_q = 1000, a.total_k = 1705;
    calls.push_back(a);
  }
  {  // Mixed: two decode sequences (1 query) first, then one prefill of 300. Hq8 Hkv2 d128.
    ft_attention_args a = Base(FT_LAYOUT_VARLEN, {FT_DTYPE_BF16, 128, 1, 3, 300, 1000, 8, 2}, 302, 2300, b);
    Rows(a, {0, 8 * 128}, {0, 2 * 128});
    a.cu_seqlens_q = Ints(b, {0, 1, 2, 302});
    a.cu_seqlens_k = Ints(b, {0, 1000, 2000, 2300});
    a.total_q = 302, a.total_k = 2300;
    a.decode_seqs = 2, a.decode_max_seqlen_q = 1;
    calls.push_back(a);
  }
  return calls;
}

// One integer field of an args struct, by name, whatever its width.
struct IntField {
  const char* name;
  size_t offset;
  size_t size;  // 4 or 8
};
struct PointerField {
  const char* name;
  size_t offset;
};
// The fields a fuzzed call may change: integers, pointers and the softmax scale.
struct Fields {
  std::vector<IntField> ints;
  std::vector<PointerField> pointers;
  size_t scale;
};

#define FT_INT(T, f) IntField{#f, offsetof(T, f), sizeof(T::f)}
#define FT_INT_AT(T, f, i) IntField{#f "[" #i "]", offsetof(T, f) + (i) * 8, 8}
#define FT_STRIDES(T, f) FT_INT_AT(T, f, 0), FT_INT_AT(T, f, 1), FT_INT_AT(T, f, 2)
#define FT_PTR(T, f) PointerField{#f, offsetof(T, f)}

const Fields& AttentionFields() {
  using T = ft_attention_args;
  static const Fields fields = {
      {FT_INT(T, struct_size), FT_INT(T, layout), FT_INT(T, problem.dtype), FT_INT(T, problem.head_dim),
       FT_INT(T, problem.causal), FT_INT(T, problem.batch), FT_INT(T, problem.seqlen_q), FT_INT(T, problem.seqlen_k),
       FT_INT(T, problem.heads_q), FT_INT(T, problem.heads_kv), FT_STRIDES(T, q_strides), FT_STRIDES(T, k_strides),
       FT_STRIDES(T, v_strides), FT_STRIDES(T, o_strides), FT_INT(T, block_table_stride),
       FT_INT(T, max_blocks_per_seq), FT_INT(T, num_blocks), FT_INT(T, block_size), FT_INT(T, total_q),
       FT_INT(T, total_k), FT_INT(T, workspace_bytes), FT_INT(T, decode_seqs), FT_INT(T, decode_max_seqlen_q)},
      {FT_PTR(T, q), FT_PTR(T, k), FT_PTR(T, v), FT_PTR(T, o), FT_PTR(T, lse), FT_PTR(T, seqlens_k),
       FT_PTR(T, block_table), FT_PTR(T, cu_seqlens_q), FT_PTR(T, cu_seqlens_k), FT_PTR(T, workspace)},
      offsetof(T, softmax_scale)};
  return fields;
}

const Fields& BackwardFields() {
  using T = ft_backward_args;
  static const Fields fields = {
      {FT_INT(T, forward.problem.dtype), FT_INT(T, forward.problem.head_dim), FT_INT(T, forward.problem.causal),
       FT_INT(T, forward.problem.batch), FT_INT(T, forward.problem.seqlen_q), FT_INT(T, forward.problem.seqlen_k),
       FT_INT(T, forward.problem.heads_q), FT_INT(T, forward.problem.heads_kv), FT_STRIDES(T, forward.q_strides),
       FT_STRIDES(T, forward.k_strides), FT_STRIDES(T, forward.v_strides), FT_STRIDES(T, forward.o_strides),
       FT_STRIDES(T, d_o_strides), FT_STRIDES(T, dq_strides), FT_STRIDES(T, dk_strides), FT_STRIDES(T, dv_strides),
       FT_INT(T, workspace_bytes), FT_INT(T, deterministic)},
      {FT_PTR(T, forward.q), FT_PTR(T, forward.k), FT_PTR(T, forward.v), FT_PTR(T, forward.o), FT_PTR(T, forward.lse),
       FT_PTR(T, d_o), FT_PTR(T, dq), FT_PTR(T, dk), FT_PTR(T, dv), FT_PTR(T, workspace)},
      offsetof(T, forward.softmax_scale)};
  return fields;
}

int64_t GetInt(const void* args, const IntField& f) {
  const auto* p = static_cast<const unsigned char*>(args) + f.offset;
  if (f.size == 8) {
    int64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

void SetInt(void* args, const IntField& f, int64_t value) {
  auto* p = static_cast<unsigned char*>(args) + f.offset;
  if (f.size == 8) {
    std::memcpy(p, &value, 8);
  } else {
    const auto v = int32_t(uint32_t(uint64_t(value)));  // the low 32 bits, as a caller's cast would
    std::memcpy(p, &v, 4);
  }
}

// Values at the edges for a field whose valid value is `was`.
int64_t EdgeValue(int64_t was, std::mt19937_64& rng) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  const int64_t edges[] = {0, 1, -1, 2, 3, 15, 16, 17, 255, 256, 65535, 65536, int64_t(1) << 31,
                           (int64_t(1) << 31) - 1, int64_t(1) << 32, int64_t(1) << 40, kMax, kMin,
                           -(int64_t(1) << 31)};
  switch (rng() % 4) {
    case 0: return edges[rng() % (sizeof edges / sizeof edges[0])];
    case 1: return was + (rng() % 2 ? 1 : -1);
    case 2: return was > kMax / 2 || was < kMin / 2 ? was : was * 2;
    default: return was / 2;
  }
}

// Changes one field of `args` at random; says what it did, for the failure message.
std::string Mutate(void* args, const Fields& fields, std::mt19937_64& rng) {
  auto* bytes = static_cast<unsigned char*>(args);
  const int kind = int(rng() % 8);
  if (kind == 0) {
    const PointerField& f = fields.pointers[rng() % fields.pointers.size()];
    void* p;
    std::memcpy(&p, bytes + f.offset, sizeof p);
    const uintptr_t shifts[] = {0, 1, 2, 4, 8};
    const uintptr_t shift = shifts[rng() % 5];
    void* now = shift == 0 ? nullptr : reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) + shift);
    std::memcpy(bytes + f.offset, &now, sizeof now);
    return std::string(f.name) + (shift == 0 ? " = NULL" : " += " + std::to_string(shift));
  }
  if (kind == 1) {
    const float scales[] = {0.0f, -1.0f, std::nanf(""), std::numeric_limits<float>::infinity(), 1e-30f, 1e30f};
    const float scale = scales[rng() % 6];
    std::memcpy(bytes + fields.scale, &scale, sizeof scale);
    return "softmax_scale = " + std::to_string(scale);
  }
  const IntField& f = fields.ints[rng() % fields.ints.size()];
  const int64_t was = GetInt(args, f);
  SetInt(args, f, EdgeValue(was, rng));
  return std::string(f.name) + " " + std::to_string(was) + " -> " + std::to_string(GetInt(args, f));
}

bool IsRefusal(int rc) { return rc == FT_INVALID_ARGUMENT || rc == FT_UNSUPPORTED; }

// 1-3 changes of `args` drawn from `rng`; what they were, for failure messages.
std::string MutateSome(void* args, const Fields& fields, std::mt19937_64& rng) {
  std::string changes;
  const int count = 1 + int(rng() % 3);
  for (int i = 0; i < count; ++i) changes += (i ? "; " : "") + Mutate(args, fields, rng);
  return changes;
}

// What the seeded calls came to.
struct Tally {
  int launched = 0, refused = 0;
  std::set<std::string> kernels;
};

// One call's outcome, `rc` from `entry`: FT_OK with the launches the fake driver accepted, or a
// refusal (invalid or unsupported) with a message and no launch.
void Judge(const FakeGpuRecord& fake, int rc, const char* entry, const std::string& what, Tally* tally) {
  const auto launches = fake.Launches();
  if (rc == FT_OK) {
    ++tally->launched;
    ASSERT_FALSE(launches.empty()) << what << ": FT_OK without a launch";
    for (const FtFakeLaunch& l : launches) tally->kernels.insert(l.kernel);
    return;
  }
  ++tally->refused;
  ASSERT_TRUE(IsRefusal(rc)) << what << ": " << entry << " returned " << rc << " (" << ft_last_error()
                             << "); a bad argument must be refused before the driver sees it";
  ASSERT_TRUE(launches.empty()) << what << ": refused (" << ft_last_error() << ") after " << launches.size()
                                << " launch(es)";
  ASSERT_GT(std::strlen(ft_last_error()), 10u) << what;
}

TEST(FakeGpuFuzz, EveryCallLaunchesWhatTheDriverAcceptsOrIsRefusedWithoutALaunch) {
  FakeGpuRecord fake;
  TempDir dir;
  ASSERT_TRUE(flashtune::testing::UseFakeDevice(0));
  ft_runtime* rt = nullptr;
  ASSERT_EQ(ft_runtime_open((dir.path() + "/absent.db").c_str(), &rt), FT_OK) << ft_last_error();
  HostBuffers b;
  const std::vector<ft_attention_args> valid = ValidCalls(b);
  // A workspace bigger than any call here needs, so that a call is refused for its own fields.
  std::vector<ft_attention_args> bases;
  for (ft_attention_args a : valid) {
    int64_t bytes = 0;
    ASSERT_EQ(ft_workspace_size(rt, &a, &bytes), FT_OK) << ft_last_error();
    a.workspace_bytes = std::max<int64_t>(bytes, 1) * 4;
    a.workspace = b.Get(size_t(a.workspace_bytes));
    fake.Reset();
    ASSERT_EQ(ft_forward_ex(rt, &a, nullptr), FT_OK) << "valid call " << bases.size() << ": " << ft_last_error();
    ASSERT_FALSE(fake.Launches().empty());
    bases.push_back(a);
  }
  Tally tally;
  for (uint64_t seed = 0; seed < 4000; ++seed) {
    std::mt19937_64 rng(seed);
    ft_attention_args a = bases[seed % bases.size()];
    const std::string what = "seed " + std::to_string(seed) + ", base " + std::to_string(seed % bases.size()) +
                             ": " + MutateSome(&a, AttentionFields(), rng);

    int64_t bytes = -1;
    const int ws_rc = ft_workspace_size(rt, &a, &bytes);
    ASSERT_TRUE(ws_rc == FT_OK || IsRefusal(ws_rc)) << what << ": ft_workspace_size " << ws_rc << " " << ft_last_error();
    if (ws_rc == FT_OK) {
      ASSERT_GE(bytes, 0) << what;
    }
    ft_plan_info plan;
    const int plan_rc = ft_plan_ex(rt, &a, &plan);
    ASSERT_TRUE(plan_rc == FT_OK || IsRefusal(plan_rc)) << what << ": ft_plan_ex " << plan_rc << " " << ft_last_error();

    fake.Reset();
    const int rc = ft_forward_ex(rt, &a, nullptr);
    ASSERT_NO_FATAL_FAILURE(Judge(fake, rc, "ft_forward_ex", what, &tally));
  }
  // Both outcomes are exercised: the changes are not all fatal, nor all harmless.
  EXPECT_GT(tally.launched, 400);
  EXPECT_GT(tally.refused, 1000);
  RecordProperty("launched", tally.launched);
  RecordProperty("refused", tally.refused);
  RecordProperty("kernels", int(tally.kernels.size()));
  ft_runtime_close(rt);
}

TEST(FakeGpuFuzz, EveryBackwardCallLaunchesWhatTheDriverAcceptsOrIsRefusedWithoutALaunch) {
  FakeGpuRecord fake;
  TempDir dir;
  ASSERT_TRUE(flashtune::testing::UseFakeDevice(0));
  ft_runtime* rt = nullptr;
  ASSERT_EQ(ft_runtime_open((dir.path() + "/absent.db").c_str(), &rt), FT_OK) << ft_last_error();
  HostBuffers b;
  // B2 N300 Hq8 Hkv2 d128 causal, [B, N, H, D]; the gradients like their tensors.
  ft_backward_args base;
  std::memset(&base, 0, sizeof base);
  ft_forward_args& f = base.forward;
  f.problem = {FT_DTYPE_BF16, 128, 1, 2, 300, 300, 8, 2};
  const size_t q_bytes = 600 * 8 * 128 * 2, kv_bytes = 600 * 2 * 128 * 2;
  f.q = b.Get(q_bytes), f.o = b.Get(q_bytes), f.k = b.Get(kv_bytes), f.v = b.Get(kv_bytes);
  f.lse = static_cast<float*>(b.Get(2 * 8 * 300 * 4));
  base.d_o = b.Get(q_bytes), base.dq = b.Get(q_bytes), base.dk = b.Get(kv_bytes), base.dv = b.Get(kv_bytes);
  for (int64_t* s : {f.q_strides, f.o_strides, base.d_o_strides, base.dq_strides}) Set3(s, 300 * 8 * 128, 8 * 128, 128);
  for (int64_t* s : {f.k_strides, f.v_strides, base.dk_strides, base.dv_strides}) Set3(s, 300 * 2 * 128, 2 * 128, 128);
  int64_t bytes = 0;
  ASSERT_EQ(ft_backward_workspace_bytes(&f.problem, &bytes), FT_OK) << ft_last_error();
  base.workspace_bytes = bytes * 4;
  base.workspace = b.Get(size_t(base.workspace_bytes));
  fake.Reset();
  ASSERT_EQ(ft_backward(rt, &base, nullptr), FT_OK) << ft_last_error();
  ASSERT_FALSE(fake.Launches().empty());
  Tally tally;
  for (uint64_t seed = 0; seed < 1500; ++seed) {
    std::mt19937_64 rng(seed);
    ft_backward_args a = base;
    const std::string what = "seed " + std::to_string(seed) + ": " + MutateSome(&a, BackwardFields(), rng);
    fake.Reset();
    const int rc = ft_backward(rt, &a, nullptr);
    ASSERT_NO_FATAL_FAILURE(Judge(fake, rc, "ft_backward", what, &tally));
  }
  EXPECT_GT(tally.launched, 100);
  EXPECT_GT(tally.refused, 500);
  RecordProperty("launched", tally.launched);
  RecordProperty("refused", tally.refused);
  ft_runtime_close(rt);
}

}  // namespace
}  // namespace flashtune
