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

 private:
  template <typename F>
  F* Fn(const char* name) const {
    return reinterpret_cast<F*>(::dlsym(handle_, name));
  }
  // The same object Driver::Load() opened (dlopen of one path is one object).
  void* handle_ = ::dlopen(FLASHTUNE_FAKE_GPU_LIBCUDA, RTLD_NOW | RTLD_LOCAL);
};

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
