// tests/support/gpu_fixture.cpp — see gpu_fixture.h.
#include "tests/support/gpu_fixture.h"

#include <algorithm>
#include <cstdio>

#include "flashtune/compiler.h"
#include "flashtune/reference.h"
#include "flashtune/source.h"

namespace flashtune::testing {

Result<Gpu*> GetGpu() {
  static Gpu gpu;
  static Status status = [] {
    auto driver = Driver::Load();
    if (!driver.ok()) return driver.status();
    gpu.driver = *driver;
    if (gpu.driver->device_count() == 0) return Status(Code::kNoDevice, "no CUDA device");
    auto info = gpu.driver->Device(0);
    if (!info.ok()) return info.status();
    gpu.info = *info;
    auto context = Context::Primary(*gpu.driver, 0);
    if (!context.ok()) return context.status();
    gpu.context.emplace(std::move(*context));
    FT_RETURN_IF_ERROR(gpu.context->MakeCurrent());
    auto stream = Stream::Create(*gpu.context);
    if (!stream.ok()) return stream.status();
    gpu.stream.emplace(std::move(*stream));
    return Status::Ok();
  }();
  if (!status.ok()) return status;
  return &gpu;
}

Result<DeviceBuffer> Upload(const Gpu& gpu, const void* host, size_t bytes) {
  auto b = DeviceBuffer::Allocate(*gpu.context, std::max<size_t>(bytes, 16));
  if (!b.ok()) return b.status();
  if (host != nullptr) FT_RETURN_IF_ERROR(b->CopyFromHost(host, bytes));
  return b;
}

Result<std::unique_ptr<ForwardCase>> MakeForwardCase(const Gpu& gpu, const ProblemClass& cls, const Shape& s, uint64_t seed,
                                                     ForwardCaseOptions options) {
  auto c = std::make_unique<ForwardCase>();
  c->shape = s;
  c->key_ramp = options.key_ramp;
  ForwardArgs& a = c->host;
  a = ForwardArgs::Contiguous(
      Problem{cls.dtype, cls.head_dim, cls.causal, s.batch, s.seqlen_q, s.seqlen_k, s.heads_q, s.heads_kv});
  a.q_strides = StridesFor(s, s.seqlen_q, s.heads_q, cls.head_dim);
  a.k_strides = a.v_strides = StridesFor(s, s.seqlen_k, s.heads_kv, cls.head_dim);
  if (options.o_like_q) a.o_strides = a.q_strides;
  c->q.resize(size_t(s.batch * s.seqlen_q * s.heads_q * cls.head_dim));
  c->k.resize(size_t(s.batch * s.seqlen_k * s.heads_kv * cls.head_dim));
  c->v.resize(c->k.size());
  FillRandom(c->q, cls.dtype, seed);
  FillRandom(c->k, cls.dtype, seed + 1);
  FillRandom(c->v, cls.dtype, seed + 2);
  if (options.key_ramp > 0) {
    const Strides& ks = a.k_strides;
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t j = 0; j < s.seqlen_k; ++j)
        for (int64_t h = 0; h < s.heads_kv; ++h)
          ApplyKeyRamp(c->k.data() + b * ks.batch + j * ks.seq + h * ks.head, cls.head_dim, cls.dtype, options.key_ramp,
                       j, s.seqlen_k);
  }
  a.q = c->q.data();
  a.k = c->k.data();
  a.v = c->v.data();
  if (options.reference) {
    auto expected = ReferenceForward(a);
    if (!expected.ok()) return expected.status();
    c->expected = std::move(*expected);
  }
  const struct {
    std::optional<DeviceBuffer>* buffer;
    size_t bytes;
    const void* host;
  } uploads[] = {{&c->dq, c->q.size() * 2, c->q.data()},
                 {&c->dk, c->k.size() * 2, c->k.data()},
                 {&c->dv, c->v.size() * 2, c->v.data()},
                 {&c->dout, c->q.size() * 2, nullptr},
                 {&c->dlse, size_t(s.batch * s.heads_q * s.seqlen_q) * 4, nullptr}};
  for (const auto& u : uploads) {
    auto b = Upload(gpu, u.host, u.bytes);
    if (!b.ok()) return b.status();
    u.buffer->emplace(std::move(*b));
  }
  c->device = a;
  c->device.q = reinterpret_cast<const void*>(c->dq->get());
  c->device.k = reinterpret_cast<const void*>(c->dk->get());
  c->device.v = reinterpret_cast<const void*>(c->dv->get());
  c->device.o = reinterpret_cast<void*>(c->dout->get());
  c->device.lse = reinterpret_cast<float*>(c->dlse->get());
  return c;
}

void ApplyKeyRamp(uint16_t* row, int64_t count, DType dtype, double ramp, int64_t j, int64_t n) {
  const double f = 1 + ramp * double(n - 1 - j) / double(std::max<int64_t>(n - 1, 1));
  for (int64_t x = 0; x < count; ++x) row[x] = FloatToBits(float(BitsToFloat(row[x], dtype) * f), dtype);
}

std::string KeyRampText(double ramp) { return ramp > 0 ? " key ramp " + std::to_string(int(ramp)) : ""; }

std::vector<Result<ForwardKernel>> CompileAndLoad(const Gpu& gpu, const std::vector<Variant>& variants) {
  std::vector<Status> generated;  // per variant
  std::vector<CompileRequest> requests;
  for (const Variant& v : variants) {
    auto source = GenerateSource(v);
    generated.push_back(source.status());
    if (source.ok()) requests.push_back(GeneratedSourceRequest(source->uri, source->text, gpu.info.Arch()));
  }
  Compiler compiler(Compiler::Options{});
  auto cubins = compiler.CompileMany(requests);
  std::vector<Result<ForwardKernel>> out;
  size_t r = 0;  // the next request's cubin
  for (size_t i = 0; i < variants.size(); ++i) {
    if (!generated[i].ok()) {
      out.emplace_back(generated[i]);
    } else if (!cubins[r].ok()) {
      out.emplace_back(cubins[r++].status());
    } else {
      out.emplace_back(ForwardKernel::Load(*gpu.context, *cubins[r++], variants[i]));
    }
  }
  return out;
}

std::string LaunchPoisoned(const Gpu& gpu, const ForwardKernel& kernel, const ForwardArgs& args, DeviceBuffer& o,
                           DeviceBuffer& lse) {
  if (!o.Memset(0xFF).ok() || !lse.Memset(0xFF).ok()) return "memset failed";
  Status launched = kernel.Launch(args, gpu.stream->get());
  if (!launched.ok()) return launched.ToString();
  Status done = gpu.stream->Synchronize();
  return done.ok() ? "" : done.ToString();
}

std::string CompareWithReference(DType dtype, std::span<const double> o, std::span<const float> lse,
                                 std::span<const double> expected_o, std::span<const double> expected_lse) {
  const double err = RelativeL2Error(o, expected_o);
  const LseComparison cmp = CompareLse(lse, expected_lse);
  const double tol = dtype == DType::kBF16 ? 1e-2 : 2e-3;
  if (err <= tol && cmp.Within(1e-3)) return "";
  char buf[200];
  std::snprintf(buf, sizeof buf, "o error %.3g (tol %.0e), lse error %.3g at %lld, -inf mismatches %lld", err, tol,
                cmp.max_error, (long long)cmp.worst_index, (long long)cmp.infinity_mismatches);
  return buf;
}

}  // namespace flashtune::testing
