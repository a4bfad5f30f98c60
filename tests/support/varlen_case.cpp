// The varlen test call (tests/support/varlen_case.h).
#include "tests/support/varlen_case.h"

#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "flashtune/reference.h"

namespace flashtune::testing {

namespace {

std::vector<int32_t> Offsets(const std::vector<int32_t>& lengths) {
  std::vector<int32_t> cu(lengths.size() + 1, 0);
  for (size_t b = 0; b < lengths.size(); ++b) cu[b + 1] = cu[b] + lengths[b];
  return cu;
}

}  // namespace

VarlenCase MakeVarlenCase(Gpu& gpu, const ProblemClass& cls, int64_t hq, int64_t hkv, const std::vector<int32_t>& len_q,
                          const std::vector<int32_t>& len_k, uint64_t seed) {
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
  // (Appended in two steps: GCC 12 warns -Wrestrict, falsely, on `" " + std::to_string(n)`.)
  for (int32_t n : len_q) c.name.append(" ").append(std::to_string(n));
  c.name += ", k lengths";
  for (int32_t n : len_k) c.name.append(" ").append(std::to_string(n));
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
    auto b = Upload(gpu, host, bytes);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    if (!b.ok()) return 0;
    c.buffers.push_back(std::move(*b));
    return c.buffers.back().get();
  };
  a.q = reinterpret_cast<const void*>(upload(c.q.data(), c.q.size() * 2));
  a.k = reinterpret_cast<const void*>(upload(c.k.data(), c.k.size() * 2));
  a.v = reinterpret_cast<const void*>(upload(c.v.data(), c.v.size() * 2));
  a.o = reinterpret_cast<void*>(upload(nullptr, size_t((total_q + kVarlenCanaryRows) * hq * d * 2)));
  a.lse = reinterpret_cast<float*>(upload(nullptr, c.expected_lse.size() * 4));
  a.varlen.cu_seqlens_q = reinterpret_cast<const int32_t*>(upload(c.cu_q.data(), c.cu_q.size() * 4));
  a.varlen.cu_seqlens_k = reinterpret_cast<const int32_t*>(upload(c.cu_k.data(), c.cu_k.size() * 4));
  a.workspace_bytes = WorkspaceBytes(p, gpu.info.sm_count);  // decode_fwd's split partials
  if (a.workspace_bytes > 0) a.workspace = reinterpret_cast<void*>(upload(nullptr, size_t(a.workspace_bytes)));
  c.device = a;
  return c;
}

std::vector<int32_t> ShortSequenceLengths() {
  std::vector<int32_t> lengths(48);
  for (size_t i = 0; i < lengths.size(); ++i) lengths[i] = int32_t(i * 37 % 300);
  return lengths;
}

// (A case whose uploads failed, MakeVarlenCase's failures said why, has no buffers to fill.)
bool PoisonVarlen(VarlenCase& c) {
  return c.buffers.size() > 4 && c.o().Memset(0xFF).ok() && c.lse().Memset(0xFF).ok();
}

std::string CheckVarlen(VarlenCase& c) {
  const size_t row = size_t(c.device.problem.heads_q * c.device.problem.head_dim);
  if (c.buffers.size() <= 4) return c.name + ": its device buffers were not made";
  std::vector<uint16_t> o(c.q.size() + kVarlenCanaryRows * row);
  std::vector<float> lse(c.expected_lse.size());
  if (!c.o().CopyToHost(o.data(), o.size() * 2).ok() || !c.lse().CopyToHost(lse.data(), lse.size() * 4).ok())
    return "copy back failed";
  for (size_t i = c.q.size(); i < o.size(); ++i)
    if (o[i] != 0xFFFF) return c.name + ": wrote past total_q (canary row " + std::to_string((i - c.q.size()) / row) + ")";
  std::vector<double> got(c.q.size());
  for (size_t i = 0; i < got.size(); ++i) got[i] = BitsToFloat(o[i], c.device.problem.dtype);
  const std::string why = CompareWithReference(c.device.problem.dtype, got, lse, c.expected_o, c.expected_lse);
  return why.empty() ? "" : c.name + ": " + why;
}

}  // namespace flashtune::testing
