// jit/cuda_api.h (private) — the CUDA driver functions flashtune uses, as a typed table
// filled from libcuda.so.1 at run time (flashtune never links libcuda).
//
// Each entry's type comes from cuda.h; cuda.h maps some names to versioned symbols
// (cuMemAlloc -> cuMemAlloc_v2), and FT_CUDA_SYMBOL looks up exactly the versioned name
// the header promises, so the table's types and the symbols agree.
// Thread safety: filled once, then read-only.
#pragma once

#include <cuda.h>

namespace flashtune::detail {

// X(name) for every driver entry point in the table.
#define FT_CUDA_API_FUNCTIONS(X)                                                                \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGetCount)     \
  X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetUuid) X(cuDeviceGetAttribute)                  \
  X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease)                  \
  X(cuDevicePrimaryCtxReset) X(cuCtxSetCurrent) X(cuCtxGetCurrent) X(cuCtxSynchronize)           \
  X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncSetAttribute)             \
  X(cuFuncGetAttribute) X(cuLaunchKernel) X(cuLaunchKernelEx) X(cuStreamCreate) X(cuStreamDestroy)                   \
  X(cuStreamSynchronize) X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord)                     \
  X(cuEventSynchronize) X(cuEventElapsedTime) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD)         \
  X(cuMemcpyDtoH) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemsetD8) X(cuMemsetD8Async)   \
  X(cuCtxGetDevice) X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuGraphInstantiate)        \
  X(cuGraphLaunch) X(cuGraphDestroy) X(cuGraphExecDestroy)                                        \
  X(cuTensorMapEncodeTiled)

struct CudaApi {
#define FT_CUDA_API_MEMBER(name) decltype(&::name) name = nullptr;
  FT_CUDA_API_FUNCTIONS(FT_CUDA_API_MEMBER)
#undef FT_CUDA_API_MEMBER
};

}  // namespace flashtune::detail
