// The tuner's process supervision, with real child processes: replies, crashes, hangs and
// restarts, and the GPU worker's message encoding.
#include "generator/families/fa2_fwd.h"
#include "tuner/worker_process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <vector>

#include "flashtune/gpu_measurer.h"
#include "tuner/gpu_protocol.h"

namespace flashtune::detail {
namespace {

using namespace std::chrono_literals;

// A child that answers each request with the request reversed, and obeys "crash"/"hang"/"exit".
int EchoBody(int in, int out) {
  for (;;) {
    auto frame = ReadFrame(in, std::chrono::milliseconds(-1));
    if (!frame.ok()) return 0;
    if (*frame == "crash") ::raise(SIGSEGV);
    if (*frame == "hang") ::pause();
    if (*frame == "exit") return 7;
    std::string reply(frame->rbegin(), frame->rend());
    if (!WriteFrame(out, reply).ok()) return 1;
  }
}

TEST(WorkerProcess, RepliesInOrder) {
  auto worker = WorkerProcess::Start(EchoBody);
  ASSERT_TRUE(worker.ok()) << worker.status().ToString();
  for (const std::string& s : std::vector<std::string>{"abc", "", std::string(1 << 20, 'x') + "y"}) {
    auto reply = (*worker)->Call(s, 10s);
    ASSERT_TRUE(reply.ok()) << reply.status().ToString();
    EXPECT_EQ(*reply, std::string(s.rbegin(), s.rend()));
  }
  EXPECT_TRUE((*worker)->alive());
}

TEST(WorkerProcess, CrashIsAFaultNamingTheSignal) {
  auto worker = WorkerProcess::Start(EchoBody);
  ASSERT_TRUE(worker.ok());
  auto reply = (*worker)->Call("crash", 10s);
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), Code::kFault);
  EXPECT_NE(reply.status().message().find("signal 11"), std::string::npos) << reply.status().message();
  EXPECT_FALSE((*worker)->alive());
  // A dead worker refuses further calls instead of hanging.
  EXPECT_EQ((*worker)->Call("abc", 1s).status().code(), Code::kFault);
}

TEST(WorkerProcess, ExitWithoutReplyIsAFaultNamingTheExitCode) {
  auto worker = WorkerProcess::Start(EchoBody);
  ASSERT_TRUE(worker.ok());
  auto reply = (*worker)->Call("exit", 10s);
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), Code::kFault);
  EXPECT_NE(reply.status().message().find("exited with code 7"), std::string::npos) << reply.status().message();
}

TEST(WorkerProcess, HangIsKilledAfterTheTimeout) {
  auto worker = WorkerProcess::Start(EchoBody);
  ASSERT_TRUE(worker.ok());
  const pid_t pid = (*worker)->pid();
  const auto start = std::chrono::steady_clock::now();
  auto reply = (*worker)->Call("hang", 300ms);
  const auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), Code::kTimeout);
  EXPECT_GE(waited, 300ms);
  EXPECT_LT(waited, 5s);
  EXPECT_FALSE((*worker)->alive());
  EXPECT_NE(::kill(pid, 0), 0);  // reaped: no such process any more
}

TEST(WorkerProcess, DestructorKillsARunningChild) {
  pid_t pid = -1;
  {
    auto worker = WorkerProcess::Start(EchoBody);
    ASSERT_TRUE(worker.ok());
    pid = (*worker)->pid();
    ASSERT_EQ(::kill(pid, 0), 0);
  }
  EXPECT_NE(::kill(pid, 0), 0);
}

TEST(Frame, ReaderFlagsShortAndMalformedFrames) {
  std::string data = FrameWriter().I64(42).Str("hello").F64(2.5).data();
  FrameReader good(data);
  EXPECT_EQ(good.I64(), 42);
  EXPECT_EQ(good.Str(), "hello");
  EXPECT_EQ(good.F64(), 2.5);
  EXPECT_TRUE(good.ok());
  FrameReader short_read(std::string_view(data).substr(0, data.size() - 3));
  short_read.I64();
  short_read.Str();
  short_read.F64();
  EXPECT_FALSE(short_read.ok());
  std::string huge = FrameWriter().I64(int64_t(1) << 40).data();  // a string longer than the frame
  FrameReader lying(huge);
  EXPECT_EQ(lying.Str(), "");
  EXPECT_FALSE(lying.ok());
}

TEST(GpuProtocol, HelloCarriesTheProtocolVersionBothWays) {
  const std::string request = EncodeHelloRequest();
  FrameReader reader(request);
  ASSERT_EQ(reader.I64(), kHelloMessage);
  EXPECT_EQ(DecodeHelloRequestVersion(reader), kProtocolVersion);
  // A tuner from before versioning. The frame outlives its reader (which keeps a view of it).
  const std::string old_frame = FrameWriter().I64(kHelloMessage).data();
  FrameReader old_request(old_frame);
  old_request.I64();
  EXPECT_EQ(DecodeHelloRequestVersion(old_request), 0);

  HelloReply hello;
  hello.protocol_version = kProtocolVersion;
  hello.device_count = 2;
  hello.driver_version = "13.0";
  hello.device.name = "NVIDIA H200";
  hello.device.cc_major = 9;
  auto decoded = DecodeHelloReply(EncodeHelloReply(hello));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->device_count, 2);
  EXPECT_EQ(decoded->device.name, "NVIDIA H200");
  // A worker from before versioning starts its reply with the status code (0).
  hello.protocol_version = 0;
  auto old = DecodeHelloReply(EncodeHelloReply(hello));
  ASSERT_FALSE(old.ok());
  EXPECT_EQ(old.status().code(), Code::kUnsupported);
  EXPECT_NE(old.status().message().find("speaks protocol 0 and this tuner " + std::to_string(kProtocolVersion)),
            std::string::npos) << old.status().message();
}

TEST(GpuProtocol, MeasureMessagesRoundTrip) {
  MeasureRequest request;
  request.problem = Problem{DType::kF16, 96, true, 3, 1000, 127, 8, 2, Operation::kBackward};  // the operation travels too
  request.candidate = Fa2Variant(DType::kF16, 96, true, 64, 32, 4, 3);
  request.candidate_cubin = std::string("\x7f" "ELF\0\1\2", 7);
  request.trusted = Fa2Variant(DType::kF16, 96, true, 128, 64, 4, 2);
  request.trusted_cubin = "trusted";
  request.verify = false;
  request.options.min_reps = 33;
  request.options.timing_ms = 12.5;
  const std::string frame = EncodeMeasureRequest(request);
  FrameReader reader(frame);
  ASSERT_EQ(reader.I64(), kMeasureMessage);
  auto decoded = DecodeMeasureRequest(reader);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->problem, request.problem);
  EXPECT_EQ(decoded->candidate, request.candidate);
  EXPECT_EQ(decoded->candidate_cubin, request.candidate_cubin);
  EXPECT_EQ(decoded->trusted, request.trusted);
  EXPECT_EQ(decoded->trusted_cubin, "trusted");
  EXPECT_FALSE(decoded->verify);
  EXPECT_EQ(decoded->options.min_reps, 33);
  EXPECT_EQ(decoded->options.timing_ms, 12.5);

  MeasureReply reply;
  reply.status = Status(Code::kWrongResult, "differs").WithVariant("uri").WithLog("log");
  reply.median_us = 12.25;
  reply.iqr_us = 0.5;
  reply.reps = 40;
  reply.registers = 168;
  reply.local_bytes = 8;
  auto back = DecodeMeasureReply(EncodeMeasureReply(reply));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->status.code(), Code::kWrongResult);
  EXPECT_EQ(back->status.message(), "differs");
  EXPECT_EQ(back->status.variant_uri(), "uri");
  EXPECT_EQ(back->status.log(), "log");
  EXPECT_EQ(back->median_us, 12.25);
  EXPECT_EQ(back->reps, 40);
  EXPECT_EQ(back->registers, 168);
  EXPECT_FALSE(DecodeMeasureReply("short").ok());
}

TEST(GpuProtocol, RetimeMessagesRoundTrip) {
  RetimeRequest request;
  request.problem = Problem{DType::kBF16, 64, false, 32, 512, 512, 32, 32};
  request.candidates = {Fa2Variant(DType::kBF16, 64, false, 64, 32, 4, 3), Fa2Variant(DType::kBF16, 64, false, 128, 64, 4, 2)};
  request.cubins = {std::string("\x7f" "ELF\0\1", 6), "second"};
  request.options.warmup_ms = 75;
  request.options.max_reps = 64;
  const std::string frame = EncodeRetimeRequest(request);
  FrameReader reader(frame);
  ASSERT_EQ(reader.I64(), kRetimeMessage);
  auto decoded = DecodeRetimeRequest(reader);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->problem, request.problem);
  EXPECT_EQ(decoded->candidates, request.candidates);
  EXPECT_EQ(decoded->cubins, request.cubins);
  EXPECT_EQ(decoded->options.warmup_ms, 75);
  EXPECT_EQ(decoded->options.max_reps, 64);

  RetimeReply reply;
  reply.results.resize(2);
  reply.results[0].median_us = 180.5;
  reply.results[0].reps = 120;
  reply.results[1].status = Status(Code::kInternal, "did not load").WithVariant("uri");
  auto back = DecodeRetimeReply(EncodeRetimeReply(reply));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back->status.ok());
  ASSERT_EQ(back->results.size(), 2u);
  EXPECT_EQ(back->results[0].median_us, 180.5);
  EXPECT_EQ(back->results[0].reps, 120);
  EXPECT_EQ(back->results[1].status.variant_uri(), "uri");
  reply.status = Status(Code::kFault, "illegal address");
  reply.results.clear();
  back = DecodeRetimeReply(EncodeRetimeReply(reply));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->status.code(), Code::kFault);
  EXPECT_TRUE(back->results.empty());
  // A damaged frame (a count no request holds, or cut short) is refused, not allocated for.
  EXPECT_FALSE(DecodeRetimeReply(FrameWriter().I64(0).Str("").Str("").Str("").I64(int64_t(1) << 40).data()).ok());
  EXPECT_FALSE(DecodeRetimeReply(EncodeRetimeReply(RetimeReply{Status::Ok(), {MeasureReply{}}}).substr(0, 20)).ok());
}

TEST(GpuMeasurer, MissingDriverIsReportedByTheWorker) {
  ::setenv("FLASHTUNE_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
  auto measurers = MakeGpuMeasurers({});
  ::unsetenv("FLASHTUNE_LIBCUDA");
  ASSERT_FALSE(measurers.ok());
  EXPECT_EQ(measurers.status().code(), Code::kNoDriver);
  EXPECT_NE(measurers.status().message().find("no CUDA driver found"), std::string::npos)
      << measurers.status().message();
}

// The GPU worker as a fresh program: the CLI's hidden worker command answers the protocol over
// the two descriptors Exec passes, and the child really is the CLI (exec), not a fork of us.
TEST(WorkerProcess, ExecRunsTheCliAsAFreshWorker) {
  ::setenv("FLASHTUNE_LIBCUDA", "/nonexistent/libcuda.so.1", 1);  // inherited by the child
  auto worker = WorkerProcess::Exec({FLASHTUNE_CLI_PATH, kGpuWorkerCommand, "0"});
  ::unsetenv("FLASHTUNE_LIBCUDA");
  ASSERT_TRUE(worker.ok()) << worker.status().ToString();
  auto frame = (*worker)->Call(EncodeHelloRequest(), 30s);
  ASSERT_TRUE(frame.ok()) << frame.status().ToString();
  char exe[4096] = {};
  const std::string link = "/proc/" + std::to_string((*worker)->pid()) + "/exe";
  ASSERT_GT(::readlink(link.c_str(), exe, sizeof exe - 1), 0);
  char expected[4096] = {};
  ASSERT_NE(::realpath(FLASHTUNE_CLI_PATH, expected), nullptr);
  EXPECT_STREQ(exe, expected);
  auto hello = DecodeHelloReply(*frame);
  ASSERT_TRUE(hello.ok()) << hello.status().ToString();
  EXPECT_EQ(hello->status.code(), Code::kNoDriver) << hello->status.ToString();
}

TEST(WorkerProcess, ExecOfAMissingProgramIsNotFoundNamingIt) {
  auto worker = WorkerProcess::Exec({"/nonexistent/flashtune", kGpuWorkerCommand, "0"});
  ASSERT_FALSE(worker.ok());
  EXPECT_EQ(worker.status().code(), Code::kNotFound);
  EXPECT_NE(worker.status().message().find("/nonexistent/flashtune"), std::string::npos) << worker.status().message();
  EXPECT_NE(worker.status().message().find("No such file"), std::string::npos) << worker.status().message();
}

TEST(GpuMeasurer, ExplicitWorkerExecutableThatDoesNotExistIsNamed) {
  GpuMeasurerOptions options;
  options.worker_executable = "/nonexistent/bin/flashtune";
  auto measurers = MakeGpuMeasurers({0}, options);
  ASSERT_FALSE(measurers.ok());
  EXPECT_EQ(measurers.status().code(), Code::kNotFound);
  EXPECT_NE(measurers.status().message().find("/nonexistent/bin/flashtune"), std::string::npos)
      << measurers.status().message();
}

// NVRTC 13 calls cuInit whenever it compiles, so by the time the tuner restarts a worker this
// process has initialised the driver, and CUDA refuses to start in a child forked after that.
// The fake driver keeps exactly that rule: a forked worker fails and says why; an exec'd one
// starts CUDA afresh (and then fails only because the fake has no device).
TEST(GpuMeasurer, ExecdWorkerStartsCudaAfterThisProcessInitialisedTheDriver) {
  void* fake = ::dlopen(FLASHTUNE_FAKE_LIBCUDA, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(fake, nullptr) << ::dlerror();
  auto cu_init = reinterpret_cast<int (*)(unsigned)>(::dlsym(fake, "cuInit"));
  ASSERT_NE(cu_init, nullptr);
  ASSERT_EQ(cu_init(0), 0);  // what NVRTC does here
  ::setenv("FLASHTUNE_LIBCUDA", FLASHTUNE_FAKE_LIBCUDA, 1);
  auto hello_of = [](Result<std::unique_ptr<WorkerProcess>> worker) -> Status {
    if (!worker.ok()) return worker.status();
    auto frame = (*worker)->Call(EncodeHelloRequest(), 30s);
    if (!frame.ok()) return frame.status();
    auto hello = DecodeHelloReply(*frame);
    return hello.ok() ? hello->status : hello.status();
  };
  const Status forked = hello_of(WorkerProcess::Start([](int in, int out) { return GpuWorkerMain(in, out, 0); }));
  const Status execd = hello_of(WorkerProcess::Exec({FLASHTUNE_CLI_PATH, kGpuWorkerCommand, "0"}));
  ::unsetenv("FLASHTUNE_LIBCUDA");
  EXPECT_NE(forked.message().find("CUDA_ERROR_NOT_INITIALIZED"), std::string::npos) << forked.ToString();
  EXPECT_NE(forked.message().find("forked"), std::string::npos) << forked.ToString();
  EXPECT_EQ(execd.message().find("CUDA_ERROR_NOT_INITIALIZED"), std::string::npos) << execd.ToString();
  EXPECT_NE(execd.message().find("cuDeviceGet failed"), std::string::npos) << execd.ToString();
}

}  // namespace
}  // namespace flashtune::detail
