// decode_fwd against the float64 CPU reference: ragged batches (0, 1, 17, 1000 and 4097 keys
// in one batch), paged K/V with shuffled pages of 16 and 256 keys, dense K/V with and without
// per-sequence lengths, GQA 8:1 and MQA, 1 to 16 query rows with and without causal, both
// dtypes, head dims 64/128/256, variants that split the keys (combine kernel) and that do not.
// Outputs are poisoned (NaN) before each run, so an unwritten element fails; lse must match
// within 1e-3 after the merge. The same cases with more query rows check the prefill kernels
// that read a cache: fa2_paged and (on sm_90a) hopper_paged on pages, fa2_fwd and (on sm_90a)
// hopper_paged on a dense cache with per-sequence lengths. Every cache row past a sequence's keys holds NaN (a stale or
// uninitialised cache), and a padded table's unused entries an index no page has, so a kernel
// that reads either (or lets P = 0 times a NaN through) fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "flashtune/driver.h"
#include "flashtune/kernel.h"
#include "flashtune/reference.h"
#include "flashtune/space.h"
#include "generator/families/decode_fwd.h"
#include "generator/families/fa2_fwd.h"
#include "jit/cuda_api.h"
#include "generator/family.h"
#include "tests/support/gpu_fixture.h"
#include "tests/support/variant_checks.h"

namespace flashtune {
namespace {

using testing::Gpu;

// One call: host tensors, their device copies and the expected answer.
struct DecodeCase {
  std::string name;
  ForwardArgs device;
  std::vector<uint16_t> q, k, v;
  std::vector<int32_t> table, lengths;
  std::vector<double> expected_o, expected_lse;
  std::vector<DeviceBuffer> buffers;  // q, k, v, o, lse, table, lengths, workspace
};

DeviceBuffer Upload(Gpu& gpu, const void* host, size_t bytes) {
  auto b = testing::Upload(gpu, host, bytes);
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  return std::move(*b);
}

// Builds a case: `lengths` keys per sequence; block_size 0 means dense K/V ([B, Nk, Hkv, D],
// with seqlens_k unless every sequence is full), else a paged pool with shuffled pages.
// key_ramp > 0 scales a sequence's key j by 1 + key_ramp * (n - 1 - j) / (n - 1): the splits'
// partial maxima then differ by up to thousands of units, so the combine weighs partials whose
// exp2 factors underflow, not the near-equal ones uniform inputs give.
DecodeCase MakeDecodeCase(Gpu& gpu, DType dtype, int d, bool causal, int64_t nq, int64_t hq, int64_t hkv,
                          const std::vector<int32_t>& lengths, int block_size, uint64_t seed, double key_ramp = 0) {
  DecodeCase c;
  const int64_t B = int64_t(lengths.size());
  const int64_t nk = std::max<int64_t>(1, *std::max_element(lengths.begin(), lengths.end()));
  Problem p{dtype, d, causal, B, nq, nk, hq, hkv};
  p.layout = block_size > 0 ? Layout::kPaged : Layout::kDense;
  ForwardArgs a = ForwardArgs::Contiguous(p, std::max(block_size, 1));
  char name[160];
  std::snprintf(name, sizeof name, "%s d%d %s Nq%lld Hq%lld Hkv%lld B%lld %s%d%s", std::string(DTypeName(dtype)).c_str(), d,
                causal ? "causal" : "full", (long long)nq, (long long)hq, (long long)hkv, (long long)B,
                block_size > 0 ? "paged" : "dense", block_size, testing::KeyRampText(key_ramp).c_str());
  c.name = name;
  c.lengths = lengths;
  c.q.resize(size_t(B * nq * hq * d));
  FillRandom(c.q, dtype, seed);
  const int64_t row = hkv * d;  // elements per key
  // Logical K/V per sequence, [B][nk][hkv][d], random; the device layout is built from it.
  std::vector<uint16_t> k_logical(size_t(B * nk * row)), v_logical(k_logical.size());
  FillRandom(k_logical, dtype, seed + 1);
  FillRandom(v_logical, dtype, seed + 2);
  if (key_ramp > 0)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < lengths[size_t(b)]; ++j)
        testing::ApplyKeyRamp(k_logical.data() + (b * nk + j) * row, row, dtype, key_ramp, j, lengths[size_t(b)]);
  std::mt19937 rng{uint32_t(seed)};
  const uint16_t nan_bits = FloatToBits(NAN, dtype);
  if (block_size > 0) {
    int64_t pages = 0;
    for (int32_t n : lengths) pages += (n + block_size - 1) / block_size;
    a.paged.num_blocks = pages + 3;  // spare pages nobody uses
    std::vector<int32_t> order(size_t(a.paged.num_blocks));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    a.paged.block_table_stride = a.paged.max_blocks_per_seq + 1;  // a padded table
    c.table.assign(size_t(B * a.paged.block_table_stride), -7);   // unused entries must never be read
    c.k.assign(size_t(a.paged.num_blocks * block_size * row), nan_bits);  // rows no sequence has
    c.v.assign(c.k.size(), nan_bits);
    size_t next = 0;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < (lengths[size_t(b)] + block_size - 1) / block_size; ++j) {
        const int32_t page = order[next++];
        c.table[size_t(b * a.paged.block_table_stride + j)] = page;
        for (int64_t t = 0; t < block_size && j * block_size + t < lengths[size_t(b)]; ++t) {
          const size_t src = size_t((b * nk + j * block_size + t) * row), dst = size_t((page * block_size + t) * row);
          std::copy_n(k_logical.begin() + src, row, c.k.begin() + dst);
          std::copy_n(v_logical.begin() + src, row, c.v.begin() + dst);
        }
      }
    EXPECT_TRUE(CheckPagedKvHost(a, c.table, c.lengths).ok());
  } else {
    c.k = k_logical;
    c.v = v_logical;
    for (int64_t b = 0; b < B; ++b)  // keys past a sequence's length
      for (int64_t j = lengths[size_t(b)]; j < nk; ++j) {
        std::fill_n(c.k.begin() + (b * nk + j) * row, row, nan_bits);
        std::fill_n(c.v.begin() + (b * nk + j) * row, row, nan_bits);
      }
  }
  // The reference, sequence by sequence over its own keys.
  c.expected_o.assign(c.q.size(), 0.0);
  c.expected_lse.assign(size_t(B * hq * nq), -INFINITY);
  for (int64_t b = 0; b < B; ++b) {
    const int32_t n = lengths[size_t(b)];
    if (n == 0) continue;  // no key: o = 0, lse = -inf
    ForwardArgs one = ForwardArgs::Contiguous(Problem{dtype, d, causal, 1, nq, n, hq, hkv});
    one.q = c.q.data() + b * nq * hq * d;
    one.k = k_logical.data() + b * nk * row;
    one.v = v_logical.data() + b * nk * row;
    auto ref = ReferenceForward(one);
    EXPECT_TRUE(ref.ok()) << ref.status().ToString();
    if (!ref.ok()) continue;
    std::copy(ref->o.begin(), ref->o.end(), c.expected_o.begin() + b * nq * hq * d);
    std::copy(ref->lse.begin(), ref->lse.end(), c.expected_lse.begin() + b * hq * nq);
  }
  // Device copies.
  c.buffers.push_back(Upload(gpu, c.q.data(), c.q.size() * 2));
  c.buffers.push_back(Upload(gpu, c.k.data(), c.k.size() * 2));
  c.buffers.push_back(Upload(gpu, c.v.data(), c.v.size() * 2));
  c.buffers.push_back(Upload(gpu, nullptr, c.q.size() * 2));
  c.buffers.push_back(Upload(gpu, nullptr, c.expected_lse.size() * 4));
  c.buffers.push_back(Upload(gpu, c.table.data(), c.table.size() * 4));
  c.buffers.push_back(Upload(gpu, c.lengths.data(), c.lengths.size() * 4));
  const int64_t ws = WorkspaceBytes(p, gpu.info.sm_count);
  c.buffers.push_back(Upload(gpu, nullptr, size_t(ws)));
  a.q = reinterpret_cast<const void*>(c.buffers[0].get());
  a.k = reinterpret_cast<const void*>(c.buffers[1].get());
  a.v = reinterpret_cast<const void*>(c.buffers[2].get());
  a.o = reinterpret_cast<void*>(c.buffers[3].get());
  a.lse = reinterpret_cast<float*>(c.buffers[4].get());
  if (block_size > 0) a.paged.block_table = reinterpret_cast<const int32_t*>(c.buffers[5].get());
  const bool full = std::all_of(lengths.begin(), lengths.end(), [&](int32_t n) { return n == nk; });
  if (block_size > 0 || !full) a.seqlens_k = reinterpret_cast<const int32_t*>(c.buffers[6].get());
  a.workspace = reinterpret_cast<void*>(c.buffers[7].get());
  a.workspace_bytes = ws;
  c.device = a;
  return c;
}

// "" when `kernel` reproduces the reference on `c`, else why not.
std::string RunDecode(Gpu& gpu, const ForwardKernel& kernel, DecodeCase& c) {
  const std::string launched = testing::LaunchPoisoned(gpu, kernel, c.device, c.buffers[3], c.buffers[4]);
  if (!launched.empty()) return launched;
  std::vector<uint16_t> o(c.q.size());
  std::vector<float> lse(c.expected_lse.size());
  if (!c.buffers[3].CopyToHost(o.data(), o.size() * 2).ok() || !c.buffers[4].CopyToHost(lse.data(), lse.size() * 4).ok())
    return "copy back failed";
  std::vector<double> got(o.size());
  for (size_t i = 0; i < o.size(); ++i) got[i] = BitsToFloat(o[i], c.device.problem.dtype);
  const std::string why = testing::CompareWithReference(c.device.problem.dtype, got, lse, c.expected_o, c.expected_lse);
  return why.empty() ? "" : c.name + ": " + why;
}

// Compiles `variants` (dense K/V tiles) and each one's paged twin (kv1), and runs each tile on
// every case of the class: the dense kernel on dense cases, its twin on paged ones.
void CheckDecode(const ProblemClass& cls, const std::vector<Variant>& variants) {
  std::vector<Variant> twins;
  for (Variant v : variants) {
    EXPECT_EQ(v.Param("kv"), 0) << v.Uri();
    v.SetParam("kv", 1);
    twins.push_back(v);
  }
  ASSERT_NO_FATAL_FAILURE(testing::AssertValid(twins));
  auto gpu = testing::GetGpu();
  if (!gpu.ok()) GTEST_SKIP() << "no GPU to run on: " << gpu.status().ToString();
  auto kernels = testing::CompileAndLoad(**gpu, variants);
  auto paged_kernels = testing::CompileAndLoad(**gpu, twins);
  std::map<const ForwardKernel*, const ForwardKernel*> twin_of;
  for (size_t i = 0; i < variants.size(); ++i) {
    ASSERT_EQ(kernels[i].ok(), paged_kernels[i].ok()) << twins[i].Uri() << ": " << paged_kernels[i].status().ToString();
    if (kernels[i].ok()) twin_of[&*kernels[i]] = &*paged_kernels[i];
  }
  const std::vector<int32_t> ragged = {0, 1, 17, 1000, 4097};
  std::vector<DecodeCase> cases;
  uint64_t seed = 500 + uint64_t(cls.head_dim) + (cls.causal ? 7 : 0);
  for (int64_t nq : {1, 4, 16}) {
    // MQA (8 query heads on one K/V head) in 16-key pages, GQA 8:1 in 256-key pages.
    cases.push_back(MakeDecodeCase(**gpu, cls.dtype, cls.head_dim, cls.causal, nq, 8, 1, ragged, 16, seed += 10));
    cases.push_back(MakeDecodeCase(**gpu, cls.dtype, cls.head_dim, cls.causal, nq, 16, 2, ragged, 256, seed += 10));
  }
  cases.push_back(MakeDecodeCase(**gpu, cls.dtype, cls.head_dim, cls.causal, 3, 8, 1, ragged, 0, seed += 10));
  cases.push_back(MakeDecodeCase(**gpu, cls.dtype, cls.head_dim, cls.causal, 1, 16, 2, {300, 300}, 0, seed += 10));
  cases.push_back(MakeDecodeCase(**gpu, cls.dtype, cls.head_dim, cls.causal, 2, 32, 8, {2048}, 1, seed += 10));
  // Scores growing along the keys: splits with far apart maxima, dense and paged.
  cases.push_back(MakeDecodeCase(**gpu, cls.dtype, cls.head_dim, cls.causal, 4, 8, 1, {4097, 1000}, 0, seed += 10, 60));
  cases.push_back(MakeDecodeCase(**gpu, cls.dtype, cls.head_dim, cls.causal, 1, 16, 2, {17, 4097}, 16, seed += 10, 8));
  // GQA 4:1 at 3 tokens: 12 rows, so a 16-row tile's second half holds rows 8-11 only, and a
  // 32-row tile (rm2) has an empty second tile (the kernel skips halves with no valid row).
  cases.push_back(MakeDecodeCase(**gpu, cls.dtype, cls.head_dim, cls.causal, 3, 32, 8, {1000, 17}, 16, seed += 10));
  testing::CheckEveryVariant(cls.ToString() + " decode", variants, kernels, cases, [&](const ForwardKernel& k, DecodeCase& c) {
    return RunDecode(**gpu, c.device.problem.layout == Layout::kPaged ? *twin_of.at(&k) : k, c);
  });
}

class DecodeClasses : public ::testing::TestWithParam<std::tuple<DType, int, bool>> {};

// The default, the tile a long paged call gets untuned (where it differs from the default:
// head dims up to 64), and variants that split into many (cs4, short steps) or few blocks, with
// the extremes of warps, stages and row tiles the head dim allows.
TEST_P(DecodeClasses, VariantsMatchTheReference) {
  const auto [dtype, head_dim, causal] = GetParam();
  const ProblemClass cls{dtype, head_dim, causal};
  const Family& family = *FindFamily("decode_fwd");
  std::vector<Variant> variants = {family.Default(cls, Target{}),
                                   DecodeVariant(dtype, head_dim, causal, 32, 1, 2, 2, 4),
                                   head_dim <= 128 ? DecodeVariant(dtype, head_dim, causal, 128, 2, 8, 2, 1)
                                                   : DecodeVariant(dtype, head_dim, causal, 64, 1, 4, 2, 1)};
  if (head_dim == 64) variants.push_back(DecodeVariant(dtype, head_dim, causal, 64, 4, 4, 4, 2));
  Problem long_paged{dtype, head_dim, causal, 64, 1, 32768, 32, 8};
  long_paged.layout = Layout::kPaged;
  Variant paged_default = family.DefaultFor(long_paged, Target{});
  paged_default.SetParam("kv", 0);  // CheckDecode runs its paged twin on the paged cases
  if (std::find_if(variants.begin(), variants.end(), [&](const Variant& v) { return v.Uri() == paged_default.Uri(); }) ==
      variants.end())
    variants.push_back(paged_default);
  ASSERT_NO_FATAL_FAILURE(testing::AssertValid(variants));
  CheckDecode(cls, variants);
}

// Split calls back to back in a CUDA graph, each kernel a programmatic dependent of the one
// before it (sm_90+): the second call's queries are the first call's output and both share one
// workspace, so a broken order (a split kernel reading q before the previous combine wrote it,
// overwriting partials the previous combine still reads, or a combine reading partials before
// its split kernel is done) changes the outputs. They must equal the eager calls' bit for bit.
TEST(DecodeGpu, SplitCallsReplayedFromAGraphMatchEagerCalls) {
  auto gpu = testing::GetGpu();
  if (!gpu.ok()) GTEST_SKIP() << "no GPU to run on: " << gpu.status().ToString();
  const ProblemClass cls{DType::kBF16, 128, false};
  const Variant v = FindFamily("decode_fwd")->Default(cls, Target{});
  auto kernels = testing::CompileAndLoad(**gpu, {v});
  ASSERT_TRUE(kernels[0].ok()) << kernels[0].status().ToString();
  const ForwardKernel& kernel = *kernels[0];
  // B1 x 8192 keys, Hq 32 on Hkv 8: 8 blocks before splitting, so the keys are split.
  std::vector<DecodeCase> cases;
  for (uint64_t seed : {901, 902}) cases.push_back(MakeDecodeCase(**gpu, cls.dtype, 128, false, 1, 32, 8, {8192}, 0, seed));
  ASSERT_GT(detail::DecodeSplits(cases[0].device.problem, (*gpu)->info.sm_count, 64, 1, 2), 1);
  cases[1].device.q = cases[0].device.o;                  // call 2 reads what call 1 wrote
  cases[1].device.workspace = cases[0].device.workspace;  // shared: calls must not overlap
  ASSERT_EQ(RunDecode(**gpu, kernel, cases[0]), "");
  ASSERT_TRUE(kernel.Launch(cases[1].device, (*gpu)->stream->get()).ok());
  ASSERT_TRUE((*gpu)->stream->Synchronize().ok());
  std::vector<std::vector<uint16_t>> eager;
  for (DecodeCase& c : cases) {
    eager.emplace_back(c.q.size());
    ASSERT_TRUE(c.buffers[3].CopyToHost(eager.back().data(), eager.back().size() * 2).ok());
  }
  const detail::CudaApi& api = (*gpu)->driver->api();
  CUstream stream = (*gpu)->stream->get();
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  ASSERT_EQ(api.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  Status captured = Status::Ok();
  for (int i = 0; i < 8 && captured.ok(); ++i) captured = kernel.Launch(cases[size_t(i % 2)].device, stream);
  ASSERT_EQ(api.cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
  ASSERT_TRUE(captured.ok()) << captured.ToString();
  ASSERT_EQ(api.cuGraphInstantiate(&exec, graph, 0), CUDA_SUCCESS);
  for (DecodeCase& c : cases) ASSERT_TRUE(c.buffers[3].Memset(0xFF).ok());  // NaN until written
  for (int r = 0; r < 3; ++r) ASSERT_EQ(api.cuGraphLaunch(exec, stream), CUDA_SUCCESS);
  ASSERT_TRUE((*gpu)->stream->Synchronize().ok());
  api.cuGraphExecDestroy(exec);
  api.cuGraphDestroy(graph);
  for (size_t i = 0; i < cases.size(); ++i) {
    std::vector<uint16_t> o(cases[i].q.size());
    ASSERT_TRUE(cases[i].buffers[3].CopyToHost(o.data(), o.size() * 2).ok());
    EXPECT_EQ(o, eager[i]) << "call " << i + 1 << " (" << cases[i].name << "): the graph's output differs from the eager call's";
  }
}

// Prefill over a cache (chunked prefill, prefix caching): 17 to 300 new queries a sequence
// over ragged caches (0-4097 keys, so causal rows that see no key too), on fa2_paged's kernels
// (pages of 1, 16 and 256 keys, shuffled) and on fa2_fwd's with per-sequence lengths (a dense
// cache, flash_attn_with_kvcache's cache_seqlens): each tile and its paged twin.
class CachePrefillClasses : public ::testing::TestWithParam<std::tuple<DType, int, bool>> {};

TEST_P(CachePrefillClasses, VariantsMatchTheReference) {
  const auto [dtype, head_dim, causal] = GetParam();
  const ProblemClass cls{dtype, head_dim, causal};
  // The default tile, one block_m 64 with 32-key steps and one stage, and a wide one with 8
  // warps (3 stages where the shared memory allows).
  std::vector<Variant> dense = {FindFamily("fa2_fwd")->Default(cls, Target{}),
                                Fa2Variant(dtype, head_dim, causal, 64, 32, 4, 1),
                                head_dim == 64    ? Fa2Variant(dtype, head_dim, causal, 128, 128, 8, 3)
                                : head_dim == 128 ? Fa2Variant(dtype, head_dim, causal, 128, 128, 8, 2)
                                                  : Fa2Variant(dtype, head_dim, causal, 128, 64, 8, 2)};
  ASSERT_NO_FATAL_FAILURE(testing::AssertValid(dense));
  std::vector<Variant> paged;
  for (const Variant& v : dense) {
    ASSERT_EQ(v.family, "fa2_fwd");
    paged.push_back(Fa2Variant(dtype, head_dim, causal, v.Param("br"), v.Param("bc"), v.Param("w"), v.Param("s"), true));
  }
  ASSERT_NO_FATAL_FAILURE(testing::AssertValid(paged));
  // hopper_paged, checked before the GPU is asked for (a tile that does not fit fails on any
  // machine): the class default (three stages at d128), its persistent twin (two stages), and a
  // second key block (up to d128 one that is not a power of two: TMA boxes of 16 rows at any page
  // size; d64: 32-row boxes, 3 a block; past d128 the default's 80 are, so 64) and, at d64, one
  // consumer warpgroup without the overlap; on pages of 16, 32 and 256 keys (its TMA boxes need
  // 16 or more: pages of 1 are fa2_paged's, CanRun says).
  const Family& hp = *FindFamily("hopper_paged");
  const Target sm90a{"sm_90a", MaxSharedMemoryForArch("sm_90a")};
  std::vector<Variant> hopper = {hp.Default(cls, sm90a), hp.Default(cls, sm90a)};
  // Two Q buffers (p2) where they fit: not at d160 (its default's 96-key blocks) nor d224 / d256.
  hopper[1].SetParam("s", 2);
  hopper[1].SetParam("p", 2);
  if (!CheckVariant(hopper[1]).ok()) hopper[1].SetParam("p", 1);
  Variant odd = hp.Default(cls, sm90a);
  // d96: d128's tiles; past d128 the default's blocks are 80 keys already, so 64 for a second tile
  odd.SetParam("bn", head_dim == 64 ? 96 : head_dim <= 128 ? 176 : 64);
  odd.SetParam("s", 2);
  hopper.push_back(odd);
  if (head_dim == 64) {
    Variant one = hp.Default(cls, sm90a);
    for (auto [name, value] : {std::pair{"bm", 64}, {"bn", 64}, {"wg", 1}, {"ov", 0}}) one.SetParam(name, value);
    hopper.push_back(one);
  }
  // The two-Q-buffer tile's claiming twin (p3), which a paged call runs in its place.
  if (hopper[1].Param("p") == 2) {
    Variant twin = hopper[1];
    twin.SetParam("p", 3);
    hopper.push_back(twin);
  }
  // d64: 256x64 over four consumer warpgroups (three stages, the split tail), as a short paged
  // stream runs it: claimed.
  if (head_dim == 64) {
    Variant four = hp.Default(cls, sm90a);
    for (auto [name, value] : {std::pair{"bm", 256}, {"bn", 64}, {"wg", 4}, {"s", 3}, {"p", 3}, {"ov", 1}})
      four.SetParam(name, value);
    hopper.push_back(four);
  }
  ASSERT_NO_FATAL_FAILURE(testing::AssertValid(hopper));
  auto gpu = testing::GetGpu();
  if (!gpu.ok()) GTEST_SKIP() << "no GPU to run on: " << gpu.status().ToString();
  auto dense_kernels = testing::CompileAndLoad(**gpu, dense);
  auto paged_kernels = testing::CompileAndLoad(**gpu, paged);
  // Sizes kept so the float64 reference stays within seconds.
  const std::vector<int32_t> ragged = {0, 1, 17, 300, 1000};
  uint64_t seed = 700 + uint64_t(head_dim) + (causal ? 7 : 0);
  std::vector<DecodeCase> dense_cases, paged_cases;
  dense_cases.push_back(MakeDecodeCase(**gpu, dtype, head_dim, causal, 130, 8, 1, ragged, 0, seed += 10));
  dense_cases.push_back(MakeDecodeCase(**gpu, dtype, head_dim, causal, 17, 16, 2, {300, 64}, 0, seed += 10));
  paged_cases.push_back(MakeDecodeCase(**gpu, dtype, head_dim, causal, 130, 8, 1, ragged, 16, seed += 10));
  paged_cases.push_back(MakeDecodeCase(**gpu, dtype, head_dim, causal, 20, 16, 2, {4097, 300, 0}, 256, seed += 10));
  paged_cases.push_back(MakeDecodeCase(**gpu, dtype, head_dim, causal, 40, 8, 8, {33, 200}, 1, seed += 10));
  testing::CheckEveryVariant(cls.ToString() + " dense cache with lengths", dense, dense_kernels, dense_cases,
                             [&](const ForwardKernel& k, DecodeCase& c) { return RunDecode(**gpu, k, c); });
  testing::CheckEveryVariant(cls.ToString() + " paged prefill", paged, paged_kernels, paged_cases,
                             [&](const ForwardKernel& k, DecodeCase& c) { return RunDecode(**gpu, k, c); });
  if ((*gpu)->info.Arch() != "sm_90a") return;  // hopper_paged has no kernels elsewhere
  auto hopper_kernels = testing::CompileAndLoad(**gpu, hopper);
  std::vector<DecodeCase> hopper_cases;
  hopper_cases.push_back(std::move(paged_cases[0]));
  hopper_cases.push_back(std::move(paged_cases[1]));
  hopper_cases.push_back(MakeDecodeCase(**gpu, dtype, head_dim, causal, 200, 8, 8, {333, 64, 1}, 32, seed += 10));
  // 24 sequences of 64 new tokens over 0 to 1000 keys and 64 query heads: the case with tiles
  // enough for the p3 twin to claim them (on the others it deals them statically).
  std::vector<int32_t> many(24);
  for (size_t i = 0; i < many.size(); ++i) many[i] = int32_t(i * 211 % 1001);
  hopper_cases.push_back(MakeDecodeCase(**gpu, dtype, head_dim, causal, 64, 64, 8, many, 16, seed += 10));
  for (const Variant& v : hopper)
    for (size_t i = 0; i < hopper_cases.size(); ++i) {
      LaunchPacket packet;
      packet.sm_count = (*gpu)->info.sm_count;
      hp.Pack(v, hopper_cases[i].device, &packet);
      EXPECT_EQ(packet.zero_bytes > 0, v.Param("p") == 3 && i + 1 == hopper_cases.size()) << v.Uri() << ", case " << i;
    }
  testing::CheckEveryVariant(cls.ToString() + " hopper_paged", hopper, hopper_kernels, hopper_cases,
                             [&](const ForwardKernel& k, DecodeCase& c) { return RunDecode(**gpu, k, c); });
  // The same kernels on a dense cache with lengths (one page a sequence, no table), as forward()
  // runs a tuned hopper_fwd tile there: the ragged batch with NaN past every sequence's keys,
  // and a cache whose rows (1000) are not whole boxes.
  dense_cases.push_back(MakeDecodeCase(**gpu, dtype, head_dim, causal, 200, 8, 8, {1000, 333, 64, 1}, 0, seed += 10));
  testing::CheckEveryVariant(cls.ToString() + " hopper_paged on a dense cache with lengths", hopper, hopper_kernels,
                             dense_cases, [&](const ForwardKernel& k, DecodeCase& c) { return RunDecode(**gpu, k, c); });
}

// d96 / d160 / d224: hopper_paged on the next whole 64-column chunks' tiles, P V at the tensors'
// width (the padded columns of Q and K read as zeros).
INSTANTIATE_TEST_SUITE_P(CachePrefillGpu, CachePrefillClasses,
                         ::testing::Combine(::testing::Values(DType::kBF16, DType::kF16),
                                            ::testing::Values(64, 96, 128, 160, 224, 256),
                                            ::testing::Bool()));

INSTANTIATE_TEST_SUITE_P(DecodeGpu, DecodeClasses,
                         ::testing::Combine(::testing::Values(DType::kBF16, DType::kF16), ::testing::Values(64, 128, 256),
                                            ::testing::Bool()));

}  // namespace
}  // namespace flashtune
