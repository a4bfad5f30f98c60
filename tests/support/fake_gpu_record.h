// tests/support/fake_gpu_record.h — what a test reads from the recording fake GPU
// (tests/fixtures/fake_gpu.h), and host memory to pass for its "device" pointers. For the
// fake_gpu_*_test.cpp binary, whose every Driver::Load() opens the fake
// (tests/fixtures/fake_gpu_install.cpp).
#pragma once

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "flashtune/driver.h"
#include "tests/fixtures/fake_gpu.h"

namespace flashtune::testing {

// The fake's record, read through its C functions.
class FakeGpuRecord {
 public:
  void Reset() const { Fn<void()>("ft_fake_reset")(); }
  std::vector<FtFakeLaunch> Launches() const {
    std::vector<FtFakeLaunch> out(size_t(Fn<int()>("ft_fake_launch_count")()));
    for (size_t i = 0; i < out.size(); ++i) Fn<int(int, FtFakeLaunch*)>("ft_fake_launch_at")(int(i), &out[i]);
    return out;
  }
  std::vector<FtFakeTensorMap> TensorMaps() const {
    std::vector<FtFakeTensorMap> out(size_t(Fn<int()>("ft_fake_tensor_map_count")()));
    for (size_t i = 0; i < out.size(); ++i)
      Fn<int(int, FtFakeTensorMap*)>("ft_fake_tensor_map_at")(int(i), &out[i]);
    return out;
  }
  int ModuleLoads() const { return Fn<int()>("ft_fake_module_load_count")(); }
  // The next `count` calls of `entry_point`, after `skip` that pass, fail with `error`.
  void Fail(const char* entry_point, int skip, int count, int error) const {
    Fn<void(const char*, int, int, int)>("ft_fake_fail")(entry_point, skip, count, error);
  }
  // Launch i's parameter bytes into out (at most `capacity`): their count, or -1 when not kept.
  int Params(int i, void* out, int capacity) const {
    return Fn<int(int, void*, int)>("ft_fake_launch_params")(i, out, capacity);
  }
  // The tensor maps in launch i's parameters (the fake's encodings, wherever the kernel's
  // parameter struct holds them: 64-byte aligned), in order; empty when its bytes were not kept.
  std::vector<FtFakeTensorMap> MapsLaunched(int i) const {
    std::vector<unsigned char> bytes(4096);
    const int n = Params(i, bytes.data(), int(bytes.size()));
    std::vector<FtFakeTensorMap> maps;
    for (int at = 0; at + int(sizeof(FtFakeTensorMap)) <= n; at += 64) {
      FtFakeTensorMap m;
      std::memcpy(&m, bytes.data() + at, sizeof m);
      if (m.magic == FT_FAKE_TENSOR_MAP_MAGIC) maps.push_back(m);
    }
    return maps;
  }

 private:
  template <typename F>
  F* Fn(const char* name) const {
    return reinterpret_cast<F*>(::dlsym(handle_, name));
  }
  // The same object Driver::Load() opened (dlopen of one path is one object).
  void* handle_ = ::dlopen(FLASHTUNE_FAKE_GPU_LIBCUDA, RTLD_NOW | RTLD_LOCAL);
};

// Makes `ordinal`'s primary context current on this thread (the current context is per thread
// and outlives a test: each test starts from device 0). False when the fake is not the driver.
inline bool UseFakeDevice(int ordinal) {
  auto driver = Driver::Load();
  if (!driver.ok()) return false;
  auto context = Context::Primary(**driver, ordinal);  // retained by the runtime when it launches
  return context.ok();
}

// "Device" memory for the fake, whose memory is the host's: zeroed, 256-byte aligned.
class HostBuffers {
 public:
  void* Get(size_t bytes) {
    const size_t size = (bytes + 255) / 256 * 256 + 256;
    owned_.emplace_back(std::aligned_alloc(256, size), &std::free);
    std::memset(owned_.back().get(), 0, size);
    return owned_.back().get();
  }

 private:
  std::vector<std::unique_ptr<void, decltype(&std::free)>> owned_;
};

}  // namespace flashtune::testing
