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
