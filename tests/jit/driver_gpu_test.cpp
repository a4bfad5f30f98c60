// GPU tests of the driver layer: compile small kernels with NVRTC, load, launch, time.
// Each test skips, with the reason, where there is no driver or no device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <vector>

#include "flashtune/compiler.h"
#include "flashtune/driver.h"

namespace flashtune {
namespace {

const char* kKernels = R"(
extern "C" __global__ void axpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
// Busy work so that event timing sees a measurable interval.
extern "C" __global__ void spin(float* out, int iterations) {
  float v = threadIdx.x;
  for (int i = 0; i < iterations; ++i) v = v * 0.999f + 1.0f;
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}
// Writes its dynamic shared memory size worth of bytes, then reads one back.
extern "C" __global__ void big_smem(int* out, int bytes) {
  extern __shared__ unsigned char buffer[];
  for (int i = threadIdx.x; i < bytes; i += blockDim.x) buffer[i] = (unsigned char)(i & 0xff);
  __syncthreads();
  if (threadIdx.x == 0) out[0] = buffer[bytes - 1];
}
extern "C" __global__ void fault(int* out) { *(volatile int*)(out + (1ull << 40)) = 1; }
)";

class DriverGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<Driver*> driver = Driver::Load();
    if (!driver.ok()) GTEST_SKIP() << "needs a CUDA GPU: " << driver.status().message();
    driver_ = *driver;
    Result<DeviceInfo> info = driver_->Device(0);
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    info_ = *info;
    Result<Context> context = Context::Primary(*driver_, 0);
    ASSERT_TRUE(context.ok()) << context.status().ToString();
    context_.emplace(std::move(*context));
    Result<Cubin> cubin = Compiler({.cache_dir = "-", .threads = 0}).Compile({"driver_gpu_test", kKernels, info_.Arch(), {}});
    ASSERT_TRUE(cubin.ok()) << cubin.status().ToString();
    Result<Module> module = Module::Load(*context_, *cubin);
    ASSERT_TRUE(module.ok()) << module.status().ToString();
    module_.emplace(std::move(*module));
  }

  Function Get(const char* name) {
    Result<Function> f = module_->GetFunction(name);
    EXPECT_TRUE(f.ok()) << f.status().ToString();
    return *f;
  }

  Driver* driver_ = nullptr;
  DeviceInfo info_;
  std::optional<Context> context_;
  std::optional<Module> module_;  // declared after context_: destroyed first
};

TEST_F(DriverGpu, DeviceFactsAreSane) {
  EXPECT_FALSE(info_.name.empty());
  EXPECT_EQ(info_.uuid.rfind("GPU-", 0), 0u) << info_.uuid;
  EXPECT_EQ(info_.uuid.size(), 40u) << info_.uuid;
  EXPECT_GE(info_.cc_major, 7);
  EXPECT_GT(info_.sm_count, 0);
  EXPECT_GE(info_.max_smem_per_block_optin, 48 * 1024);
  EXPECT_GT(info_.l2_bytes, 0);
  EXPECT_GT(info_.clock_khz, 0);
  EXPECT_GT(info_.total_memory_bytes, uint64_t{1} << 30);
  EXPECT_GE(driver_->version(), 12000);
  Result<std::vector<DeviceInfo>> all = driver_->Devices();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(static_cast<int>(all->size()), driver_->device_count());
  EXPECT_EQ(driver_->Device(driver_->device_count()).status().code(), Code::kInvalidArgument);
}

TEST_F(DriverGpu, LaunchComputesAxpy) {
  const int n = 1000;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i);
    y[i] = 1.0f;
  }
  Result<DeviceBuffer> dx = DeviceBuffer::Allocate(*context_, n * sizeof(float));
  Result<DeviceBuffer> dy = DeviceBuffer::Allocate(*context_, n * sizeof(float));
  ASSERT_TRUE(dx.ok() && dy.ok());
  ASSERT_TRUE(dx->CopyFromHost(x.data(), n * sizeof(float)).ok());
  ASSERT_TRUE(dy->CopyFromHost(y.data(), n * sizeof(float)).ok());
  Result<Stream> stream = Stream::Create(*context_);
  ASSERT_TRUE(stream.ok());
  Function axpy = Get("axpy");
  float a = 2.0f;
  CUdeviceptr px = dx->get(), py = dy->get();
  int count = n;
  void* args[] = {&a, &px, &py, &count};
  Status launched = Launch(axpy, {(n + 255) / 256, 1, 1}, {256, 1, 1}, 0, *stream, args);
  ASSERT_TRUE(launched.ok()) << launched.ToString();
  ASSERT_TRUE(stream->Synchronize().ok());
  std::vector<float> result(n);
  ASSERT_TRUE(dy->CopyToHost(result.data(), n * sizeof(float)).ok());
  for (int i = 0; i < n; ++i) ASSERT_EQ(result[i], 2.0f * i + 1.0f) << i;
  Result<int> registers = axpy.NumRegisters();
  ASSERT_TRUE(registers.ok());
  EXPECT_GT(*registers, 0);
  EXPECT_EQ(dx->CopyToHost(result.data(), 2 * n * sizeof(float)).code(), Code::kInvalidArgument);
}

TEST_F(DriverGpu, MemsetFillsBytes) {
  Result<DeviceBuffer> buffer = DeviceBuffer::Allocate(*context_, 64);
  ASSERT_TRUE(buffer.ok());
  ASSERT_TRUE(buffer->Memset(0xab).ok());
  std::vector<unsigned char> host(64);
  ASSERT_TRUE(buffer->CopyToHost(host.data(), host.size()).ok());
  for (unsigned char b : host) ASSERT_EQ(b, 0xab);
}

TEST_F(DriverGpu, EventTimingIsPositive) {
  Result<Stream> stream = Stream::Create(*context_);
  Result<Event> start = Event::Create(*context_);
  Result<Event> end = Event::Create(*context_);
  Result<DeviceBuffer> out = DeviceBuffer::Allocate(*context_, 1024 * 256 * sizeof(float));
  ASSERT_TRUE(stream.ok() && start.ok() && end.ok() && out.ok());
  Function spin = Get("spin");
  CUdeviceptr p = out->get();
  int iterations = 100000;
  void* args[] = {&p, &iterations};
  ASSERT_TRUE(start->Record(*stream).ok());
  ASSERT_TRUE(Launch(spin, {1024, 1, 1}, {256, 1, 1}, 0, *stream, args).ok());
  ASSERT_TRUE(end->Record(*stream).ok());
  ASSERT_TRUE(end->Synchronize().ok());
  Result<float> ms = Event::ElapsedMs(*start, *end);
  ASSERT_TRUE(ms.ok()) << ms.status().ToString();
  EXPECT_GT(*ms, 0.0f);
  EXPECT_LT(*ms, 10000.0f);
}

TEST_F(DriverGpu, DynamicSharedMemoryAboveDefaultNeedsTheAttribute) {
  Function f = Get("big_smem");
  Result<DeviceBuffer> out = DeviceBuffer::Allocate(*context_, sizeof(int));
  ASSERT_TRUE(out.ok());
  int bytes = 100 * 1024;
  ASSERT_LE(bytes, info_.max_smem_per_block_optin);
  CUdeviceptr p = out->get();
  void* args[] = {&p, &bytes};
  Status refused = Launch(f, {1, 1, 1}, {128, 1, 1}, bytes, nullptr, args);
  EXPECT_EQ(refused.code(), Code::kOutOfResources) << refused.ToString();
  EXPECT_NE(refused.message().find("cuLaunchKernel failed: CUDA_ERROR_"), std::string::npos) << refused.message();

  ASSERT_TRUE(f.SetMaxDynamicSharedMemory(bytes).ok());
  Status launched = Launch(f, {1, 1, 1}, {128, 1, 1}, bytes, nullptr, args);
  ASSERT_TRUE(launched.ok()) << launched.ToString();
  ASSERT_TRUE(context_->Synchronize().ok());
  int value = 0;
  ASSERT_TRUE(out->CopyToHost(&value, sizeof value).ok());
  EXPECT_EQ(value, (bytes - 1) & 0xff);

  Status too_much = f.SetMaxDynamicSharedMemory(info_.max_smem_per_block_optin + 1024);
  EXPECT_EQ(too_much.code(), Code::kOutOfResources) << too_much.ToString();
}

TEST_F(DriverGpu, MissingKernelIsNotFound) {
  Result<Function> f = module_->GetFunction("no_such_kernel");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), Code::kNotFound);
}

TEST_F(DriverGpu, WrongArchCubinIsADriverErrorNamingTheCall) {
  // A cubin for a different major architecture cannot load here.
  const std::string other = info_.cc_major >= 9 ? "sm_80" : "sm_90a";
  Result<Cubin> cubin = Compiler({.cache_dir = "-", .threads = 0}).Compile({"wrong_arch", kKernels, other, {}});
  ASSERT_TRUE(cubin.ok());
  Result<Module> module = Module::Load(*context_, *cubin);
  ASSERT_FALSE(module.ok());
  EXPECT_NE(module.status().message().find("cuModuleLoadData failed: CUDA_ERROR_"), std::string::npos)
      << module.status().ToString();
}

// The fault is provoked in a child process (a death test, which re-runs this test from its
// start): an illegal address leaves the process's CUDA context unusable for good, so in one
// process running the whole binary every GPU test after this one would fail on it.
TEST_F(DriverGpu, IllegalAddressIsAFault) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        Result<DeviceBuffer> out = DeviceBuffer::Allocate(*context_, sizeof(int));
        if (!out.ok()) {
          std::fprintf(stderr, "allocation: %s\n", out.status().ToString().c_str());
          std::_Exit(2);
        }
        CUdeviceptr p = out->get();
        void* args[] = {&p};
        Status launched = Launch(Get("fault"), {1, 1, 1}, {1, 1, 1}, 0, nullptr, args);
        Status synced = launched.ok() ? context_->Synchronize() : launched;
        std::fprintf(stderr, "%s\n", synced.ToString().c_str());
        // _Exit: no destructors, which would call the driver in the broken context.
        std::_Exit(synced.code() == Code::kFault ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "CUDA_ERROR_");
}

}  // namespace
}  // namespace flashtune
