// The GpuMeasurer's parent side without a GPU: it compiles in the parent and sends ELF cubins,
// keeps a compile error from the worker, and restarts a worker that faulted or hung. The worker
// is tests/fixtures/fake_gpu_worker.cpp, which speaks the real protocol; the real worker is
// tested on a GPU (tests/tuner/tune_gpu_test.cpp).
#include "flashtune/gpu_measurer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "flashtune/hash.h"
#include "flashtune/space.h"
#include "tests/support/temp_dir.h"

namespace flashtune {
namespace {

const Problem kProblem{DType::kBF16, 64, false, 1, 128, 128, 2, 2};

// A small kernel standing in for a variant's source: compiles in a fraction of a second.
std::string TinyKernel(const Variant& v) {
  return "extern \"C\" __global__ void " + v.Uri() + "(float* x) { x[threadIdx.x] += 1.0f; }\n";
}

class GpuMeasurerWithFakeWorker : public ::testing::Test {
 protected:
  void SetUp() override {
    log_ = dir_.path() + "/worker.log";
    ::setenv("FAKE_GPU_WORKER_LOG", log_.c_str(), 1);
    auto space = EnumerateSpace(ClassOf(kProblem));
    ASSERT_TRUE(space.ok());
    a_ = (*space)[0];
    b_ = (*space)[1];
    trusted_ = DefaultVariant(ClassOf(kProblem), 232448);
    options_.worker_executable = FLASHTUNE_FAKE_GPU_WORKER;
    options_.cache_dir = "-";
    options_.compile_threads = 1;  // the rest of the class compiles in the background: keep it small
    for (const Variant& v : {a_, b_, trusted_}) options_.source_overrides[v.Uri()] = TinyKernel(v);
  }
  void TearDown() override {
    for (const char* name :
         {"FAKE_GPU_WORKER_LOG", "FAKE_GPU_WORKER_FAULT", "FAKE_GPU_WORKER_HANG", "FAKE_GPU_WORKER_PROTOCOL"})
      ::unsetenv(name);
  }
  std::unique_ptr<Measurer> Make() {
    auto made = MakeGpuMeasurers({}, options_);
    EXPECT_TRUE(made.ok()) << made.status().ToString();
    return made.ok() ? std::move(made->front()) : nullptr;
  }
  std::string WorkerLog() const {
    std::ifstream in(log_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  testing::TempDir dir_;
  std::string log_;
  Variant a_, b_, trusted_;
  GpuMeasurerOptions options_;
};

TEST_F(GpuMeasurerWithFakeWorker, LearnsTheDeviceFromTheWorkerAndMeasuresThroughIt) {
  auto measurer = Make();
  ASSERT_NE(measurer, nullptr);
  EXPECT_EQ(measurer->Device().name, "Fake GPU");
  EXPECT_EQ(measurer->Device().uuid, "GPU-fake-0");
  auto m = measurer->Measure(kProblem, a_);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_TRUE(m->status.ok()) << m->status.ToString();  // the worker saw two ELF cubins
  EXPECT_GT(m->median_us, 100.0);
  EXPECT_EQ(m->registers, 32);
  EXPECT_EQ(m->source_hash, Sha256Hex(TinyKernel(a_)));
  // The finalists go to the worker together, in the caller's order, and are timed interleaved
  // (the fake's re-timing answers with IQR 0.25); each answer is its own variant's.
  auto again = measurer->Remeasure(kProblem, {b_, a_});
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->size(), 2u);
  EXPECT_DOUBLE_EQ((*again)[1].median_us, m->median_us);  // the fake's time is a function of the URI
  EXPECT_NE((*again)[0].median_us, m->median_us);
  for (const Measurement& r : *again) {
    EXPECT_TRUE(r.status.ok()) << r.status.ToString();
    EXPECT_DOUBLE_EQ(r.iqr_us, 0.25);
    EXPECT_EQ(r.registers, 32);
  }
  EXPECT_EQ((*again)[0].source_hash, Sha256Hex(TinyKernel(b_)));
  // The warm-up: as long as each finalist's alone, for both.
  EXPECT_EQ(WorkerLog(), "hello\nmeasure " + a_.Uri() + " verify=1 warmup=25\nretime " + b_.Uri() + " " + a_.Uri() +
                             " warmup=50\n");
}

// interleave_retime = false: each finalist measured alone in turn, unverified (the tuner before
// session 37; `flashtune tune --retime-order one-by-one`).
TEST_F(GpuMeasurerWithFakeWorker, OneByOneRetimingMeasuresEachFinalistAlone) {
  options_.interleave_retime = false;
  auto measurer = Make();
  ASSERT_NE(measurer, nullptr);
  auto again = measurer->Remeasure(kProblem, {b_, a_});
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->size(), 2u);
  EXPECT_DOUBLE_EQ((*again)[0].iqr_us, 0.5);
  EXPECT_EQ(WorkerLog(), "hello\nmeasure " + b_.Uri() + " verify=0 warmup=25\nmeasure " + a_.Uri() +
                             " verify=0 warmup=25\n");
}

// A fault while re-timing finalists together cannot say whose it was: the worker restarts and
// they are timed one by one, so the faulting finalist is out (kFault) and the other is timed.
TEST_F(GpuMeasurerWithFakeWorker, AFaultInAnInterleavedRetimingIsPinnedOnItsFinalist) {
  ::setenv("FAKE_GPU_WORKER_FAULT", a_.Uri().c_str(), 1);
  auto measurer = Make();
  ASSERT_NE(measurer, nullptr);
  auto again = measurer->Remeasure(kProblem, {b_, a_});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ASSERT_EQ(again->size(), 2u);
  EXPECT_TRUE((*again)[0].status.ok()) << (*again)[0].status.ToString();
  EXPECT_GT((*again)[0].median_us, 100.0);
  EXPECT_EQ((*again)[1].status.code(), Code::kFault) << (*again)[1].status.ToString();
  EXPECT_EQ(WorkerLog(), "hello\nretime " + b_.Uri() + " " + a_.Uri() + " warmup=50\nhello\nmeasure " + b_.Uri() +
                             " verify=0 warmup=25\nmeasure " + a_.Uri() + " verify=0 warmup=25\n");
}

// A finalist that does not compile is answered from the compile, and the others are re-timed
// without it.
TEST_F(GpuMeasurerWithFakeWorker, AFinalistThatDoesNotCompileIsLeftOutOfTheRetiming) {
  options_.source_overrides[b_.Uri()] = "extern \"C\" __global__ void k() { no_such_symbol = 1; }\n";
  auto measurer = Make();
  ASSERT_NE(measurer, nullptr);
  auto again = measurer->Remeasure(kProblem, {b_, a_, trusted_});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ASSERT_EQ(again->size(), 3u);
  EXPECT_EQ((*again)[0].status.code(), Code::kCompileError);
  EXPECT_TRUE((*again)[1].status.ok());
  EXPECT_TRUE((*again)[2].status.ok());
  EXPECT_EQ(WorkerLog(), "hello\nretime " + a_.Uri() + " " + trusted_.Uri() + " warmup=50\n");
}

// A problem's re-timing starts with the longer warm-up (the GPU brought to sustained load); its
// later rounds follow back to back with the usual one, and so do first measurements. The next
// problem's re-timing warms up again. Interleaved, the longer warm-up is the request's (the
// usual one is each finalist's, 2 x 25 ms); one by one, the first finalist's.
TEST_F(GpuMeasurerWithFakeWorker, ARetimingWarmsUpOncePerProblem) {
  for (bool interleave : {true, false}) {
    SCOPED_TRACE(interleave ? "interleaved" : "one by one");
    std::remove(log_.c_str());
    options_.interleave_retime = interleave;
    options_.retime_warmup_ms = 300;
    auto measurer = Make();
    ASSERT_NE(measurer, nullptr);
    ASSERT_TRUE(measurer->Measure(kProblem, a_).ok());
    Problem other = kProblem;
    other.seqlen_q = other.seqlen_k = 256;
    for (const Problem& p : {kProblem, kProblem, other}) {
      auto again = measurer->Remeasure(p, {b_, a_});
      ASSERT_TRUE(again.ok()) << again.status().ToString();
      ASSERT_EQ(again->size(), 2u);
    }
    auto round = [&](const char* first_warmup, const char* interleaved_warmup) {
      if (interleave) return "retime " + b_.Uri() + " " + a_.Uri() + " warmup=" + interleaved_warmup + "\n";
      return "measure " + b_.Uri() + " verify=0 warmup=" + first_warmup + "\nmeasure " + a_.Uri() +
             " verify=0 warmup=25\n";
    };
    const std::string heated = round("300", "300"), loaded = round("25", "50");
    EXPECT_EQ(WorkerLog(), "hello\nmeasure " + a_.Uri() + " verify=1 warmup=25\n" + heated + loaded + heated);
  }
}

// A worker from another build (its protocol differs) is refused at the hello, naming it.
TEST_F(GpuMeasurerWithFakeWorker, AWorkerOfAnotherBuildIsAClearError) {
  ::setenv("FAKE_GPU_WORKER_PROTOCOL", "1", 1);
  auto made = MakeGpuMeasurers({}, options_);
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().code(), Code::kUnsupported);
  const std::string message = made.status().message();
  EXPECT_NE(message.find("speaks protocol 1"), std::string::npos) << message;
  EXPECT_NE(message.find(FLASHTUNE_FAKE_GPU_WORKER), std::string::npos) << message;
  EXPECT_NE(message.find("FLASHTUNE_WORKER"), std::string::npos) << message;
}

TEST_F(GpuMeasurerWithFakeWorker, CompileErrorIsRecordedWithTheLogAndNeverSentToTheWorker) {
  options_.source_overrides[b_.Uri()] = "extern \"C\" __global__ void k() { no_such_symbol = 1; }\n";
  auto measurer = Make();
  ASSERT_NE(measurer, nullptr);
  auto m = measurer->Measure(kProblem, b_);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->status.code(), Code::kCompileError);
  EXPECT_NE(m->status.log().find("no_such_symbol"), std::string::npos) << m->status.log();
  EXPECT_EQ(WorkerLog().find("measure"), std::string::npos) << WorkerLog();
  auto next = measurer->Measure(kProblem, a_);  // the run goes on
  ASSERT_TRUE(next.ok());
  EXPECT_TRUE(next->status.ok()) << next->status.ToString();
}

// A strategy asks for registers before measuring: NVRTC's count (ptxas), nothing launched; a
// source that does not compile answers with the compile error and its log.
TEST_F(GpuMeasurerWithFakeWorker, CompiledRegistersComeFromTheCompileWithoutALaunch) {
  options_.source_overrides[b_.Uri()] = "extern \"C\" __global__ void k() { no_such_symbol = 1; }\n";
  auto measurer = Make();
  ASSERT_NE(measurer, nullptr);
  auto regs = measurer->CompiledRegisters(a_);
  ASSERT_TRUE(regs.ok()) << regs.status().ToString();
  EXPECT_GT(*regs, 0);
  EXPECT_LT(*regs, 32);  // TinyKernel needs a handful; 32 would be the fake worker's answer
  auto broken = measurer->CompiledRegisters(b_);
  EXPECT_EQ(broken.status().code(), Code::kCompileError);
  EXPECT_NE(broken.status().log().find("no_such_symbol"), std::string::npos) << broken.status().log();
  EXPECT_EQ(WorkerLog(), "hello\n");
}

// A module of several kernels (the backward families' preprocess, main and convert): its
// measurement's registers are the most any of its kernels uses (ptxas's count, as its spills),
// not the driver's count for the first kernel, which the URI names (the fake worker says 32).
TEST_F(GpuMeasurerWithFakeWorker, RegistersAreTheMostOfAnyKernelInTheModule) {
  options_.source_overrides[a_.Uri()] =
      TinyKernel(a_) + "extern \"C\" __global__ void " + a_.Uri() +
      "_main(const float* __restrict__ in, float* __restrict__ out) {\n"
      "  float v[64];\n"
      "#pragma unroll\n"
      "  for (int i = 0; i < 64; ++i) v[i] = in[threadIdx.x + 256 * i];\n"
      "  float s = 0.0f;\n"
      "#pragma unroll\n"
      "  for (int i = 0; i < 64; ++i)\n"
      "#pragma unroll\n"
      "    for (int j = i; j < 64; ++j) s += v[i] * v[j];\n"
      "#pragma unroll\n"
      "  for (int i = 0; i < 64; ++i) out[threadIdx.x + 256 * i] = v[i] * s;\n"
      "}\n";
  auto measurer = Make();
  ASSERT_NE(measurer, nullptr);
  auto compiled = measurer->CompiledRegisters(a_);
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  ASSERT_GT(*compiled, 32);  // 64 live floats
  auto m = measurer->Measure(kProblem, a_);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_TRUE(m->status.ok()) << m->status.ToString();
  EXPECT_EQ(m->registers, *compiled);
  auto single = measurer->Measure(kProblem, b_);  // one small kernel: the driver's 32 is the most
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(single->registers, 32);
}

TEST_F(GpuMeasurerWithFakeWorker, AFaultIsRecordedAndTheWorkerRestarts) {
  ::setenv("FAKE_GPU_WORKER_FAULT", a_.Uri().c_str(), 1);
  auto measurer = Make();
  ASSERT_NE(measurer, nullptr);
  auto m = measurer->Measure(kProblem, a_);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->status.code(), Code::kFault) << m->status.ToString();
  auto next = measurer->Measure(kProblem, b_);
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_TRUE(next->status.ok()) << next->status.ToString();
  EXPECT_EQ(WorkerLog(), "hello\nmeasure " + a_.Uri() + " verify=1 warmup=25\nhello\nmeasure " + b_.Uri() +
                             " verify=1 warmup=25\n");
}

TEST_F(GpuMeasurerWithFakeWorker, AHungWorkerTimesOutAndIsReplaced) {
  ::setenv("FAKE_GPU_WORKER_HANG", a_.Uri().c_str(), 1);
  options_.timeout_s = 1;
  auto measurer = Make();
  ASSERT_NE(measurer, nullptr);
  auto m = measurer->Measure(kProblem, a_);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->status.code(), Code::kTimeout) << m->status.ToString();
  EXPECT_NE(m->status.ToString().find(a_.Uri()), std::string::npos) << m->status.ToString();
  auto next = measurer->Measure(kProblem, b_);
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_TRUE(next->status.ok()) << next->status.ToString();
}

}  // namespace
}  // namespace flashtune
