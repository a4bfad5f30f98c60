// The float64 CPU reference forward pass and its host helpers.
#include "flashtune/reference.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace flashtune {

// ---- conversions -------------------------------------------------------------------------

uint16_t FloatToHalfBits(float x) {
  const uint32_t f = std::bit_cast<uint32_t>(x);
  const uint32_t sign = (f >> 16) & 0x8000u;
  const uint32_t abs = f & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN (keep NaN quiet and non-zero)
    return uint16_t(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u | ((abs >> 13) & 0x3ffu) : 0u));
  }
  const int exp = int(abs >> 23) - 127;
  if (exp > 15) return uint16_t(sign | 0x7c00u);  // overflow -> inf
  if (exp >= -14) {                               // normal half
    uint32_t mant = abs & 0x7fffffu;
    uint32_t h = (uint32_t(exp + 15) << 10) | (mant >> 13);
    const uint32_t rest = mant & 0x1fffu;
    // Round to nearest even; a carry into the exponent (even to inf) is correct.
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
    return uint16_t(sign | h);
  }
  if (exp < -25) return uint16_t(sign);  // below half the smallest subnormal -> 0
  // Subnormal: value = mant_full * 2^(exp-23); half subnormal unit is 2^-24.
  const uint32_t mant_full = (abs & 0x7fffffu) | 0x800000u;
  const int shift = -exp - 1;  // 14..24: mant_full >> shift is in units of 2^-24
  uint32_t h = mant_full >> shift;
  const uint32_t rest = mant_full & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (h & 1u))) ++h;
  return uint16_t(sign | h);
}

float HalfBitsToFloat(uint16_t bits) {
  const uint32_t sign = uint32_t(bits & 0x8000u) << 16;
  const uint32_t exp = (bits >> 10) & 0x1fu;
  const uint32_t mant = bits & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    const float v = std::ldexp(float(mant), -24);  // exact
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

uint16_t FloatToBf16Bits(float x) {
  const uint32_t f = std::bit_cast<uint32_t>(x);
  if ((f & 0x7fffffffu) > 0x7f800000u) return uint16_t((f >> 16) | 0x40u);  // quiet NaN
  const uint32_t rounding = 0x7fffu + ((f >> 16) & 1u);
  return uint16_t((f + rounding) >> 16);
}

float Bf16BitsToFloat(uint16_t bits) { return std::bit_cast<float>(uint32_t(bits) << 16); }

uint16_t FloatToBits(float x, DType dtype) {
  return dtype == DType::kBF16 ? FloatToBf16Bits(x) : FloatToHalfBits(x);
}
float BitsToFloat(uint16_t bits, DType dtype) {
  return dtype == DType::kBF16 ? Bf16BitsToFloat(bits) : HalfBitsToFloat(bits);
}

// ---- random fill -------------------------------------------------------------------------

namespace {

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Uniform in [lo, hi) from the top 24 bits: exactly representable, platform independent.
float Uniform(uint64_t& state, float lo, float hi) {
  const float u = float(SplitMix64(state) >> 40) * (1.0f / 16777216.0f);
  return lo + (hi - lo) * u;
}

}  // namespace

namespace {

// Element i is Uniform of the stream's (i+1)-th state, seed + (i+1) * increment, so chunks can
// be filled on several threads and the result is the same bits as one pass.
template <typename T, typename Convert>
void FillStream(std::span<T> out, uint64_t seed, float lo, float hi, Convert convert) {
  auto fill = [&](size_t begin, size_t end) {
    uint64_t state = seed + uint64_t(begin) * 0x9e3779b97f4a7c15ull;
    for (size_t i = begin; i < end; ++i) out[i] = convert(Uniform(state, lo, hi));
  };
  constexpr size_t kChunk = size_t(1) << 20;  // below this a thread costs more than it saves
  const size_t threads = std::clamp<size_t>(out.size() / kChunk, 1, std::max(1u, std::thread::hardware_concurrency()));
  if (threads == 1) return fill(0, out.size());
  std::vector<std::thread> pool;
  const size_t per = (out.size() + threads - 1) / threads;
  for (size_t t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(fill, t * per, std::min(out.size(), (t + 1) * per));
    } catch (const std::system_error&) {
      fill(t * per, std::min(out.size(), (t + 1) * per));  // no thread: this one does it
    }
  }
  fill(0, std::min(out.size(), per));
  for (std::thread& t : pool) t.join();
}

}  // namespace

void FillRandom(std::span<uint16_t> out, DType dtype, uint64_t seed, float lo, float hi) {
  FillStream(out, seed, lo, hi, [dtype](float x) { return FloatToBits(x, dtype); });
}

void FillRandom(std::span<float> out, uint64_t seed, float lo, float hi) {
  FillStream(out, seed, lo, hi, [](float x) { return x; });
}

// ---- reference ---------------------------------------------------------------------------

namespace {

Status Invalid(std::string message) { return Status(Code::kInvalidArgument, std::move(message)); }

// Reads element (b, n, h, d) of a strided host tensor as double.
struct HostView {
  const void* data;
  HostElement element;
  Strides s;
  double At(int64_t b, int64_t n, int64_t h, int64_t d) const {
    const int64_t i = b * s.batch + n * s.seq + h * s.head + d;
    switch (element) {
      case HostElement::kF16: return HalfBitsToFloat(static_cast<const uint16_t*>(data)[i]);
      case HostElement::kBF16: return Bf16BitsToFloat(static_cast<const uint16_t*>(data)[i]);
      case HostElement::kF32: return static_cast<const float*>(data)[i];
    }
    return 0.0;
  }
};

// Runs `worker` on min(requested or the hardware's threads, items) threads, this one included,
// and waits for them: each worker takes its items from a shared counter.
void RunOnThreads(int requested, int64_t items, const std::function<void()>& worker) {
  int threads = requested > 0 ? requested : int(std::thread::hardware_concurrency());
  threads = int(std::clamp<int64_t>(threads, 1, items));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
}

Status CheckReferenceArgs(const ForwardArgs& a) {
  const struct {
    const char* name;
    int64_t value;
  } sizes[] = {{"head_dim", a.problem.head_dim}, {"batch", a.problem.batch},     {"seqlen_q", a.problem.seqlen_q},
               {"seqlen_k", a.problem.seqlen_k}, {"heads_q", a.problem.heads_q}, {"heads_kv", a.problem.heads_kv}};
  for (const auto& s : sizes) {
    if (s.value < 1) return Invalid(std::string(s.name) + " (" + std::to_string(s.value) + ") must be >= 1");
  }
  if (a.problem.heads_q % a.problem.heads_kv != 0) {
    return Invalid("heads_q (" + std::to_string(a.problem.heads_q) + ") must be a multiple of heads_kv (" +
                   std::to_string(a.problem.heads_kv) + ")");
  }
  const struct {
    const char* name;
    const void* p;
    const Strides& s;
  } tensors[] = {{"q", a.q, a.q_strides}, {"k", a.k, a.k_strides}, {"v", a.v, a.v_strides}};
  for (const auto& t : tensors) {
    if (t.p == nullptr) return Invalid(std::string(t.name) + " must not be null");
    if (t.s.batch < 0 || t.s.seq < 0 || t.s.head < 0) {
      return Invalid(std::string(t.name) + "_strides must be >= 0");
    }
  }
  if (!std::isfinite(a.softmax_scale) || a.softmax_scale < 0.0f) {
    return Invalid("softmax_scale (" + std::to_string(a.softmax_scale) + ") must be finite and >= 0");
  }
  return Status::Ok();
}

}  // namespace

Result<ReferenceOutput> ReferenceForward(const ForwardArgs& a, const ReferenceOptions& options) {
  FT_RETURN_IF_ERROR(CheckReferenceArgs(a));
  const HostElement element = options.element.value_or(
      a.problem.dtype == DType::kBF16 ? HostElement::kBF16 : HostElement::kF16);
  const HostView q{a.q, element, a.q_strides};
  const HostView k{a.k, element, a.k_strides};
  const HostView v{a.v, element, a.v_strides};
  const int64_t B = a.problem.batch, Nq = a.problem.seqlen_q, Nk = a.problem.seqlen_k, Hq = a.problem.heads_q, D = a.problem.head_dim;
  const int64_t group = a.problem.heads_q / a.problem.heads_kv;
  // The default scale in double: the reference should not inherit float's rounding of 1/sqrt(D).
  const double scale =
      a.softmax_scale != 0.0f ? double(a.softmax_scale) : 1.0 / std::sqrt(double(a.problem.head_dim));

  ReferenceOutput out;
  out.o.assign(size_t(B * Nq * Hq * D), 0.0);
  out.lse.assign(size_t(B * Hq * Nq), -std::numeric_limits<double>::infinity());

  // One work item per (batch, query head); items write disjoint parts of o and lse.
  const int64_t items = B * Hq;
  std::atomic<int64_t> next{0};
  auto worker = [&] {
    std::vector<double> scores(static_cast<size_t>(Nk));
    std::vector<double> acc(static_cast<size_t>(D));
    std::vector<double> q_row(static_cast<size_t>(D));
    // This item's K and V, converted once: the inner loops then stream contiguous doubles.
    std::vector<double> k_head(static_cast<size_t>(Nk * D)), v_head(static_cast<size_t>(Nk * D));
    for (int64_t item; (item = next.fetch_add(1)) < items;) {
      const int64_t b = item / Hq, h = item % Hq, hk = h / group;
      for (int64_t j = 0; j < Nk; ++j)
        for (int64_t d = 0; d < D; ++d) {
          k_head[size_t(j * D + d)] = k.At(b, j, hk, d);
          v_head[size_t(j * D + d)] = v.At(b, j, hk, d);
        }
      for (int64_t i = 0; i < Nq; ++i) {
        // Bottom-right aligned causal mask: keys 0 .. i + Nk - Nq are visible.
        const int64_t visible = a.problem.causal ? std::clamp<int64_t>(i + Nk - Nq + 1, 0, Nk) : Nk;
        if (visible == 0) continue;  // o stays 0, lse stays -inf
        for (int64_t d = 0; d < D; ++d) q_row[size_t(d)] = q.At(b, i, h, d);
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < visible; ++j) {
          const double* k_row = &k_head[size_t(j * D)];
          double dot = 0.0;
          for (int64_t d = 0; d < D; ++d) dot += q_row[size_t(d)] * k_row[d];
          scores[size_t(j)] = dot * scale;
          m = std::max(m, scores[size_t(j)]);
        }
        double l = 0.0;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < visible; ++j) {
          const double p = std::exp(scores[size_t(j)] - m);
          const double* v_row = &v_head[size_t(j * D)];
          l += p;
          for (int64_t d = 0; d < D; ++d) acc[size_t(d)] += p * v_row[d];
        }
        double* o_row = &out.o[size_t(((b * Nq + i) * Hq + h) * D)];
        for (int64_t d = 0; d < D; ++d) o_row[d] = acc[size_t(d)] / l;
        out.lse[size_t((b * Hq + h) * Nq + i)] = m + std::log(l);
      }
    }
  };
  RunOnThreads(options.threads, items, worker);
  return out;
}

Result<ReferenceGradients> ReferenceBackward(const ForwardArgs& a, const void* d_o, const Strides& d_o_strides,
                                             const ReferenceOptions& options) {
  FT_RETURN_IF_ERROR(CheckReferenceArgs(a));
  if (d_o == nullptr) return Invalid("d_o must not be null");
  if (d_o_strides.batch < 0 || d_o_strides.seq < 0 || d_o_strides.head < 0) return Invalid("d_o_strides must be >= 0");
  const HostElement element = options.element.value_or(a.problem.dtype == DType::kBF16 ? HostElement::kBF16 : HostElement::kF16);
  const HostView q{a.q, element, a.q_strides}, k{a.k, element, a.k_strides}, v{a.v, element, a.v_strides};
  const HostView dov{d_o, element, d_o_strides};
  const Problem& pr = a.problem;
  const int64_t B = pr.batch, Nq = pr.seqlen_q, Nk = pr.seqlen_k, Hq = pr.heads_q, Hkv = pr.heads_kv, D = pr.head_dim;
  const int64_t group = Hq / Hkv;
  const double scale = a.softmax_scale != 0.0f ? double(a.softmax_scale) : 1.0 / std::sqrt(double(D));

  ReferenceGradients g;
  g.dq.assign(size_t(B * Nq * Hq * D), 0.0);
  g.dk.assign(size_t(B * Nk * Hkv * D), 0.0);
  g.dv.assign(size_t(B * Nk * Hkv * D), 0.0);
  // One work item per (batch, query head, chunk of query rows): it owns those dq rows and its
  // own dk/dv partial [Nk, D], summed into the group's kv head afterwards in item order, so the
  // result does not depend on the thread count.
  constexpr int64_t kChunk = 256;
  const int64_t chunks = (Nq + kChunk - 1) / kChunk;
  const int64_t items = B * Hq * chunks;
  std::vector<std::vector<double>> dk_part(static_cast<size_t>(items)), dv_part(static_cast<size_t>(items));
  std::atomic<int64_t> next{0};
  auto worker = [&] {
    std::vector<double> kh(static_cast<size_t>(Nk * D)), vh(static_cast<size_t>(Nk * D)), p(static_cast<size_t>(Nk));
    std::vector<double> qr(static_cast<size_t>(D)), dor(static_cast<size_t>(D)), orow(static_cast<size_t>(D));
    int64_t loaded = -1;  // the (b, kv head) whose K/V are in kh/vh
    for (int64_t item; (item = next.fetch_add(1)) < items;) {
      const int64_t b = item / (Hq * chunks), h = item / chunks % Hq, chunk = item % chunks, hk = h / group;
      if (loaded != b * Hkv + hk) {
        for (int64_t j = 0; j < Nk; ++j)
          for (int64_t d = 0; d < D; ++d) {
            kh[size_t(j * D + d)] = k.At(b, j, hk, d);
            vh[size_t(j * D + d)] = v.At(b, j, hk, d);
          }
        loaded = b * Hkv + hk;
      }
      std::vector<double>& dk_item = dk_part[size_t(item)];
      std::vector<double>& dv_item = dv_part[size_t(item)];
      dk_item.assign(size_t(Nk * D), 0.0);
      dv_item.assign(size_t(Nk * D), 0.0);
      {
        for (int64_t i = chunk * kChunk; i < std::min(Nq, (chunk + 1) * kChunk); ++i) {
          const int64_t visible = a.problem.causal ? std::clamp<int64_t>(i + Nk - Nq + 1, 0, Nk) : Nk;
          if (visible == 0) continue;  // a row that sees no key has no gradient
          for (int64_t d = 0; d < D; ++d) {
            qr[size_t(d)] = q.At(b, i, h, d);
            dor[size_t(d)] = dov.At(b, i, h, d);
          }
          // P = softmax(scale · q kᵀ) over the visible keys.
          double m = -std::numeric_limits<double>::infinity();
          for (int64_t j = 0; j < visible; ++j) {
            double dot = 0.0;
            for (int64_t d = 0; d < D; ++d) dot += qr[size_t(d)] * kh[size_t(j * D + d)];
            p[size_t(j)] = dot * scale;
            m = std::max(m, p[size_t(j)]);
          }
          double l = 0.0;
          for (int64_t j = 0; j < visible; ++j) l += (p[size_t(j)] = std::exp(p[size_t(j)] - m));
          std::fill(orow.begin(), orow.end(), 0.0);
          for (int64_t j = 0; j < visible; ++j) {
            p[size_t(j)] /= l;
            for (int64_t d = 0; d < D; ++d) orow[size_t(d)] += p[size_t(j)] * vh[size_t(j * D + d)];
          }
          // delta = d_o · o; dP = d_o vᵀ; dS = P ∘ (dP − delta).
          double delta = 0.0;
          for (int64_t d = 0; d < D; ++d) delta += dor[size_t(d)] * orow[size_t(d)];
          double* dq = &g.dq[size_t(((b * Nq + i) * Hq + h) * D)];
          for (int64_t j = 0; j < visible; ++j) {
            double dpj = 0.0;
            for (int64_t d = 0; d < D; ++d) dpj += dor[size_t(d)] * vh[size_t(j * D + d)];
            const double ds = p[size_t(j)] * (dpj - delta) * scale;
            double* dk_row = &dk_item[size_t(j * D)];
            double* dv_row = &dv_item[size_t(j * D)];
            for (int64_t d = 0; d < D; ++d) {
              dq[d] += ds * kh[size_t(j * D + d)];
              dk_row[d] += ds * qr[size_t(d)];
              dv_row[d] += p[size_t(j)] * dor[size_t(d)];
            }
          }
        }
      }
    }
  };
  RunOnThreads(options.threads, items, worker);
  for (int64_t item = 0; item < items; ++item) {
    const int64_t b = item / (Hq * chunks), hk = item / chunks % Hq / group;
    for (int64_t j = 0; j < Nk; ++j)
      for (int64_t d = 0; d < D; ++d) {
        const size_t out = size_t(((b * Nk + j) * Hkv + hk) * D + d);
        g.dk[out] += dk_part[size_t(item)][size_t(j * D + d)];
        g.dv[out] += dv_part[size_t(item)][size_t(j * D + d)];
      }
  }
  return g;
}

std::vector<double> GatherOutput(const ForwardArgs& a, const uint16_t* o_host) {
  const int64_t B = a.problem.batch, Nq = a.problem.seqlen_q, Hq = a.problem.heads_q, D = a.problem.head_dim;
  std::vector<double> out(size_t(B * Nq * Hq * D));
  size_t idx = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < Nq; ++i)
      for (int64_t h = 0; h < Hq; ++h)
        for (int64_t d = 0; d < D; ++d) {
          const int64_t off = b * a.o_strides.batch + i * a.o_strides.seq + h * a.o_strides.head + d;
          out[idx++] = BitsToFloat(o_host[off], a.problem.dtype);
        }
  return out;
}

// ---- comparisons -------------------------------------------------------------------------

double RelativeL2Error(std::span<const double> actual, std::span<const double> expected) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (actual.size() != expected.size()) return kInf;
  double diff2 = 0.0, ref2 = 0.0;
  for (size_t i = 0; i < actual.size(); ++i) {
    if (!std::isfinite(actual[i])) return kInf;
    const double d = actual[i] - expected[i];
    diff2 += d * d;
    ref2 += expected[i] * expected[i];
  }
  return ref2 > 0.0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
}

LseComparison CompareLse(std::span<const float> actual, std::span<const double> expected) {
  LseComparison c;
  const size_t n = std::min(actual.size(), expected.size());
  c.infinity_mismatches = int64_t(std::max(actual.size(), expected.size()) - n);
  for (size_t i = 0; i < n; ++i) {
    const double a = actual[i], e = expected[i];
    const bool a_masked = std::isinf(a) && a < 0, e_masked = std::isinf(e) && e < 0;
    if (std::isnan(a) || a_masked != e_masked || (std::isinf(a) && !a_masked)) {
      ++c.infinity_mismatches;
      continue;
    }
    if (e_masked) continue;
    const double err = std::abs(a - e) / std::max(1.0, std::abs(e));
    if (c.worst_index < 0 || err > c.max_error) {
      c.max_error = err;
      c.worst_index = int64_t(i);
    }
  }
  return c;
}

}  // namespace flashtune
