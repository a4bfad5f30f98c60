// The float64 backward reference checked against finite differences of the forward reference
// (the loss is sum(d_o ∘ o), whose gradients are exactly dq, dk, dv), and its GQA sum against
// the same problem with K/V repeated per query head.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "flashtune/reference.h"

namespace flashtune {
namespace {

struct Case {
  int64_t batch, nq, nk, hq, hkv;
  int d;
  bool causal;
};

struct HostProblem {
  ForwardArgs args;
  std::vector<float> q, k, v, d_o;
  Strides d_o_strides;
};

HostProblem Make(const Case& c, uint64_t seed) {
  HostProblem h;
  Problem p{DType::kBF16, c.d, c.causal, c.batch, c.nq, c.nk, c.hq, c.hkv};
  h.args = ForwardArgs::Contiguous(p);
  h.args.softmax_scale = 0.7f;  // a non-default scale, so a forgotten scale factor shows
  h.q.resize(size_t(c.batch * c.nq * c.hq * c.d));
  h.d_o.resize(h.q.size());
  h.k.resize(size_t(c.batch * c.nk * c.hkv * c.d));
  h.v.resize(h.k.size());
  FillRandom(h.q, seed);
  FillRandom(h.k, seed + 1);
  FillRandom(h.v, seed + 2);
  FillRandom(h.d_o, seed + 3);
  h.d_o_strides = h.args.q_strides;
  return h;
}

ReferenceOptions F32() {
  ReferenceOptions o;
  o.element = HostElement::kF32;
  o.threads = 1;
  return o;
}

double Loss(HostProblem& h) {
  h.args.q = h.q.data();
  h.args.k = h.k.data();
  h.args.v = h.v.data();
  auto out = ReferenceForward(h.args, F32());
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  double loss = 0.0;
  for (size_t i = 0; i < out->o.size(); ++i) loss += out->o[i] * double(h.d_o[i]);
  return loss;
}

// Central differences over every element of `x` (small shapes only).
std::vector<double> NumericGradient(HostProblem& h, std::vector<float>& x) {
  std::vector<double> g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float keep = x[i];
    const float step = 1.0f / 512;  // exact in float, so x ± step is what the loss sees
    x[i] = keep + step;
    const double up = Loss(h);
    x[i] = keep - step;
    const double down = Loss(h);
    x[i] = keep;
    g[i] = (up - down) / (2.0 * step);
  }
  return g;
}

double MaxAbsDiff(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0.0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

class ReferenceBackwardFd : public ::testing::TestWithParam<Case> {};

TEST_P(ReferenceBackwardFd, MatchesFiniteDifferencesOfTheForward) {
  HostProblem h = Make(GetParam(), 11);
  h.args.q = h.q.data();
  h.args.k = h.k.data();
  h.args.v = h.v.data();
  auto g = ReferenceBackward(h.args, h.d_o.data(), h.d_o_strides, F32());
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  // The loss is smooth at this scale: the central difference's error is O(step²) ≈ 1e-5.
  constexpr double kTol = 2e-4;
  EXPECT_LT(MaxAbsDiff(g->dq, NumericGradient(h, h.q)), kTol);
  EXPECT_LT(MaxAbsDiff(g->dk, NumericGradient(h, h.k)), kTol);
  EXPECT_LT(MaxAbsDiff(g->dv, NumericGradient(h, h.v)), kTol);
  double norm = 0.0;
  for (double x : g->dk) norm += x * x;
  EXPECT_GT(norm, 1e-6);  // a reference returning zeros cannot pass by the differences alone
}

INSTANTIATE_TEST_SUITE_P(Shapes, ReferenceBackwardFd,
                         ::testing::Values(Case{1, 3, 5, 1, 1, 4, false},   // Nq != Nk
                                           Case{1, 5, 3, 2, 1, 4, true},    // causal Nq > Nk: a masked row
                                           Case{2, 4, 4, 4, 2, 8, true},    // GQA 2:1, batch 2
                                           Case{1, 3, 6, 3, 1, 4, false}),  // MQA
                         [](const auto& info) { return "case" + std::to_string(info.index); });

TEST(ReferenceBackward, GqaSumsTheGroupsGradients) {
  // Hq 4 over Hkv 2 equals Hq 4 over Hkv 4 with each K/V head repeated, dk/dv then summed.
  const Case gqa{1, 6, 7, 4, 2, 8, true};
  HostProblem h = Make(gqa, 5);
  h.args.q = h.q.data();
  h.args.k = h.k.data();
  h.args.v = h.v.data();
  auto grouped = ReferenceBackward(h.args, h.d_o.data(), h.d_o_strides, F32());
  ASSERT_TRUE(grouped.ok());

  HostProblem r = h;
  const int64_t D = gqa.d;
  r.args = ForwardArgs::Contiguous(Problem{DType::kBF16, gqa.d, true, 1, gqa.nq, gqa.nk, 4, 4});
  r.args.softmax_scale = h.args.softmax_scale;
  r.k.assign(size_t(gqa.nk * 4 * D), 0.f);
  r.v = r.k;
  for (int64_t j = 0; j < gqa.nk; ++j)
    for (int64_t hq = 0; hq < 4; ++hq)
      for (int64_t d = 0; d < D; ++d) {
        r.k[size_t((j * 4 + hq) * D + d)] = h.k[size_t((j * 2 + hq / 2) * D + d)];
        r.v[size_t((j * 4 + hq) * D + d)] = h.v[size_t((j * 2 + hq / 2) * D + d)];
      }
  r.args.q = r.q.data();
  r.args.k = r.k.data();
  r.args.v = r.v.data();
  auto repeated = ReferenceBackward(r.args, r.d_o.data(), r.d_o_strides, F32());
  ASSERT_TRUE(repeated.ok());
  EXPECT_LT(MaxAbsDiff(grouped->dq, repeated->dq), 1e-12);
  std::vector<double> dk_sum(grouped->dk.size()), dv_sum(grouped->dv.size());
  for (int64_t j = 0; j < gqa.nk; ++j)
    for (int64_t hq = 0; hq < 4; ++hq)
      for (int64_t d = 0; d < D; ++d) {
        dk_sum[size_t((j * 2 + hq / 2) * D + d)] += repeated->dk[size_t((j * 4 + hq) * D + d)];
        dv_sum[size_t((j * 2 + hq / 2) * D + d)] += repeated->dv[size_t((j * 4 + hq) * D + d)];
      }
  EXPECT_LT(MaxAbsDiff(grouped->dk, dk_sum), 1e-12);
  EXPECT_LT(MaxAbsDiff(grouped->dv, dv_sum), 1e-12);
}

TEST(ReferenceBackward, MaskedRowsGetNoGradient) {
  // Causal with Nq 5 > Nk 3: queries 0 and 1 see no key.
  HostProblem h = Make(Case{1, 5, 3, 1, 1, 4, true}, 3);
  h.args.q = h.q.data();
  h.args.k = h.k.data();
  h.args.v = h.v.data();
  auto g = ReferenceBackward(h.args, h.d_o.data(), h.d_o_strides, F32());
  ASSERT_TRUE(g.ok());
  for (int i = 0; i < 2 * 4; ++i) EXPECT_EQ(g->dq[size_t(i)], 0.0) << i;
  bool nonzero = false;
  for (size_t i = 8; i < g->dq.size(); ++i) nonzero |= g->dq[i] != 0.0;
  EXPECT_TRUE(nonzero);
}

TEST(ReferenceBackward, RefusesANullGradient) {
  HostProblem h = Make(Case{1, 2, 2, 1, 1, 4, false}, 1);
  h.args.q = h.q.data();
  h.args.k = h.k.data();
  h.args.v = h.v.data();
  auto g = ReferenceBackward(h.args, nullptr, h.d_o_strides, F32());
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("d_o"), std::string::npos);
}

}  // namespace
}  // namespace flashtune
