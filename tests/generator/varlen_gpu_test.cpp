// The varlen layout (packed q/k/v [total, H, D] with cu_seqlens) of fa2_fwd and hopper_fwd
// against the float64 CPU reference, sequence by sequence: ragged batches (lengths 0, 1, 17,
// 1000 and 4097 in one batch), Nq != Nk per sequence (rows that see no key, sequences with no
// key or no query), mixed prefill + decode batches (Nq = 1 beside long prefills), GQA 8:1 and
// MQA, causal and not, both dtypes, head dims 64/128/256. Outputs are poisoned (NaN) before
// each run, so an unwritten row fails; rows past total_q are a canary that must stay poisoned
// (no store past the packed tensor); lse [Hq, total_q] within 1e-3.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "flashtune/kernel.h"
#include "flashtune/reference.h"
#include "flashtune/space.h"
#include "generator/families/fa2_fwd.h"
#include "generator/family.h"
#include "tests/support/gpu_fixture.h"
#include "tests/support/variant_checks.h"

namespace flashtune {
namespace {

using testing::Gpu;

constexpr int64_t kCanaryRows = 64;  // poisoned rows of o after total_q

// One varlen call: packed host tensors, their device copies and the expected answer.
struct VarlenCase {
  std::string name;
  ForwardArgs device;
  std::vector<int32_t> cu_q, cu_k;
  std::vector<uint16_t> q, k, v;
  std::vector<double> expected_o, expected_lse;  // o [total_q, Hq, D], lse [Hq, total_q]
  std::vector<DeviceBuffer> buffers;             // q, k, v, o (+ canary rows), lse, cu_q, cu_k
};

std::vector<int32_t> Offsets(const std::vector<int32_t>& lengths) {
  std::vector<int32_t> cu(lengths.size() + 1, 0);
  for (size_t b = 0; b < lengths.size(); ++b) cu[b + 1] = cu[b] + lengths[b];
  return cu;
}

VarlenCase MakeVarlenCase(Gpu& gpu, const ProblemClass& cls, int64_t hq, int64_t hkv,
                          const std::vector<int32_t>& len_q, const std::vector<int32_t>& len_k, uint64_t seed) {
  VarlenCase c;
  const int d = cls.head_dim;
  const int64_t B = int64_t(len_q.size());
  c.cu_q = Offsets(len_q);
  c.cu_k = Offsets(len_k);
  const int64_t total_q = c.cu_q.back(), total_k = c.cu_k.back();
  const int64_t max_q = std::max<int64_t>(1, *std::max_element(len_q.begin(), len_q.end()));
  const int64_t max_k = std::max<int64_t>(1, *std::max_element(len_k.begin(), len_k.end()));
  Problem p{cls.dtype, d, cls.causal, B, max_q, max_k, hq, hkv};
  p.layout = Layout::kVarlen;
  ForwardArgs a = ForwardArgs::Contiguous(p);
  a.q_strides = a.o_strides = Strides{0, hq * d, d};
  a.k_strides = a.v_strides = Strides{0, hkv * d, d};
  a.varlen.total_q = total_q;
  a.varlen.total_k = total_k;
  c.name = p.ToString() + " q lengths";
  for (int32_t n : len_q) c.name += " " + std::to_string(n);
  c.name += ", k lengths";
  for (int32_t n : len_k) c.name += " " + std::to_string(n);
  EXPECT_TRUE(CheckCuSeqlensHost("cu_seqlens_q", c.cu_q, B, max_q, total_q).ok());
  EXPECT_TRUE(CheckCuSeqlensHost("cu_seqlens_k", c.cu_k, B, max_k, total_k).ok());
  c.q.resize(size_t(total_q * hq * d));
  c.k.resize(size_t(total_k * hkv * d));
  c.v.resize(c.k.size());
  FillRandom(c.q, cls.dtype, seed);
  FillRandom(c.k, cls.dtype, seed + 1);
  FillRandom(c.v, cls.dtype, seed + 2);
  // The reference, one dense batch-1 call per sequence over its own rows.
  c.expected_o.assign(c.q.size(), 0.0);
  c.expected_lse.assign(size_t(hq * total_q), -INFINITY);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t nq = len_q[size_t(b)], nk = len_k[size_t(b)];
    if (nq == 0 || nk == 0) continue;  // nothing, or rows with no key: o = 0, lse = -inf
    ForwardArgs one = ForwardArgs::Contiguous(Problem{cls.dtype, d, cls.causal, 1, nq, nk, hq, hkv});
    one.q = c.q.data() + c.cu_q[size_t(b)] * hq * d;
    one.k = c.k.data() + c.cu_k[size_t(b)] * hkv * d;
    one.v = c.v.data() + c.cu_k[size_t(b)] * hkv * d;
    auto ref = ReferenceForward(one);
    EXPECT_TRUE(ref.ok()) << ref.status().ToString();
    if (!ref.ok()) continue;
    std::copy(ref->o.begin(), ref->o.end(), c.expected_o.begin() + c.cu_q[size_t(b)] * hq * d);
    for (int64_t h = 0; h < hq; ++h)
      for (int64_t i = 0; i < nq; ++i) c.expected_lse[size_t(h * total_q + c.cu_q[size_t(b)] + i)] = ref->lse[size_t(h * nq + i)];
  }
  auto upload = [&](const void* host, size_t bytes) -> CUdeviceptr {
    auto b = testing::Upload(gpu, host, bytes);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    if (!b.ok()) return 0;
    c.buffers.push_back(std::move(*b));
    return c.buffers.back().get();
  };
  a.q = reinterpret_cast<const void*>(upload(c.q.data(), c.q.size() * 2));
  a.k = reinterpret_cast<const void*>(upload(c.k.data(), c.k.size() * 2));
  a.v = reinterpret_cast<const void*>(upload(c.v.data(), c.v.size() * 2));
  a.o = reinterpret_cast<void*>(upload(nullptr, size_t((total_q + kCanaryRows) * hq * d * 2)));
  a.lse = reinterpret_cast<float*>(upload(nullptr, c.expected_lse.size() * 4));
  a.varlen.cu_seqlens_q = reinterpret_cast<const int32_t*>(upload(c.cu_q.data(), c.cu_q.size() * 4));
  a.varlen.cu_seqlens_k = reinterpret_cast<const int32_t*>(upload(c.cu_k.data(), c.cu_k.size() * 4));
  c.device = a;
  return c;
}

// "" when `kernel` reproduces the reference on `c` and leaves the canary rows alone, else why not.
std::string RunVarlen(Gpu& gpu, const ForwardKernel& kernel, VarlenCase& c) {
  const std::string launched = testing::LaunchPoisoned(gpu, kernel, c.device, c.buffers[3], c.buffers[4]);
  if (!launched.empty()) return launched;
  const size_t row = size_t(c.device.problem.heads_q * c.device.problem.head_dim);
  std::vector<uint16_t> o(c.q.size() + kCanaryRows * row);
  std::vector<float> lse(c.expected_lse.size());
  if (!c.buffers[3].CopyToHost(o.data(), o.size() * 2).ok() || !c.buffers[4].CopyToHost(lse.data(), lse.size() * 4).ok())
    return "copy back failed";
  for (size_t i = c.q.size(); i < o.size(); ++i)
    if (o[i] != 0xFFFF) return c.name + ": wrote past total_q (canary row " + std::to_string((i - c.q.size()) / row) + ")";
  std::vector<double> got(c.q.size());
  for (size_t i = 0; i < got.size(); ++i) got[i] = BitsToFloat(o[i], c.device.problem.dtype);
  const std::string why = testing::CompareWithReference(c.device.problem.dtype, got, lse, c.expected_o, c.expected_lse);
  return why.empty() ? "" : c.name + ": " + why;
}

// The cases of one class: ragged (0, 1, 17, 1000, 4097; Nq = Nk per sequence; two query heads
// on one K/V head, so the 4097-row reference stays cheap), Nq != Nk per sequence with GQA 8:1
// (a sequence with no query, one with no key, rows before the causal diagonal that see no
// key), and a mixed prefill + decode batch with MQA.
std::vector<VarlenCase> MakeCases(Gpu& gpu, const ProblemClass& cls) {
  std::vector<VarlenCase> cases;
  uint64_t seed = 900 + uint64_t(cls.head_dim) + (cls.causal ? 7 : 0) + (cls.dtype == DType::kBF16 ? 3 : 0);
  const std::vector<int32_t> ragged = {0, 1, 17, 1000, 4097};
  cases.push_back(MakeVarlenCase(gpu, cls, 2, 1, ragged, ragged, seed += 10));
  cases.push_back(MakeVarlenCase(gpu, cls, 16, 2, {17, 1000, 0, 5, 300, 129}, {1000, 17, 33, 0, 1, 129}, seed += 10));
  cases.push_back(MakeVarlenCase(gpu, cls, 8, 1, {1, 1, 700, 1, 64, 1, 16}, {4097, 33, 700, 1, 1000, 0, 16}, seed += 10));
  return cases;
}

// Compiles `variants` and runs each on every case of the class.
void CheckVarlen(const ProblemClass& cls, const std::vector<Variant>& variants) {
  auto gpu = testing::GetGpu();
  if (!gpu.ok()) GTEST_SKIP() << "no GPU to run on: " << gpu.status().ToString();
  std::vector<Variant> runnable;
  for (const Variant& v : variants)
    if (v.family != "hopper_fwd" || (*gpu)->info.Arch() == "sm_90a") runnable.push_back(v);  // sm_90a only
  auto kernels = testing::CompileAndLoad(**gpu, runnable);
  std::vector<VarlenCase> cases = MakeCases(**gpu, cls);
  testing::CheckEveryVariant(cls.ToString() + " varlen", runnable, kernels, cases,
                             [&](const ForwardKernel& k, VarlenCase& c) { return RunVarlen(**gpu, k, c); });
}

class VarlenClasses : public ::testing::TestWithParam<std::tuple<DType, int, bool>> {};

// Each family's default, a 64-row fa2_fwd tile, and the hopper_fwd persistent scheduler (a
// block walks tiles past shorter sequences' ends) with one consumer warpgroup at d64 and without
// overlap or ping-pong elsewhere.
TEST_P(VarlenClasses, VariantsMatchTheReference) {
  const auto [dtype, head_dim, causal] = GetParam();
  const ProblemClass cls{dtype, head_dim, causal};
  const std::string mask = causal ? "_causal" : "_full";
  const std::string hopper_alt = head_dim == 64    ? "d64_bm64_bn128_wg1_s2_p1_pp0_ov1"
                                 : head_dim == 128 ? "d128_bm128_bn128_wg2_s2_p1_pp0_ov0"
                                                   : "d256_bm128_bn80_wg2_s2_p1_pp1_ov0";
  auto persistent = Variant::FromUri("hopper_fwd_" + std::string(DTypeName(dtype)) + "_" + hopper_alt + mask);
  ASSERT_TRUE(persistent.ok()) << persistent.status().ToString();
  std::vector<Variant> variants = {FindFamily("fa2_fwd")->Default(cls, Target{}),
                                   Fa2Variant(dtype, head_dim, causal, 64, head_dim > 128 ? 32 : 64, 4, 2),
                                   FindFamily("hopper_fwd")->Default(cls, Target{}), *persistent};
  for (const Variant& v : variants) ASSERT_TRUE(CheckVariant(v).ok()) << CheckVariant(v).ToString();
  CheckVarlen(cls, variants);
}

INSTANTIATE_TEST_SUITE_P(VarlenGpu, VarlenClasses,
                         ::testing::Combine(::testing::Values(DType::kBF16, DType::kF16), ::testing::Values(64, 128, 256),
                                            ::testing::Bool()));

}  // namespace
}  // namespace flashtune
