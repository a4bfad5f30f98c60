#include "flashtune/reference.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <limits>
#include <vector>

namespace flashtune {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// ---- conversions ----

TEST(Conversions, HalfKnownValuesRoundToNearestEven) {
  EXPECT_EQ(FloatToHalfBits(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalfBits(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalfBits(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToHalfBits(65519.0f), 0x7bff);  // below the midpoint to infinity
  EXPECT_EQ(FloatToHalfBits(65520.0f), 0x7c00);  // the tie rounds to even = infinity
  EXPECT_EQ(FloatToHalfBits(1.0f + 0x1p-11f), 0x3c00);        // tie -> even (down)
  EXPECT_EQ(FloatToHalfBits(1.0f + 3 * 0x1p-11f), 0x3c02);    // tie -> even (up)
  EXPECT_EQ(FloatToHalfBits(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
  EXPECT_EQ(FloatToHalfBits(0x1p-24f), 0x0001);   // smallest subnormal
  EXPECT_EQ(FloatToHalfBits(0x1p-25f), 0x0000);   // tie with 0 -> even
  EXPECT_EQ(FloatToHalfBits(0x1.8p-25f), 0x0001);
  EXPECT_EQ(FloatToHalfBits(0x1p-14f), 0x0400);   // smallest normal
  EXPECT_EQ(FloatToHalfBits(0x1.ffcp-15f), 0x0400);  // subnormal rounding up into the normals
  EXPECT_EQ(FloatToHalfBits(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalfBits(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_TRUE(std::isnan(HalfBitsToFloat(FloatToHalfBits(std::nanf("")))));
  EXPECT_EQ(HalfBitsToFloat(0x3555), 0x1.554p-2f);
  EXPECT_EQ(HalfBitsToFloat(0x0001), 0x1p-24f);
}

TEST(Conversions, Bf16KnownValuesRoundToNearestEven) {
  EXPECT_EQ(FloatToBf16Bits(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBf16Bits(1.0f + 0x1p-8f), 0x3f80);      // tie -> even (down)
  EXPECT_EQ(FloatToBf16Bits(1.0f + 3 * 0x1p-8f), 0x3f82);  // tie -> even (up)
  EXPECT_EQ(FloatToBf16Bits(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
  EXPECT_EQ(FloatToBf16Bits(-3.0f), 0xc040);
  EXPECT_EQ(FloatToBf16Bits(std::numeric_limits<float>::max()), 0x7f80);  // rounds to inf
  EXPECT_TRUE(std::isnan(Bf16BitsToFloat(FloatToBf16Bits(std::nanf("")))));
  EXPECT_EQ(Bf16BitsToFloat(0x4049), 3.140625f);
}

TEST(Conversions, EveryNonNanBitPatternRoundTrips) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const uint16_t bits = uint16_t(b);
    const float h = HalfBitsToFloat(bits);
    if (!std::isnan(h)) {
      ASSERT_EQ(FloatToHalfBits(h), bits) << std::hex << b;
    }
    const float f = Bf16BitsToFloat(bits);
    if (!std::isnan(f)) {
      ASSERT_EQ(FloatToBf16Bits(f), bits) << std::hex << b;
    }
  }
}

// ---- random fill ----

// A large fill (several threads) is the same stream as a small one (one thread), element by
// element; checked against splitmix64 written out here.
TEST(FillRandom, LargeFillsAreTheSameStream) {
  const uint64_t seed = 42;
  auto expected = [seed](uint64_t i) {
    uint64_t z = seed + (i + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return -1.0f + 2.0f * (float(z >> 40) * (1.0f / 16777216.0f));
  };
  std::vector<float> big(5'000'003);
  FillRandom(big, seed);
  for (size_t i : {size_t(0), size_t(1), size_t(1) << 20, size_t(2'500'001), big.size() - 1})
    EXPECT_EQ(big[i], expected(i)) << i;
  std::vector<float> small(1000);
  FillRandom(small, seed);
  EXPECT_TRUE(std::equal(small.begin(), small.end(), big.begin()));
  std::vector<uint16_t> bf16(big.size());
  FillRandom(bf16, DType::kBF16, seed);
  for (size_t i : {size_t(3), size_t(4'999'999)}) EXPECT_EQ(bf16[i], FloatToBf16Bits(big[i])) << i;
}

TEST(FillRandom, IsDeterministicAndPinned) {
  std::vector<float> a(3), b(3), c(3);
  FillRandom(a, 42, 0.0f, 1.0f);
  FillRandom(b, 42, 0.0f, 1.0f);
  FillRandom(c, 43, 0.0f, 1.0f);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // splitmix64(42) top 24 bits, computed independently: the stream must never change.
  EXPECT_FLOAT_EQ(a[0], 0.7415648698806763f);
  EXPECT_FLOAT_EQ(a[1], 0.15991038084030151f);
  EXPECT_FLOAT_EQ(a[2], 0.2786011099815369f);
  std::vector<uint16_t> h(1000);
  FillRandom(h, DType::kBF16, 7, -2.0f, 2.0f);
  for (uint16_t x : h) {
    const float f = Bf16BitsToFloat(x);
    EXPECT_GE(f, -2.0f);
    EXPECT_LE(f, 2.0f);  // rounding may reach the upper bound
  }
}

// ---- the reference against a plainly written formula ----

struct Case {
  int64_t B, Nq, Nk, Hq, Hkv, D;
  bool causal;
  float scale = 0.0f;
};

// o[b,i,h,:] = sum_j softmax_j(scale * q.k_j) v_j over visible j, written without any of the
// reference's tricks (no max subtraction, kv head by the GQA rule, contiguous float inputs).
void Naive(const Case& c, const std::vector<float>& q, const std::vector<float>& k,
           const std::vector<float>& v, std::vector<double>& o, std::vector<double>& lse) {
  const double scale = c.scale != 0.0f ? double(c.scale) : 1.0 / std::sqrt(double(c.D));
  o.assign(size_t(c.B * c.Nq * c.Hq * c.D), 0.0);
  lse.assign(size_t(c.B * c.Hq * c.Nq), kNegInf);
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.Hq; ++h) {
      const int64_t hk = h / (c.Hq / c.Hkv);
      for (int64_t i = 0; i < c.Nq; ++i) {
        double sum = 0.0;
        std::vector<double> w(size_t(c.Nk), 0.0);
        for (int64_t j = 0; j < c.Nk; ++j) {
          if (c.causal && j > i + c.Nk - c.Nq) continue;
          double s = 0.0;
          for (int64_t d = 0; d < c.D; ++d)
            s += double(q[size_t(((b * c.Nq + i) * c.Hq + h) * c.D + d)]) *
                 double(k[size_t(((b * c.Nk + j) * c.Hkv + hk) * c.D + d)]);
          w[size_t(j)] = std::exp(scale * s);
          sum += w[size_t(j)];
        }
        if (sum == 0.0) continue;
        lse[size_t((b * c.Hq + h) * c.Nq + i)] = std::log(sum);
        for (int64_t j = 0; j < c.Nk; ++j)
          for (int64_t d = 0; d < c.D; ++d)
            o[size_t(((b * c.Nq + i) * c.Hq + h) * c.D + d)] +=
                w[size_t(j)] / sum * double(v[size_t(((b * c.Nk + j) * c.Hkv + hk) * c.D + d)]);
      }
    }
}

ForwardArgs ArgsFor(const Case& c, const void* q, const void* k, const void* v) {
  ForwardArgs a;
  a.problem.head_dim = int(c.D);
  a.problem.causal = c.causal;
  a.softmax_scale = c.scale;
  a.problem.batch = c.B;
  a.problem.seqlen_q = c.Nq;
  a.problem.seqlen_k = c.Nk;
  a.problem.heads_q = c.Hq;
  a.problem.heads_kv = c.Hkv;
  a.q = q;
  a.k = k;
  a.v = v;
  a.q_strides = a.o_strides = Strides::Contiguous(c.Nq, c.Hq, c.D);
  a.k_strides = a.v_strides = Strides::Contiguous(c.Nk, c.Hkv, c.D);
  return a;
}

void ExpectMatchesNaive(const Case& c, int threads) {
  std::vector<float> q(size_t(c.B * c.Nq * c.Hq * c.D)), k(size_t(c.B * c.Nk * c.Hkv * c.D)),
      v(k.size());
  FillRandom(q, 1, -1.5f, 1.5f);
  FillRandom(k, 2, -1.5f, 1.5f);
  FillRandom(v, 3, -1.0f, 1.0f);
  std::vector<double> o, lse;
  Naive(c, q, k, v, o, lse);
  ReferenceOptions opt;
  opt.element = HostElement::kF32;
  opt.threads = threads;
  auto r = ReferenceForward(ArgsFor(c, q.data(), k.data(), v.data()), opt);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->o.size(), o.size());
  ASSERT_EQ(r->lse.size(), lse.size());
  for (size_t i = 0; i < o.size(); ++i) ASSERT_NEAR(r->o[i], o[i], 1e-12) << "o[" << i << "]";
  for (size_t i = 0; i < lse.size(); ++i) {
    if (std::isinf(lse[i])) {
      ASSERT_EQ(r->lse[i], kNegInf) << "lse[" << i << "]";
    } else {
      ASSERT_NEAR(r->lse[i], lse[i], 1e-12) << "lse[" << i << "]";
    }
  }
}

TEST(Reference, MatchesNaiveFormula) {
  ExpectMatchesNaive({2, 5, 7, 3, 3, 8, false}, 1);
  ExpectMatchesNaive({1, 9, 9, 2, 2, 16, true}, 4);
  ExpectMatchesNaive({1, 3, 11, 2, 2, 8, true, 0.7f}, 3);  // Nq < Nk: causal bottom-right
  ExpectMatchesNaive({1, 1, 1, 1, 1, 32, true}, 0);
}

TEST(Reference, FullyMaskedRowsGiveZeroAndMinusInfinity) {
  // Causal with Nq > Nk: query i sees keys j <= i + Nk - Nq, so the first Nq - Nk rows see none.
  const Case c{2, 7, 3, 2, 1, 8, true};
  ExpectMatchesNaive(c, 2);
  std::vector<uint16_t> q(size_t(c.B * c.Nq * c.Hq * c.D)), k(size_t(c.B * c.Nk * c.Hkv * c.D));
  FillRandom(q, DType::kBF16, 5);
  FillRandom(k, DType::kBF16, 6);
  ForwardArgs a = ArgsFor(c, q.data(), k.data(), k.data());
  a.problem.dtype = DType::kBF16;
  auto r = ReferenceForward(a);
  ASSERT_TRUE(r.ok());
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.Hq; ++h)
      for (int64_t i = 0; i < c.Nq; ++i) {
        const double l = r->lse[size_t((b * c.Hq + h) * c.Nq + i)];
        if (i < c.Nq - c.Nk) {
          EXPECT_EQ(l, kNegInf) << i;
          for (int64_t d = 0; d < c.D; ++d)
            EXPECT_EQ(r->o[size_t(((b * c.Nq + i) * c.Hq + h) * c.D + d)], 0.0);
        } else {
          EXPECT_TRUE(std::isfinite(l)) << i;
        }
      }
  // Row Nq - Nk sees exactly key 0: o is v[0] and lse is the single score.
  const int64_t i = c.Nq - c.Nk;
  for (int64_t d = 0; d < c.D; ++d)
    EXPECT_DOUBLE_EQ(r->o[size_t((i * c.Hq) * c.D + d)], Bf16BitsToFloat(k[size_t(d)]));
}

TEST(Reference, GqaMatchesExplicitlyReplicatedHeads) {
  const Case gqa{2, 6, 10, 8, 2, 16, false};
  ExpectMatchesNaive(gqa, 3);
  ExpectMatchesNaive({1, 6, 10, 4, 1, 16, true}, 2);  // MQA
  // Replicating each kv head Hq/Hkv times gives the same result as plain MHA.
  std::vector<uint16_t> q(size_t(gqa.B * gqa.Nq * gqa.Hq * gqa.D)),
      k(size_t(gqa.B * gqa.Nk * gqa.Hkv * gqa.D)), v(k.size());
  FillRandom(q, DType::kF16, 11);
  FillRandom(k, DType::kF16, 12);
  FillRandom(v, DType::kF16, 13);
  std::vector<uint16_t> k_rep(size_t(gqa.B * gqa.Nk * gqa.Hq * gqa.D)), v_rep(k_rep.size());
  const int64_t group = gqa.Hq / gqa.Hkv;
  for (int64_t b = 0; b < gqa.B; ++b)
    for (int64_t j = 0; j < gqa.Nk; ++j)
      for (int64_t h = 0; h < gqa.Hq; ++h)
        for (int64_t d = 0; d < gqa.D; ++d) {
          const size_t dst = size_t(((b * gqa.Nk + j) * gqa.Hq + h) * gqa.D + d);
          const size_t src = size_t(((b * gqa.Nk + j) * gqa.Hkv + h / group) * gqa.D + d);
          k_rep[dst] = k[src];
          v_rep[dst] = v[src];
        }
  ForwardArgs a = ArgsFor(gqa, q.data(), k.data(), v.data());
  a.problem.dtype = DType::kF16;
  Case mha = gqa;
  mha.Hkv = gqa.Hq;
  ForwardArgs m = ArgsFor(mha, q.data(), k_rep.data(), v_rep.data());
  m.problem.dtype = DType::kF16;
  auto ra = ReferenceForward(a), rm = ReferenceForward(m);
  ASSERT_TRUE(ra.ok() && rm.ok());
  EXPECT_EQ(ra->o, rm->o);
  EXPECT_EQ(ra->lse, rm->lse);
}

TEST(Reference, StridedLayoutGivesTheSameResult) {
  // The same tensors stored head-major ([B, H, N, D]) with padded rows.
  const Case c{2, 5, 9, 4, 2, 8, true};
  std::vector<uint16_t> q(size_t(c.B * c.Nq * c.Hq * c.D)), k(size_t(c.B * c.Nk * c.Hkv * c.D)),
      v(k.size());
  FillRandom(q, DType::kBF16, 21);
  FillRandom(k, DType::kBF16, 22);
  FillRandom(v, DType::kBF16, 23);
  ForwardArgs dense = ArgsFor(c, q.data(), k.data(), v.data());
  dense.problem.dtype = DType::kBF16;
  const int64_t row = c.D + 8;  // padded row
  auto relayout = [&](const std::vector<uint16_t>& src, int64_t N, int64_t H, Strides* s) {
    *s = {H * N * row, row, N * row};
    std::vector<uint16_t> dst(size_t(c.B * H * N * row), 0xffff);  // padding is NaN
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t n = 0; n < N; ++n)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t d = 0; d < c.D; ++d)
            dst[size_t(b * s->batch + n * s->seq + h * s->head + d)] =
                src[size_t(((b * N + n) * H + h) * c.D + d)];
    return dst;
  };
  ForwardArgs strided = dense;
  auto qs = relayout(q, c.Nq, c.Hq, &strided.q_strides);
  auto ks = relayout(k, c.Nk, c.Hkv, &strided.k_strides);
  auto vs = relayout(v, c.Nk, c.Hkv, &strided.v_strides);
  strided.q = qs.data();
  strided.k = ks.data();
  strided.v = vs.data();
  auto rd = ReferenceForward(dense), rs = ReferenceForward(strided);
  ASSERT_TRUE(rd.ok() && rs.ok());
  EXPECT_EQ(rd->o, rs->o);
  EXPECT_EQ(rd->lse, rs->lse);
}

TEST(Reference, ResultDoesNotDependOnThreadCount) {
  const Case c{3, 17, 13, 4, 2, 32, true};
  std::vector<uint16_t> q(size_t(c.B * c.Nq * c.Hq * c.D)), k(size_t(c.B * c.Nk * c.Hkv * c.D));
  FillRandom(q, DType::kF16, 31);
  FillRandom(k, DType::kF16, 32);
  ForwardArgs a = ArgsFor(c, q.data(), k.data(), k.data());
  a.problem.dtype = DType::kF16;
  ReferenceOptions one, many;
  one.threads = 1;
  many.threads = 7;
  auto r1 = ReferenceForward(a, one), r7 = ReferenceForward(a, many);
  ASSERT_TRUE(r1.ok() && r7.ok());
  EXPECT_EQ(r1->o, r7->o);
  EXPECT_EQ(r1->lse, r7->lse);
}

TEST(Reference, RejectsBadArguments) {
  float x[8] = {};
  ForwardArgs a = ArgsFor({1, 1, 1, 1, 1, 8, false}, x, x, x);
  ReferenceOptions opt;
  opt.element = HostElement::kF32;
  ASSERT_TRUE(ReferenceForward(a, opt).ok());
  ForwardArgs b = a;
  b.problem.heads_q = 3;
  b.problem.heads_kv = 2;
  EXPECT_NE(ReferenceForward(b, opt).status().message().find("heads_q (3) must be a multiple of heads_kv (2)"),
            std::string::npos);
  b = a;
  b.k = nullptr;
  EXPECT_NE(ReferenceForward(b, opt).status().message().find("k must not be null"), std::string::npos);
  b = a;
  b.problem.seqlen_k = 0;
  EXPECT_NE(ReferenceForward(b, opt).status().message().find("seqlen_k (0) must be >= 1"), std::string::npos);
  b = a;
  b.v_strides.head = -8;
  EXPECT_EQ(ReferenceForward(b, opt).status().code(), Code::kInvalidArgument);
}

TEST(GatherOutput, ReadsStridedKernelOutput) {
  ForwardArgs a = ArgsFor({1, 2, 2, 2, 2, 8, false}, nullptr, nullptr, nullptr);
  a.problem.dtype = DType::kF16;
  a.o_strides = {0, 8, 16};  // head-major: o[n, h] at h*16 + n*8
  std::vector<uint16_t> o(32);
  for (size_t i = 0; i < o.size(); ++i) o[i] = FloatToHalfBits(float(i));
  std::vector<double> g = GatherOutput(a, o.data());
  ASSERT_EQ(g.size(), 32u);
  EXPECT_EQ(g[0], 0.0);     // n0 h0 d0
  EXPECT_EQ(g[8], 16.0);    // n0 h1 d0
  EXPECT_EQ(g[16], 8.0);    // n1 h0 d0
  EXPECT_EQ(g[31], 31.0);   // n1 h1 d7
}

// ---- comparisons ----

TEST(Compare, RelativeL2Error) {
  std::vector<double> ref{3.0, 4.0}, same{3.0, 4.0}, off{3.0, 4.5};
  EXPECT_EQ(RelativeL2Error(same, ref), 0.0);
  EXPECT_DOUBLE_EQ(RelativeL2Error(off, ref), 0.5 / 5.0);
  std::vector<double> zeros{0.0, 0.0}, small{0.0, 1e-3};
  EXPECT_DOUBLE_EQ(RelativeL2Error(small, zeros), 1e-3);  // absolute when the reference is 0
  std::vector<double> nan{3.0, std::nan("")}, inf{3.0, INFINITY}, short_{3.0};
  EXPECT_TRUE(std::isinf(RelativeL2Error(nan, ref)));
  EXPECT_TRUE(std::isinf(RelativeL2Error(inf, ref)));
  EXPECT_TRUE(std::isinf(RelativeL2Error(short_, ref)));
}

TEST(Compare, LseRequiresMatchingMaskedRows) {
  std::vector<double> e{kNegInf, 10.0, 0.0005};
  std::vector<float> a{-INFINITY, 10.005f, 0.0f};
  LseComparison c = CompareLse(a, e);
  EXPECT_EQ(c.infinity_mismatches, 0);
  EXPECT_NEAR(c.max_error, 0.0005, 1e-6);  // relative to |10|, and to 1 near zero
  EXPECT_EQ(c.worst_index, 1);
  EXPECT_TRUE(c.Within(1e-3));
  EXPECT_FALSE(c.Within(1e-4));
  a[0] = 0.0f;  // a masked row that the kernel filled in
  EXPECT_EQ(CompareLse(a, e).infinity_mismatches, 1);
  a[0] = -INFINITY;
  a[1] = -INFINITY;  // a visible row reported as masked
  EXPECT_FALSE(CompareLse(a, e).Within(1.0));
  a[1] = std::nanf("");
  EXPECT_EQ(CompareLse(a, e).infinity_mismatches, 1);
  EXPECT_EQ(CompareLse(std::vector<float>{-INFINITY}, e).infinity_mismatches, 2);
}

}  // namespace
}  // namespace flashtune
