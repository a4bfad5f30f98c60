// The kernel tests' GPU (see gpu_fixture.h).
#include "tests/support/gpu_fixture.h"

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

}  // namespace flashtune::testing
