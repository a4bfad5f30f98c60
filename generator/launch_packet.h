// A LaunchPacket: everything the driver needs to launch one kernel call — geometry, dynamic
// shared memory, and the bytes of the kernel's single by-value parameter — produced by a
// family from a call's arguments (Family::Pack) and consumed by the JIT layer's Kernel, which
// knows no family. Tensor maps (Hopper TMA descriptors) cannot be built without the driver, so
// a family describes each one (TensorMapRequest) and the JIT layer encodes it into the
// parameter bytes at the given offset just before launching.
//
// Fixed-size storage: packing and launching allocate nothing (the runtime's hot path).
// Thread safety: a plain value type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace flashtune {

// cuTensorMapEncodeTiled's arguments for a 16-bit float tensor, in the driver's order:
// dims[0] is the contiguous one; strides_bytes[i] is the stride of dims[i + 1].
struct TensorMapRequest {
  enum class Swizzle : uint8_t { kNone, k32B, k64B, k128B };
  uint32_t offset = 0;  // byte offset of the 128-byte, 64-byte-aligned map in LaunchPacket::args
  bool bf16 = true;     // else fp16
  uint32_t rank = 0;    // 1..5
  const void* base = nullptr;
  uint64_t dims[5] = {};
  uint64_t strides_bytes[4] = {};
  uint32_t box[5] = {};
  uint32_t element_strides[5] = {1, 1, 1, 1, 1};
  Swizzle swizzle = Swizzle::kNone;
  bool oob_zero = true;           // out-of-bounds elements read as zero
  uint16_t l2_promotion = 0;      // 0, 64, 128 or 256 bytes
};

// A further kernel of the same module, launched after the first on the same stream with the
// same parameter bytes (e.g. a split-key combine). `kernel` indexes Family::extra_kernels().
// `overlap`: launched as a programmatic dependent of the kernel before it (compute capability
// 9.0+ only; the family checks LaunchPacket::cc_major): its blocks may start while that kernel
// runs, so the kernel must begin with griddepcontrol.wait (jit/driver.h, LaunchDependent).
struct LaunchStep {
  int kernel = 0;
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  uint32_t smem_bytes = 0;
  bool overlap = false;
};

struct LaunchPacket {
  static constexpr size_t kMaxArgBytes = 1024;
  static constexpr int kMaxTensorMaps = 6;
  static constexpr int kMaxNextSteps = 2;

  // Input to Family::Pack: the device's multiprocessors (persistent grids); 0 when unknown.
  int sm_count = 0;
  // Input to Family::Pack: the device's compute capability major (what a launch may ask of
  // the driver, e.g. LaunchStep::overlap from 9 on); 0 when unknown.
  int cc_major = 0;

  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  uint32_t smem_bytes = 0;
  // Launched as a programmatic dependent of whatever kernel precedes it on the stream (as
  // LaunchStep::overlap; the kernel must begin with griddepcontrol.wait).
  bool overlap = false;
  uint32_t arg_bytes = 0;
  // Device bytes set to zero on the stream just before the first kernel (a counter the
  // kernel's blocks claim work from, in the call's workspace); none when zero_bytes is 0.
  void* zero = nullptr;
  uint32_t zero_bytes = 0;
  int tensor_maps = 0;
  TensorMapRequest maps[kMaxTensorMaps];
  int next_steps = 0;  // launches after the first, in order
  LaunchStep next[kMaxNextSteps];
  alignas(64) unsigned char args[kMaxArgBytes];

  // Copies `params` (the kernel's parameter struct) into args.
  template <typename T>
  void SetArgs(const T& params) {
    static_assert(sizeof(T) <= kMaxArgBytes, "kernel parameter struct exceeds LaunchPacket::kMaxArgBytes");
    static_assert(alignof(T) <= 64, "kernel parameter struct needs more than 64-byte alignment");
    std::memcpy(args, &params, sizeof(T));
    arg_bytes = uint32_t(sizeof(T));
  }
};

}  // namespace flashtune
