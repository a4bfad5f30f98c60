// tests/support/graph_capture.h — one Runtime::forward() captured into an instantiated CUDA
// graph, for the tests that replay a call (on a GPU, and on the recording fake driver).
//
// Contract: CaptureForward captures in global mode (the strictest: any allocation or
// synchronisation in the process breaks it), instantiates the graph and destroys it (the
// instantiated graph stands alone); nullptr, with a gtest failure saying why, where the capture,
// the call or the instantiation failed. The caller destroys what it returns.
// Thread safety: none; one gtest thread.
#pragma once

#include <gtest/gtest.h>

#include "flashtune/forward_args.h"
#include "flashtune/runtime.h"
#include "jit/cuda_api.h"

namespace flashtune::testing {

inline CUgraphExec CaptureForward(const detail::CudaApi& api, Runtime& rt, const ForwardArgs& a, CUstream stream) {
  if (api.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL) != CUDA_SUCCESS) {
    ADD_FAILURE() << "cuStreamBeginCapture failed";
    return nullptr;
  }
  const Status s = rt.forward(a, stream);
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  if (api.cuStreamEndCapture(stream, &graph) != CUDA_SUCCESS) ADD_FAILURE() << "forward() broke the capture";
  else if (!s.ok()) ADD_FAILURE() << s.ToString();
  else if (api.cuGraphInstantiate(&exec, graph, 0) != CUDA_SUCCESS) ADD_FAILURE() << "cuGraphInstantiate failed";
  if (graph != nullptr) api.cuGraphDestroy(graph);
  return exec;
}

}  // namespace flashtune::testing
