// CompileQueue: background compiles, a Get that jumps the queue, errors carried through.
#include "tuner/compile_queue.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace flashtune::detail {
namespace {

Compiler Uncached() { return Compiler({.cache_dir = "-", .threads = 1}); }

CompileRequest Kernel(int i) {
  const std::string name = "queued_" + std::to_string(i);
  return {name, "extern \"C\" __global__ void " + name + "(float* x) { x[threadIdx.x] *= " + std::to_string(i) + ".f; }\n",
          "sm_80", {}};
}

TEST(CompileQueue, GetReturnsWhatCompileReturns) {
  Compiler compiler = Uncached();
  CompileQueue queue(compiler, 2);
  std::vector<CompileRequest> requests;
  for (int i = 0; i < 4; ++i) requests.push_back(Kernel(i));
  queue.Enqueue(requests);
  for (const CompileRequest& r : requests) {
    Result<Cubin> queued = queue.Get(r);
    Result<Cubin> direct = compiler.Compile(r);
    ASSERT_TRUE(queued.ok()) << queued.status().ToString();
    ASSERT_TRUE(direct.ok()) << direct.status().ToString();
    EXPECT_EQ(queued->name, r.name);
    EXPECT_EQ(queued->image, direct->image);
    EXPECT_EQ(queued->resources.registers, direct->resources.registers);
  }
  EXPECT_EQ(queue.started(), 4);
}

TEST(CompileQueue, RequestNeverEnqueuedIsCompiledByGet) {
  Compiler compiler = Uncached();
  CompileQueue queue(compiler, 1);
  Result<Cubin> cubin = queue.Get(Kernel(7));
  ASSERT_TRUE(cubin.ok()) << cubin.status().ToString();
  EXPECT_EQ(cubin->name, "queued_7");
  EXPECT_EQ(queue.started(), 1);
}

TEST(CompileQueue, CompileErrorCarriesTheNvrtcLog) {
  Compiler compiler = Uncached();
  CompileQueue queue(compiler, 1);
  CompileRequest broken{"broken", "extern \"C\" __global__ void broken() { no_such_symbol = 1; }\n", "sm_80", {}};
  queue.Enqueue({broken});
  Result<Cubin> cubin = queue.Get(broken);
  ASSERT_FALSE(cubin.ok());
  EXPECT_EQ(cubin.status().code(), Code::kCompileError);
  EXPECT_NE(cubin.status().log().find("no_such_symbol"), std::string::npos) << cubin.status().log();
}

TEST(CompileQueue, SameNameIsCompiledOnce) {
  Compiler compiler = Uncached();
  CompileQueue queue(compiler, 2);
  queue.Enqueue({Kernel(1), Kernel(1)});
  queue.Enqueue({Kernel(1)});
  ASSERT_TRUE(queue.Get(Kernel(1)).ok());
  ASSERT_TRUE(queue.Get(Kernel(1)).ok());
  EXPECT_EQ(queue.started(), 1);
}

TEST(CompileQueue, GetJumpsTheQueueAndDestructionDropsTheRest) {
  Compiler compiler = Uncached();
  std::vector<CompileRequest> requests;
  for (int i = 0; i < 40; ++i) requests.push_back(Kernel(100 + i));
  {
    CompileQueue queue(compiler, 1);
    queue.Enqueue(requests);
    // The last one is needed now: compiled on this thread, not after the 39 before it.
    ASSERT_TRUE(queue.Get(requests.back()).ok());
    EXPECT_LT(queue.started(), 40);
  }  // returns without compiling what is still queued
}

}  // namespace
}  // namespace flashtune::detail
