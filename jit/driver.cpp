// The dlopen'ed CUDA driver behind a typed table; see include/flashtune/driver.h. Over 600
// lines: every driver object (context, module, function, stream, event, memory, graph, tensor
// map) wraps a handful of calls, and they share one error mapping.
#include "flashtune/driver.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

#include "flashtune/compiler.h"
#include "jit/cuda_api.h"

namespace flashtune {
namespace {

#define FT_STRINGIFY2(x) #x
// Expands cuda.h's name macros first: FT_STRINGIFY(cuMemAlloc) is "cuMemAlloc_v2".
#define FT_STRINGIFY(x) FT_STRINGIFY2(x)

bool IsFault(CUresult r) {
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
      return true;
    default:
      return false;
  }
}

Code CodeFor(CUresult r) {
  if (IsFault(r)) return Code::kFault;
  switch (r) {
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
    case CUDA_ERROR_OUT_OF_MEMORY:
      return Code::kOutOfResources;
    case CUDA_ERROR_NO_DEVICE:
      return Code::kNoDevice;
    default:
      return Code::kDriverError;
  }
}

std::string ErrorText(const detail::CudaApi& api, CUresult r, const char* call) {
  const char* name = nullptr;
  const char* text = nullptr;
  // Unknown codes (a newer driver, or the toolkit's stub library) keep their number.
  const std::string number = "CUresult " + std::to_string(static_cast<int>(r));
  if (api.cuGetErrorName(r, &name) != CUDA_SUCCESS || name == nullptr) name = number.c_str();
  if (api.cuGetErrorString(r, &text) != CUDA_SUCCESS || text == nullptr) text = "no description from the driver";
  return std::string(call) + " failed: " + name + ": " + text;
}

std::string FormatUuid(const CUuuid& uuid) {
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  char out[64];
  std::snprintf(out, sizeof out,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return out;
}

std::mutex g_load_mutex;
// Never destroyed, like the drivers it holds: kernels may run (and the leak checker look) after
// static destructors.
std::map<std::string, Driver*>& LoadedDrivers() {
  static auto* drivers = new std::map<std::string, Driver*>;
  return *drivers;
}

}  // namespace

std::string DeviceInfo::ComputeCapability() const {
  return std::to_string(cc_major) + "." + std::to_string(cc_minor);
}

Result<Driver*> Driver::Load() {
  const char* override_path = std::getenv("FLASHTUNE_LIBCUDA");
  return Load(override_path && *override_path ? override_path : "libcuda.so.1");
}

Result<Driver*> Driver::Load(const std::string& library) {
  std::lock_guard<std::mutex> lock(g_load_mutex);
  auto& loaded = LoadedDrivers();
  if (auto it = loaded.find(library); it != loaded.end()) return it->second;

  void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    return Status(Code::kNoDriver,
                  "no CUDA driver found (" + (why ? std::string(why) : library + ": dlopen failed") +
                      "); GPU work needs the NVIDIA driver");
  }
  auto api = std::make_unique<detail::CudaApi>();
#define FT_CUDA_API_LOOKUP(name)                                                              \
  api->name = reinterpret_cast<decltype(api->name)>(::dlsym(handle, FT_STRINGIFY(name)));     \
  if (api->name == nullptr) {                                                                 \
    ::dlclose(handle);                                                                        \
    return Status(Code::kNoDriver, "no usable CUDA driver: " + library + " lacks " +          \
                                       FT_STRINGIFY(name) + " (flashtune needs a CUDA " +     \
                                       std::to_string(CUDA_VERSION / 1000) + " driver)");     \
  }
  FT_CUDA_API_FUNCTIONS(FT_CUDA_API_LOOKUP)
#undef FT_CUDA_API_LOOKUP

  int version = 0;
  if (api->cuDriverGetVersion(&version) != CUDA_SUCCESS) version = 0;
  const std::string version_text =
      version > 0 ? std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10) : "of unknown version";
  if (CUresult r = api->cuInit(0); r != CUDA_SUCCESS) {
    std::string text = ErrorText(*api, r, "cuInit");
    ::dlclose(handle);
    if (r == CUDA_ERROR_NO_DEVICE)
      return Status(Code::kNoDevice, "no CUDA device (driver " + version_text + "; " + text + ")");
    return Status(Code::kNoDriver, "CUDA driver " + version_text + " could not start: " + text);
  }
  int count = 0;
  if (CUresult r = api->cuDeviceGetCount(&count); r != CUDA_SUCCESS || count <= 0) {
    std::string text = r != CUDA_SUCCESS ? ErrorText(*api, r, "cuDeviceGetCount") : "it reports 0 devices";
    return Status(Code::kNoDevice, "no CUDA device (driver " + version_text + "; " + text + ")");
  }
  auto* driver = new Driver();  // lives for the process: modules may hold its functions
  driver->api_ = api.release();
  driver->library_ = library;
  driver->version_ = version;
  driver->device_count_ = count;
  loaded[library] = driver;
  return driver;
}

std::string Driver::VersionString() const {
  return std::to_string(version_ / 1000) + "." + std::to_string(version_ % 1000 / 10);
}

Status Driver::Check(int result, const char* call) const {
  const auto r = static_cast<CUresult>(result);
  if (r == CUDA_SUCCESS) return Status::Ok();
  return Status(CodeFor(r), ErrorText(*api_, r, call));
}

Result<CUcontext> Driver::CurrentContext() const {
  CUcontext context = nullptr;
  FT_RETURN_IF_ERROR(Check(api_->cuCtxGetCurrent(&context), "cuCtxGetCurrent"));
  return context;
}

Status Driver::SetCurrentContext(CUcontext context) const {
  return Check(api_->cuCtxSetCurrent(context), "cuCtxSetCurrent");
}

Result<int> Driver::CurrentDeviceOrdinal() const {
  CUdevice device = 0;
  FT_RETURN_IF_ERROR(Check(api_->cuCtxGetDevice(&device), "cuCtxGetDevice"));
  for (int i = 0; i < device_count_; ++i) {
    CUdevice d = 0;
    if (api_->cuDeviceGet(&d, i) == CUDA_SUCCESS && d == device) return i;
  }
  return Status(Code::kNoDevice, "the current context's device is not visible");
}

Result<DeviceInfo> Driver::Device(int ordinal) const {
  if (ordinal < 0 || ordinal >= device_count_)
    return Status(Code::kInvalidArgument, "device ordinal " + std::to_string(ordinal) +
                                              " out of range; allowed: 0.." + std::to_string(device_count_ - 1));
  const detail::CudaApi& api = *api_;
  CUdevice device = 0;
  FT_RETURN_IF_ERROR(Check(api.cuDeviceGet(&device, ordinal), "cuDeviceGet"));
  DeviceInfo info;
  info.ordinal = ordinal;
  char name[256] = {};
  FT_RETURN_IF_ERROR(Check(api.cuDeviceGetName(name, sizeof name - 1, device), "cuDeviceGetName"));
  info.name = name;
  CUuuid uuid{};
  FT_RETURN_IF_ERROR(Check(api.cuDeviceGetUuid(&uuid, device), "cuDeviceGetUuid"));
  info.uuid = FormatUuid(uuid);
  size_t total = 0;
  FT_RETURN_IF_ERROR(Check(api.cuDeviceTotalMem(&total, device), "cuDeviceTotalMem"));
  info.total_memory_bytes = total;
  const struct {
    CUdevice_attribute attribute;
    int* field;
  } attributes[] = {
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &info.cc_major},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &info.cc_minor},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &info.sm_count},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &info.max_smem_per_block_optin},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, &info.max_smem_per_block},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, &info.max_smem_per_sm},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &info.max_threads_per_block},
      {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, &info.regs_per_sm},
      {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, &info.l2_bytes},
      {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, &info.clock_khz},
      {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, &info.memory_clock_khz},
      {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, &info.memory_bus_width_bits},
  };
  for (const auto& a : attributes)
    FT_RETURN_IF_ERROR(Check(api.cuDeviceGetAttribute(a.field, a.attribute, device), "cuDeviceGetAttribute"));
  return info;
}

Result<std::vector<DeviceInfo>> Driver::Devices() const {
  std::vector<DeviceInfo> devices;
  for (int i = 0; i < device_count_; ++i) {
    Result<DeviceInfo> info = Device(i);
    if (!info.ok()) return info.status();
    devices.push_back(std::move(*info));
  }
  return devices;
}

// ---- Context ----

Result<Context> Context::Primary(const Driver& driver, int ordinal) {
  if (ordinal < 0 || ordinal >= driver.device_count())
    return Status(Code::kInvalidArgument, "device ordinal " + std::to_string(ordinal) +
                                              " out of range; allowed: 0.." +
                                              std::to_string(driver.device_count() - 1));
  const detail::CudaApi& api = driver.api();
  CUdevice device = 0;
  FT_RETURN_IF_ERROR(driver.Check(api.cuDeviceGet(&device, ordinal), "cuDeviceGet"));
  CUcontext context = nullptr;
  FT_RETURN_IF_ERROR(driver.Check(api.cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain"));
  Context result(&driver, ordinal, device, context);
  FT_RETURN_IF_ERROR(result.MakeCurrent());
  return result;
}

Context::Context(Context&& other) noexcept
    : driver_(other.driver_), ordinal_(other.ordinal_), device_(other.device_), context_(other.context_) {
  other.context_ = nullptr;
}

Context& Context::operator=(Context&& other) noexcept {
  if (this != &other) {
    Release();
    driver_ = other.driver_;
    ordinal_ = other.ordinal_;
    device_ = other.device_;
    context_ = other.context_;
    other.context_ = nullptr;
  }
  return *this;
}

Context::~Context() { Release(); }

void Context::Release() {
  if (context_ == nullptr) return;
  (void)driver_->api().cuDevicePrimaryCtxRelease(static_cast<CUdevice>(device_));
  context_ = nullptr;
}

Status Context::MakeCurrent() const {
  return driver_->Check(driver_->api().cuCtxSetCurrent(context_), "cuCtxSetCurrent");
}

Status Context::Synchronize() const {
  FT_RETURN_IF_ERROR(MakeCurrent());
  return driver_->Check(driver_->api().cuCtxSynchronize(), "cuCtxSynchronize");
}

// ---- Module and Function ----

Result<Module> Module::Load(const Context& context, const Cubin& cubin) {
  return Load(context, cubin.image.data(), cubin.image.size(), cubin.name);
}

Result<Module> Module::Load(const Context& context, const void* image, size_t size, const std::string& name) {
  if (image == nullptr || size == 0)
    return Status(Code::kInvalidArgument, "cannot load module '" + name + "': the image is empty");
  const Driver& driver = context.driver();
  FT_RETURN_IF_ERROR(context.MakeCurrent());
  CUmodule module = nullptr;
  Status s = driver.Check(driver.api().cuModuleLoadData(&module, image), "cuModuleLoadData");
  if (!s.ok()) return s.WithVariant(name);
  return Module(&driver, context.get(), module, name);
}

Module::Module(Module&& other) noexcept
    : driver_(other.driver_), context_(other.context_), module_(other.module_), name_(std::move(other.name_)) {
  other.module_ = nullptr;
}

Module& Module::operator=(Module&& other) noexcept {
  if (this != &other) {
    Unload();
    driver_ = other.driver_;
    context_ = other.context_;
    module_ = other.module_;
    name_ = std::move(other.name_);
    other.module_ = nullptr;
  }
  return *this;
}

Module::~Module() { Unload(); }

void Module::Unload() {
  if (module_ == nullptr) return;
  (void)driver_->api().cuCtxSetCurrent(context_);
  (void)driver_->api().cuModuleUnload(module_);
  module_ = nullptr;
}

Result<Function> Module::GetFunction(const std::string& name) const {
  CUfunction function = nullptr;
  const CUresult r = driver_->api().cuModuleGetFunction(&function, module_, name.c_str());
  if (r == CUDA_ERROR_NOT_FOUND)
    return Status(Code::kNotFound, "module '" + name_ + "' has no kernel named '" + name + "'");
  Status s = driver_->Check(r, "cuModuleGetFunction");
  if (!s.ok()) return s.WithVariant(name_);
  return Function(driver_, context_, function, name);
}

Status Function::SetMaxDynamicSharedMemory(int bytes) {
  const CUresult r =
      driver_->api().cuFuncSetAttribute(function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
  Status s = driver_->Check(r, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  if (r == CUDA_ERROR_INVALID_VALUE && bytes > 0) {
    // The driver answers CUDA_ERROR_INVALID_VALUE when static + dynamic exceed the opt-in limit.
    return Status(Code::kOutOfResources, "kernel '" + name_ + "' cannot get " + std::to_string(bytes) +
                                             " bytes of dynamic shared memory: " + s.message());
  }
  return s;
}

Result<int> Function::Attribute(int attribute, const char* what) const {
  int value = 0;
  FT_RETURN_IF_ERROR(driver_->Check(
      driver_->api().cuFuncGetAttribute(&value, static_cast<CUfunction_attribute>(attribute), function_), what));
  return value;
}

Result<int> Function::NumRegisters() const {
  return Attribute(CU_FUNC_ATTRIBUTE_NUM_REGS, "cuFuncGetAttribute(NUM_REGS)");
}
Result<int> Function::LocalBytes() const {
  return Attribute(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, "cuFuncGetAttribute(LOCAL_SIZE_BYTES)");
}
Result<int> Function::StaticSharedBytes() const {
  return Attribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, "cuFuncGetAttribute(SHARED_SIZE_BYTES)");
}
Result<int> Function::MaxThreadsPerBlock() const {
  return Attribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "cuFuncGetAttribute(MAX_THREADS_PER_BLOCK)");
}
Result<int> Function::MaxDynamicSharedBytes() const {
  return Attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                   "cuFuncGetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
}

namespace {

// The driver's answer to a launch as a Status: `what` names the call.
Status LaunchStatus(const Function& function, CUresult r, const char* what, std::array<unsigned, 3> block,
                    unsigned shared_memory_bytes) {
  if (r == CUDA_SUCCESS) return Status::Ok();
  const Driver& driver = function.driver();
  Status s = driver.Check(r, what);
  if (r == CUDA_ERROR_INVALID_VALUE) {
    // The driver says INVALID_VALUE, not OUT_OF_RESOURCES, for a block that asks for more
    // threads or dynamic shared memory than the kernel allows: report it as what it is.
    const uint64_t threads = uint64_t{block[0]} * block[1] * block[2];
    Result<int> max_threads = function.MaxThreadsPerBlock();
    Result<int> max_smem = function.MaxDynamicSharedBytes();
    if ((max_threads.ok() && threads > static_cast<uint64_t>(*max_threads)) ||
        (max_smem.ok() && shared_memory_bytes > static_cast<unsigned>(*max_smem))) {
      s = Status(Code::kOutOfResources,
                 s.message() + " (block of " + std::to_string(threads) + " threads, " +
                     std::to_string(shared_memory_bytes) + " bytes dynamic shared memory; kernel allows " +
                     (max_threads.ok() ? std::to_string(*max_threads) : "?") + " threads, " +
                     (max_smem.ok() ? std::to_string(*max_smem) : "?") + " bytes)");
    }
  }
  return s.WithVariant(function.name());
}

}  // namespace

Status Launch(const Function& function, std::array<unsigned, 3> grid, std::array<unsigned, 3> block,
              unsigned shared_memory_bytes, CUstream stream, void** args) {
  const Driver& driver = function.driver();
  FT_RETURN_IF_ERROR(driver.Check(driver.api().cuCtxSetCurrent(function.context()), "cuCtxSetCurrent"));
  const CUresult r = driver.api().cuLaunchKernel(function.get(), grid[0], grid[1], grid[2], block[0], block[1],
                                                 block[2], shared_memory_bytes, stream, args, nullptr);
  return LaunchStatus(function, r, "cuLaunchKernel", block, shared_memory_bytes);
}

Status LaunchDependent(const Function& function, std::array<unsigned, 3> grid, std::array<unsigned, 3> block,
                       unsigned shared_memory_bytes, CUstream stream, void** args) {
  const Driver& driver = function.driver();
  FT_RETURN_IF_ERROR(driver.Check(driver.api().cuCtxSetCurrent(function.context()), "cuCtxSetCurrent"));
  CUlaunchAttribute attribute{};
  attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attribute.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig config{};
  config.gridDimX = grid[0], config.gridDimY = grid[1], config.gridDimZ = grid[2];
  config.blockDimX = block[0], config.blockDimY = block[1], config.blockDimZ = block[2];
  config.sharedMemBytes = shared_memory_bytes;
  config.hStream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  const CUresult r = driver.api().cuLaunchKernelEx(&config, function.get(), args, nullptr);
  return LaunchStatus(function, r, "cuLaunchKernelEx", block, shared_memory_bytes);
}

// ---- Stream ----

Result<Stream> Stream::Create(const Context& context) {
  FT_RETURN_IF_ERROR(context.MakeCurrent());
  const Driver& driver = context.driver();
  CUstream stream = nullptr;
  FT_RETURN_IF_ERROR(driver.Check(driver.api().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate"));
  return Stream(&driver, context.get(), stream);
}

Stream::Stream(Stream&& other) noexcept
    : driver_(other.driver_), context_(other.context_), stream_(other.stream_) {
  other.stream_ = nullptr;
}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    Destroy();
    driver_ = other.driver_;
    context_ = other.context_;
    stream_ = other.stream_;
    other.stream_ = nullptr;
  }
  return *this;
}

Stream::~Stream() { Destroy(); }

void Stream::Destroy() {
  if (stream_ == nullptr) return;
  (void)driver_->api().cuCtxSetCurrent(context_);
  (void)driver_->api().cuStreamDestroy(stream_);
  stream_ = nullptr;
}

Status Stream::Synchronize() const {
  return driver_->Check(driver_->api().cuStreamSynchronize(stream_), "cuStreamSynchronize");
}

// ---- Event ----

Result<Event> Event::Create(const Context& context) {
  FT_RETURN_IF_ERROR(context.MakeCurrent());
  const Driver& driver = context.driver();
  CUevent event = nullptr;
  FT_RETURN_IF_ERROR(driver.Check(driver.api().cuEventCreate(&event, CU_EVENT_DEFAULT), "cuEventCreate"));
  return Event(&driver, context.get(), event);
}

Event::Event(Event&& other) noexcept : driver_(other.driver_), context_(other.context_), event_(other.event_) {
  other.event_ = nullptr;
}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    Destroy();
    driver_ = other.driver_;
    context_ = other.context_;
    event_ = other.event_;
    other.event_ = nullptr;
  }
  return *this;
}

Event::~Event() { Destroy(); }

void Event::Destroy() {
  if (event_ == nullptr) return;
  (void)driver_->api().cuCtxSetCurrent(context_);
  (void)driver_->api().cuEventDestroy(event_);
  event_ = nullptr;
}

Status Event::Record(CUstream stream) const {
  return driver_->Check(driver_->api().cuEventRecord(event_, stream), "cuEventRecord");
}

Status Event::Synchronize() const {
  return driver_->Check(driver_->api().cuEventSynchronize(event_), "cuEventSynchronize");
}

Result<float> Event::ElapsedMs(const Event& start, const Event& end) {
  float ms = 0;
  FT_RETURN_IF_ERROR(
      start.driver_->Check(start.driver_->api().cuEventElapsedTime(&ms, start.event_, end.event_), "cuEventElapsedTime"));
  return ms;
}

// ---- DeviceBuffer ----

Result<DeviceBuffer> DeviceBuffer::Allocate(const Context& context, size_t bytes) {
  if (bytes == 0) return Status(Code::kInvalidArgument, "device buffer size must be > 0 bytes");
  FT_RETURN_IF_ERROR(context.MakeCurrent());
  const Driver& driver = context.driver();
  CUdeviceptr pointer = 0;
  FT_RETURN_IF_ERROR(driver.Check(driver.api().cuMemAlloc(&pointer, bytes), "cuMemAlloc"));
  return DeviceBuffer(&driver, context.get(), pointer, bytes);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : driver_(other.driver_), context_(other.context_), pointer_(other.pointer_), size_(other.size_) {
  other.pointer_ = 0;
  other.size_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    Free();
    driver_ = other.driver_;
    context_ = other.context_;
    pointer_ = other.pointer_;
    size_ = other.size_;
    other.pointer_ = 0;
    other.size_ = 0;
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() { Free(); }

void DeviceBuffer::Free() {
  if (pointer_ == 0) return;
  (void)driver_->api().cuCtxSetCurrent(context_);
  (void)driver_->api().cuMemFree(pointer_);
  pointer_ = 0;
  size_ = 0;
}

Status DeviceBuffer::MakeCurrent() const {
  return driver_->Check(driver_->api().cuCtxSetCurrent(context_), "cuCtxSetCurrent");
}

Status DeviceBuffer::CheckSize(size_t bytes, const char* what) const {
  if (bytes <= size_) return Status::Ok();
  return Status(Code::kInvalidArgument, std::string(what) + ": " + std::to_string(bytes) +
                                            " bytes requested; allowed: at most the buffer's " +
                                            std::to_string(size_) + " bytes");
}

Status DeviceBuffer::CopyFromHost(const void* source, size_t bytes) {
  FT_RETURN_IF_ERROR(CheckSize(bytes, "DeviceBuffer::CopyFromHost"));
  FT_RETURN_IF_ERROR(MakeCurrent());
  return driver_->Check(driver_->api().cuMemcpyHtoD(pointer_, source, bytes), "cuMemcpyHtoD");
}

Status DeviceBuffer::CopyToHost(void* destination, size_t bytes) const {
  FT_RETURN_IF_ERROR(CheckSize(bytes, "DeviceBuffer::CopyToHost"));
  FT_RETURN_IF_ERROR(MakeCurrent());
  return driver_->Check(driver_->api().cuMemcpyDtoH(destination, pointer_, bytes), "cuMemcpyDtoH");
}

Status DeviceBuffer::CopyFromHostAsync(const void* source, size_t bytes, CUstream stream) {
  FT_RETURN_IF_ERROR(CheckSize(bytes, "DeviceBuffer::CopyFromHostAsync"));
  FT_RETURN_IF_ERROR(MakeCurrent());
  return driver_->Check(driver_->api().cuMemcpyHtoDAsync(pointer_, source, bytes, stream), "cuMemcpyHtoDAsync");
}

Status DeviceBuffer::CopyToHostAsync(void* destination, size_t bytes, CUstream stream) const {
  FT_RETURN_IF_ERROR(CheckSize(bytes, "DeviceBuffer::CopyToHostAsync"));
  FT_RETURN_IF_ERROR(MakeCurrent());
  return driver_->Check(driver_->api().cuMemcpyDtoHAsync(destination, pointer_, bytes, stream),
                        "cuMemcpyDtoHAsync");
}

Status DeviceBuffer::Memset(uint8_t value) {
  FT_RETURN_IF_ERROR(MakeCurrent());
  FT_RETURN_IF_ERROR(driver_->Check(driver_->api().cuMemsetD8(pointer_, value, size_), "cuMemsetD8"));
  // cuMemsetD8 on device memory may still be running when it returns, on the legacy stream,
  // which a non-blocking stream does not wait for: a kernel launched next could see its
  // writes land afterwards (poisoned outputs overwriting results). Finish it here.
  return driver_->Check(driver_->api().cuCtxSynchronize(), "cuCtxSynchronize");
}

Status DeviceBuffer::MemsetAsync(uint8_t value, CUstream stream) {
  FT_RETURN_IF_ERROR(MakeCurrent());
  return driver_->Check(driver_->api().cuMemsetD8Async(pointer_, value, size_, stream), "cuMemsetD8Async");
}

}  // namespace flashtune

namespace flashtune {
namespace {

std::string TensorMapWhere(const TensorMapSpec& spec) {
  return "tensor map '" + (spec.name.empty() ? std::string("?") : spec.name) + "': ";
}

}  // namespace

Status CheckTensorMapSpec(const TensorMapSpec& spec) {
  // The message prefix only on failure: this runs on every launch that encodes a map.
  auto bad = [&](const std::string& what) { return Status(Code::kInvalidArgument, TensorMapWhere(spec) + what); };
  if (spec.rank < 1 || spec.rank > 5) return bad("rank " + std::to_string(spec.rank) + " out of range; allowed: 1..5");
  const uint64_t address = reinterpret_cast<uintptr_t>(spec.address);
  if (address == 0) return bad("global address is null");
  if (address % 16 != 0) return bad("global address " + std::to_string(address) + " is not 16-byte aligned");
  const uint64_t element_bytes = 2;  // both supported types are 16-bit
  for (int i = 0; i < spec.rank; ++i) {
    const std::string d = std::to_string(i);
    if (spec.dims[i] < 1 || spec.dims[i] > (uint64_t(1) << 32))
      return bad("dims[" + d + "] = " + std::to_string(spec.dims[i]) + " out of range; allowed: 1..2^32");
    if (spec.box[i] < 1 || spec.box[i] > 256)
      return bad("box[" + d + "] = " + std::to_string(spec.box[i]) + " out of range; allowed: 1..256");
    if (spec.element_strides[i] < 1 || spec.element_strides[i] > 8)
      return bad("element_strides[" + d + "] = " + std::to_string(spec.element_strides[i]) +
                 " out of range; allowed: 1..8");
  }
  for (int i = 0; i + 1 < spec.rank; ++i) {
    const uint64_t s = spec.strides_bytes[i];
    if (s % 16 != 0 || s == 0 || s >= (uint64_t(1) << 40))
      return bad("strides_bytes[" + std::to_string(i) + "] (dimension " + std::to_string(i + 1) + ") = " +
                 std::to_string(s) + " must be a nonzero multiple of 16 below 2^40");
  }
  const uint64_t inner = spec.box[0] * element_bytes;
  if (inner % 16 != 0) return bad("box[0] spans " + std::to_string(inner) + " bytes; must be a multiple of 16");
  const uint64_t swizzle_span = spec.swizzle == TensorMapSwizzle::k32B    ? 32
                                : spec.swizzle == TensorMapSwizzle::k64B  ? 64
                                : spec.swizzle == TensorMapSwizzle::k128B ? 128
                                                                          : 0;
  if (swizzle_span != 0 && inner > swizzle_span)
    return bad("box[0] spans " + std::to_string(inner) + " bytes, more than the " + std::to_string(swizzle_span) +
               "-byte swizzle allows");
  return Status::Ok();
}

Status Driver::EncodeTensorMapTiled(const TensorMapSpec& spec, void* out) const {
  FT_RETURN_IF_ERROR(CheckTensorMapSpec(spec));
  if (out == nullptr || reinterpret_cast<uintptr_t>(out) % 64 != 0)
    return Status(Code::kInvalidArgument, TensorMapWhere(spec) + "output is not a 64-byte aligned 128-byte buffer");
  static_assert(sizeof(CUtensorMap) == kTensorMapBytes, "CUtensorMap size changed");
  cuuint64_t dims[5], strides[4];
  cuuint32_t box[5], element_strides[5];
  for (int i = 0; i < 5; ++i) {
    dims[i] = spec.dims[i];
    box[i] = spec.box[i];
    element_strides[i] = spec.element_strides[i];
    if (i < 4) strides[i] = spec.strides_bytes[i];
  }
  const CUtensorMapDataType type =
      spec.dtype == TensorMapDataType::kBFloat16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
  switch (spec.swizzle) {
    case TensorMapSwizzle::kNone: swizzle = CU_TENSOR_MAP_SWIZZLE_NONE; break;
    case TensorMapSwizzle::k32B: swizzle = CU_TENSOR_MAP_SWIZZLE_32B; break;
    case TensorMapSwizzle::k64B: swizzle = CU_TENSOR_MAP_SWIZZLE_64B; break;
    case TensorMapSwizzle::k128B: swizzle = CU_TENSOR_MAP_SWIZZLE_128B; break;
  }
  CUtensorMapL2promotion l2 = CU_TENSOR_MAP_L2_PROMOTION_NONE;
  switch (spec.l2_promotion) {
    case TensorMapL2Promotion::kNone: l2 = CU_TENSOR_MAP_L2_PROMOTION_NONE; break;
    case TensorMapL2Promotion::k64B: l2 = CU_TENSOR_MAP_L2_PROMOTION_L2_64B; break;
    case TensorMapL2Promotion::k128B: l2 = CU_TENSOR_MAP_L2_PROMOTION_L2_128B; break;
    case TensorMapL2Promotion::k256B: l2 = CU_TENSOR_MAP_L2_PROMOTION_L2_256B; break;
  }
  const CUresult r = api_->cuTensorMapEncodeTiled(
      static_cast<CUtensorMap*>(out), type, cuuint32_t(spec.rank), const_cast<void*>(spec.address), dims, strides,
      box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, l2,
      spec.oob_zero ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE : CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA);
  if (r == CUDA_SUCCESS) return Status::Ok();
  Status s = Check(r, "cuTensorMapEncodeTiled");
  return Status(s.code(), TensorMapWhere(spec) + s.message());
}

}  // namespace flashtune
