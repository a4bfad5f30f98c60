// tests/support/fake_gpu_record.h — what a test reads from the recording fake GPU
// (tests/fixtures/fake_gpu.h), and host memory to pass for its "device" pointers. For the
// fake_gpu_*_test.cpp binary, whose every Driver::Load() opens the fake
// (tests/fixtures/fake_gpu_install.cpp).
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <vector>

#include <string>

#include "cache/gpu_model.h"
#include "flashtune/driver.h"
#include "flashtune/forward_args.h"
#include "flashtune/runtime.h"
#include "tests/fixtures/fake_gpu.h"
#include "tests/support/temp_dir.h"

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
  std::vector<FtFakeMemset> Memsets() const {
    std::vector<FtFakeMemset> out(size_t(Fn<int()>("ft_fake_memset_count")()));
    for (size_t i = 0; i < out.size(); ++i) Fn<int(int, FtFakeMemset*)>("ft_fake_memset_at")(int(i), &out[i]);
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

// Device `ordinal` of the fake as the runtime and the tuner's worker record it (name, UUID,
// compute capability, SMs, driver version): what a database tuned "on" it is keyed by.
inline DeviceRecord FakeDeviceRecord(int ordinal = 0) {
  auto driver = Driver::Load();
  EXPECT_TRUE(driver.ok()) << driver.status().ToString();
  if (!driver.ok()) return {};
  auto info = (*driver)->Device(ordinal);
  EXPECT_TRUE(info.ok()) << info.status().ToString();
  if (!info.ok()) return {};
  return DeviceRecordOf(*info, (*driver)->VersionString());
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

// Contiguous arguments for `p` with every tensor it needs in `b` (paged: a table walking the pool,
// every sequence seqlen_k keys), and a workspace of `workspace_bytes` when that is positive.
inline ForwardArgs FakeCallArgs(const Problem& p, HostBuffers& b, int64_t workspace_bytes, int block_size = 16) {
  ForwardArgs a = ForwardArgs::Contiguous(p, block_size);
  const size_t q = size_t(p.batch * p.seqlen_q * p.heads_q * p.head_dim) * 2;
  size_t kv = size_t(p.batch * p.seqlen_k * p.heads_kv * p.head_dim) * 2;
  if (p.layout == Layout::kPaged) kv = size_t(a.paged.num_blocks * block_size * p.heads_kv * p.head_dim) * 2;
  a.q = b.Get(q);
  a.k = b.Get(kv);
  a.v = b.Get(kv);
  a.o = b.Get(q);
  a.lse = static_cast<float*>(b.Get(size_t(p.batch * p.heads_q * p.seqlen_q) * 4));
  if (p.layout == Layout::kPaged) {
    auto* table = static_cast<int32_t*>(b.Get(size_t(p.batch * a.paged.block_table_stride) * 4));
    for (int64_t i = 0; i < p.batch * a.paged.block_table_stride; ++i) table[i] = int32_t(i % a.paged.num_blocks);
    a.paged.block_table = table;
    auto* lens = static_cast<int32_t*>(b.Get(size_t(p.batch) * 4));
    for (int64_t i = 0; i < p.batch; ++i) lens[i] = int32_t(p.seqlen_k);
    a.seqlens_k = lens;
  }
  if (workspace_bytes > 0) {
    a.workspace = b.Get(size_t(workspace_bytes));
    a.workspace_bytes = workspace_bytes;
  }
  return a;
}

// Packs a's queries as [total_q, Hq, D] rows by the offsets `cu` (copied into b): vLLM's varlen
// q over its cache. Returns the device-side (here host) offsets.
inline const int32_t* PackQueries(ForwardArgs& a, HostBuffers& b, std::initializer_list<int32_t> cu) {
  auto* offsets = static_cast<int32_t*>(b.Get(cu.size() * sizeof(int32_t)));
  std::copy(cu.begin(), cu.end(), offsets);
  a.varlen.cu_seqlens_q = offsets;
  a.varlen.total_q = *(cu.end() - 1);
  const int64_t d = a.problem.head_dim;
  a.q_strides = a.o_strides = Strides{0, a.problem.heads_q * d, d};
  return offsets;
}

// Makes `a` a packed (varlen) call whose sequences have the same query and key rows, by the
// offsets `cu`: q, k, v and o as [total, H, D] rows. Returns the offsets.
inline const int32_t* PackSequences(ForwardArgs& a, HostBuffers& b, std::initializer_list<int32_t> cu) {
  const int32_t* offsets = PackQueries(a, b, cu);
  a.varlen.cu_seqlens_k = offsets;
  a.varlen.total_k = a.varlen.total_q;
  const int64_t d = a.problem.head_dim;
  a.k_strides = a.v_strides = Strides{0, a.problem.heads_kv * d, d};
  return offsets;
}

// A runtime on no database (heuristic plans) in a fresh folder, with device 0 current; the
// warnings it logs are kept.
struct FakeGpuRuntime {
  TempDir dir;
  std::vector<std::string> warnings;
  std::unique_ptr<Runtime> rt;
  FakeGpuRuntime() {
    UseFakeDevice(0);
    RuntimeOptions o;
    o.db_path = dir.path() + "/absent.db";
    o.log = [this](LogLevel level, const std::string& m) {
      if (level >= LogLevel::kWarning) warnings.push_back(m);
    };
    auto r = Runtime::Open(o);
    if (r.ok()) rt = std::move(*r);
  }
  // FakeCallArgs of `p` with the workspace this runtime asks for (none, and a test failure, when
  // it refuses the problem).
  ForwardArgs ArgsFor(const Problem& p, HostBuffers& b) const {
    auto ws = rt->workspace_size(p);
    EXPECT_TRUE(ws.ok()) << ws.status().ToString();
    return FakeCallArgs(p, b, ws.ok() ? *ws : 0);
  }
};

// A test on the recording fake with a runtime open on it (`fake` and `r`, as the tests name
// them): fails at SetUp when the runtime does not open.
class FakeGpuTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NE(r.rt, nullptr); }
  FakeGpuRecord fake;
  FakeGpuRuntime r;  // after `fake`: the runtime opens the object fake reads
};

}  // namespace flashtune::testing
