// tests/support/gpu_fixture.cpp — see gpu_fixture.h.
#include "tests/support/gpu_fixture.h"

#include <algorithm>

namespace flashtune::testing {

Result<TestGpu*> SharedGpu() {
  static TestGpu* gpu = new TestGpu;  // never destroyed: the driver may be gone at exit
  static Status status = [] {
    auto driver = Driver::Load();
    if (!driver.ok()) return driver.status();
    gpu->driver = *driver;
    if (gpu->driver->device_count() == 0) return Status(Code::kNoDevice, "no CUDA device");
    auto info = gpu->driver->Device(0);
    if (!info.ok()) return info.status();
    gpu->info = *info;
    auto context = Context::Primary(*gpu->driver, 0);
    if (!context.ok()) return context.status();
    gpu->context.emplace(std::move(*context));
    FT_RETURN_IF_ERROR(gpu->context->MakeCurrent());
    auto stream = Stream::Create(*gpu->context);
    if (!stream.ok()) return stream.status();
    gpu->stream.emplace(std::move(*stream));
    return Status::Ok();
  }();
  if (!status.ok()) return status;
  return gpu;
}

Result<DeviceBuffer> Upload(const TestGpu& gpu, const void* host, size_t bytes) {
  auto b = DeviceBuffer::Allocate(*gpu.context, std::max<size_t>(bytes, 16));
  if (!b.ok()) return b.status();
  if (host != nullptr) FT_RETURN_IF_ERROR(b->CopyFromHost(host, bytes));
  return b;
}

}  // namespace flashtune::testing
