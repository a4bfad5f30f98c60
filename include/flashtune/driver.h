// flashtune/driver.h — the CUDA driver, loaded at run time, and RAII handles over it.
//
// flashtune never links libcuda: Driver::Load() dlopens libcuda.so.1 (or $FLASHTUNE_LIBCUDA)
// the first time it is asked, so machines without an NVIDIA driver still run every
// CPU-side part. A missing driver is kNoDriver ("no CUDA driver found (...)"), a driver
// without devices is kNoDevice ("no CUDA device ..."). Every failed driver call becomes a
// Status whose message is "cuXxx failed: CUDA_ERROR_NAME: <driver's text>"; kernel faults
// (illegal address, misaligned access, ...) are kFault, refused launches kOutOfResources.
//
// Handles (Context, Module, Function, Stream, Event, DeviceBuffer) are move-only and free
// their resource on destruction. A Context must outlive every handle created from it, and a
// Module every Function taken from it. Creating or destroying a handle makes its context
// current on the calling thread (as the CUDA runtime does).
//
// Thread safety: Driver is thread-safe after Load. A handle may be used from any thread but
// not from two at once.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "flashtune/arch.h"  // ArchFor: DeviceInfo::Arch()
#include "flashtune/status.h"

// The driver's opaque handle types, declared exactly as cuda.h declares them so that this
// header does not need the toolkit.
typedef struct CUctx_st* CUcontext;
typedef struct CUmod_st* CUmodule;
typedef struct CUfunc_st* CUfunction;
typedef struct CUstream_st* CUstream;
typedef struct CUevent_st* CUevent;
typedef unsigned long long CUdeviceptr;

namespace flashtune {

struct Cubin;
namespace detail { struct CudaApi; }

// Facts about one GPU, as the driver reports them.

struct DeviceInfo {
  int ordinal = -1;
  std::string name;                  // "NVIDIA H200"
  std::string uuid;                  // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi prints it
  int cc_major = 0;                  // compute capability
  int cc_minor = 0;
  int sm_count = 0;                  // multiprocessors
  int max_smem_per_block_optin = 0;  // bytes a block may use after raising the attribute
  int max_smem_per_block = 0;        // bytes without opting in (48 KB)
  int max_smem_per_sm = 0;
  int max_threads_per_block = 0;
  int regs_per_sm = 0;
  int l2_bytes = 0;
  int clock_khz = 0;                 // peak SM clock
  int memory_clock_khz = 0;
  int memory_bus_width_bits = 0;
  uint64_t total_memory_bytes = 0;

  // The NVRTC target for this exact device: ArchFor(cc_major, cc_minor).
  std::string Arch() const { return ArchFor(cc_major, cc_minor); }
  // "9.0".
  std::string ComputeCapability() const;
};

// A tiled TMA tensor map (CUtensorMap) to encode with Driver::EncodeTensorMapTiled: the
// driver's cuTensorMapEncodeTiled arguments, typed. Dimension 0 is the contiguous one.
enum class TensorMapDataType { kFloat16, kBFloat16 };
enum class TensorMapSwizzle { kNone, k32B, k64B, k128B };
enum class TensorMapL2Promotion { kNone, k64B, k128B, k256B };
struct TensorMapSpec {
  std::string name;  // what the map describes ("q"), used in error messages
  TensorMapDataType dtype = TensorMapDataType::kBFloat16;
  int rank = 0;                            // 1..5
  const void* address = nullptr;           // device address of element 0, 16-byte aligned
  std::array<uint64_t, 5> dims{};          // elements per dimension, 1..2^32
  std::array<uint64_t, 4> strides_bytes{}; // strides of dimensions 1..rank-1, multiples of 16, < 2^40
  std::array<uint32_t, 5> box{};           // box extent per dimension, 1..256
  std::array<uint32_t, 5> element_strides{1, 1, 1, 1, 1};  // 1..8
  TensorMapSwizzle swizzle = TensorMapSwizzle::kNone;
  // Out-of-bounds elements read as zero (true) or as the NaN that requests zero FMAs (false).
  bool oob_zero = true;
  TensorMapL2Promotion l2_promotion = TensorMapL2Promotion::kNone;
};
// Size of an encoded tensor map: what EncodeTensorMapTiled writes to `out` (64-byte aligned).
inline constexpr size_t kTensorMapBytes = 128;

// Checks `spec` against cuTensorMapEncodeTiled's documented rules (non-interleaved layouts)
// without a driver. OK, or kInvalidArgument: "tensor map 'q': box[0] ...".
Status CheckTensorMapSpec(const TensorMapSpec& spec);

class Driver {
 public:
  // Loads $FLASHTUNE_LIBCUDA when set, else libcuda.so.1, and initialises it. The first
  // success is kept for the life of the process; failures are retried on the next call.
  // Returns kNoDriver when the library cannot be loaded, lacks a function flashtune needs
  // or cannot be initialised, and kNoDevice when it reports no device.
  static Result<Driver*> Load();
  // As Load(), from the library at `library` (a path or a soname).
  static Result<Driver*> Load(const std::string& library);

  // The driver's CUDA version: 13000 for 13.0.
  int version() const { return version_; }
  std::string VersionString() const;  // "13.0"
  const std::string& library() const { return library_; }
  int device_count() const { return device_count_; }

  // Facts about device `ordinal` (0 <= ordinal < device_count(); else kInvalidArgument).
  Result<DeviceInfo> Device(int ordinal) const;
  // Facts about every device, in ordinal order.
  Result<std::vector<DeviceInfo>> Devices() const;

  // The calling thread's current CUDA context; nullptr when it has none.
  Result<CUcontext> CurrentContext() const;
  // Makes `context` current on the calling thread (nullptr: none).
  Status SetCurrentContext(CUcontext context) const;
  // The ordinal of the current context's device; kNoDevice when that device is not visible
  // to this process (CUDA_VISIBLE_DEVICES).
  Result<int> CurrentDeviceOrdinal() const;

  // The typed table of driver functions (jit/cuda_api.h) for code inside flashtune.
  const detail::CudaApi& api() const { return *api_; }
  // Encodes `spec` into the 128 bytes at `out` (64-byte aligned; kTensorMapBytes) with
  // cuTensorMapEncodeTiled. kInvalidArgument when CheckTensorMapSpec refuses it or `out` is
  // misaligned; kDriverError naming the map and the driver's error when the driver refuses.
  Status EncodeTensorMapTiled(const TensorMapSpec& spec, void* out) const;
  // OK when `result` (a CUresult) is CUDA_SUCCESS; else "<call> failed: NAME: text" with the
  // code mapped as the file comment says.
  Status Check(int result, const char* call) const;

  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

 private:
  Driver() = default;
  const detail::CudaApi* api_ = nullptr;
  std::string library_;
  int version_ = 0;
  int device_count_ = 0;
};

// A device's primary context (the one the CUDA runtime and PyTorch share), retained for
// this object's life and made current on the creating thread.
class Context {
 public:
  // Returns the retained context of device `ordinal`, current on this thread; kInvalidArgument
  // for a bad ordinal, kDriverError when the driver refuses.
  static Result<Context> Primary(const Driver& driver, int ordinal = 0);

  Context(Context&& other) noexcept;
  Context& operator=(Context&& other) noexcept;
  ~Context();

  // Makes this context current on the calling thread.
  Status MakeCurrent() const;
  // Waits for all work in the context; kFault when a kernel faulted.
  Status Synchronize() const;

  const Driver& driver() const { return *driver_; }
  int ordinal() const { return ordinal_; }
  CUcontext get() const { return context_; }

 private:
  Context(const Driver* driver, int ordinal, int device, CUcontext context)
      : driver_(driver), ordinal_(ordinal), device_(device), context_(context) {}
  void Release();
  const Driver* driver_ = nullptr;
  int ordinal_ = -1;
  int device_ = 0;  // CUdevice
  CUcontext context_ = nullptr;
};

class Function;

// A module loaded from a CUBIN image.
class Module {
 public:
  // Loads `cubin.image`. Returns kInvalidArgument for an empty image, kDriverError (with
  // the driver's message, e.g. CUDA_ERROR_NO_BINARY_FOR_GPU for the wrong arch) otherwise.
  static Result<Module> Load(const Context& context, const Cubin& cubin);
  static Result<Module> Load(const Context& context, const void* image, size_t size,
                             const std::string& name);

  Module(Module&& other) noexcept;
  Module& operator=(Module&& other) noexcept;
  ~Module();

  // The kernel `name` (its extern "C" name); kNotFound when the module has none by that name.
  Result<Function> GetFunction(const std::string& name) const;

  CUmodule get() const { return module_; }
  const std::string& name() const { return name_; }

 private:
  Module(const Driver* driver, CUcontext context, CUmodule module, std::string name)
      : driver_(driver), context_(context), module_(module), name_(std::move(name)) {}
  void Unload();
  const Driver* driver_ = nullptr;
  CUcontext context_ = nullptr;
  CUmodule module_ = nullptr;
  std::string name_;
};

// A kernel in a Module (a non-owning handle; the Module must outlive it).
class Function {
 public:
  // Lets launches use up to `bytes` of dynamic shared memory (needed above 48 KB).
  // kOutOfResources when the device cannot give that much to this kernel.
  Status SetMaxDynamicSharedMemory(int bytes);

  Result<int> NumRegisters() const;           // per thread
  Result<int> LocalBytes() const;             // local memory per thread (spills, stack)
  Result<int> StaticSharedBytes() const;
  Result<int> MaxThreadsPerBlock() const;     // for this kernel's register use
  Result<int> MaxDynamicSharedBytes() const;  // the current attribute value

  CUfunction get() const { return function_; }
  CUcontext context() const { return context_; }
  const std::string& name() const { return name_; }
  const Driver& driver() const { return *driver_; }

 private:
  friend class Module;
  Function(const Driver* driver, CUcontext context, CUfunction function, std::string name)
      : driver_(driver), context_(context), function_(function), name_(std::move(name)) {}
  Result<int> Attribute(int attribute, const char* what) const;
  const Driver* driver_ = nullptr;
  CUcontext context_ = nullptr;
  CUfunction function_ = nullptr;
  std::string name_;
};

// A non-blocking stream (does not synchronise with the legacy default stream).
class Stream {
 public:
  static Result<Stream> Create(const Context& context);
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  ~Stream();
  // Waits for the stream's work; kFault when a kernel in it faulted.
  Status Synchronize() const;
  CUstream get() const { return stream_; }

 private:
  Stream(const Driver* driver, CUcontext context, CUstream stream)
      : driver_(driver), context_(context), stream_(stream) {}
  void Destroy();
  const Driver* driver_ = nullptr;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
};

// A timing event.
class Event {
 public:
  static Result<Event> Create(const Context& context);
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  ~Event();
  Status Record(CUstream stream) const;
  Status Record(const Stream& stream) const { return Record(stream.get()); }
  Status Synchronize() const;
  // Milliseconds between two recorded, completed events.
  static Result<float> ElapsedMs(const Event& start, const Event& end);
  CUevent get() const { return event_; }

 private:
  Event(const Driver* driver, CUcontext context, CUevent event)
      : driver_(driver), context_(context), event_(event) {}
  void Destroy();
  const Driver* driver_ = nullptr;
  CUcontext context_ = nullptr;
  CUevent event_ = nullptr;
};

// Device memory of a fixed size.
class DeviceBuffer {
 public:
  // kInvalidArgument for 0 bytes; kOutOfResources when the device is out of memory.
  static Result<DeviceBuffer> Allocate(const Context& context, size_t bytes);
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  ~DeviceBuffer();

  // Copies `bytes` (at most size()) between host memory and the start of the buffer;
  // kInvalidArgument when `bytes` exceeds size(). The Async forms order on `stream`.
  Status CopyFromHost(const void* source, size_t bytes);
  Status CopyToHost(void* destination, size_t bytes) const;
  Status CopyFromHostAsync(const void* source, size_t bytes, CUstream stream);
  Status CopyToHostAsync(void* destination, size_t bytes, CUstream stream) const;
  // Sets every byte to `value`; done when it returns (the context is synchronised), so work
  // on any stream launched afterwards sees it. MemsetAsync is ordered on `stream` only.
  Status Memset(uint8_t value);
  Status MemsetAsync(uint8_t value, CUstream stream);

  CUdeviceptr get() const { return pointer_; }
  size_t size() const { return size_; }

 private:
  DeviceBuffer(const Driver* driver, CUcontext context, CUdeviceptr pointer, size_t size)
      : driver_(driver), context_(context), pointer_(pointer), size_(size) {}
  void Free();
  Status CheckSize(size_t bytes, const char* what) const;
  Status MakeCurrent() const;
  const Driver* driver_ = nullptr;
  CUcontext context_ = nullptr;
  CUdeviceptr pointer_ = 0;
  size_t size_ = 0;
};

// Launches `function` with cuLaunchKernel. `args` points to each kernel parameter, in order.
// Returns OK when the launch was queued (faults surface later, from a synchronising call, as
// kFault); kOutOfResources when the device refuses the block (registers, threads, or more
// shared memory than the function allows); kFault when an earlier kernel already faulted.
Status Launch(const Function& function, std::array<unsigned, 3> grid, std::array<unsigned, 3> block,
              unsigned shared_memory_bytes, CUstream stream, void** args);
// Launches like Launch, as a programmatic dependent of the kernel queued before it on `stream`
// (cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION; compute
// capability 9.0 and newer): its blocks may start before that kernel has finished, so the
// kernel must execute griddepcontrol.wait before it reads anything that kernel writes (and
// before it exits, so that its completion implies the earlier kernel's). Saves the launch gap
// between two dependent kernels; valid in stream capture. Errors as Launch.
Status LaunchDependent(const Function& function, std::array<unsigned, 3> grid, std::array<unsigned, 3> block,
                       unsigned shared_memory_bytes, CUstream stream, void** args);
inline Status Launch(const Function& function, std::array<unsigned, 3> grid,
                     std::array<unsigned, 3> block, unsigned shared_memory_bytes,
                     const Stream& stream, void** args) {
  return Launch(function, grid, block, shared_memory_bytes, stream.get(), args);
}


}  // namespace flashtune
