// Driver failures on the launch path, injected by the recording fake GPU (ft_fake_fail): each is
// a Status naming the driver call, its error and the kernel it concerns; nothing aborts, nothing
// half-loaded is kept, and the next call runs.
#include <gtest/gtest.h>

#include <string>

#include "flashtune/runtime.h"
#include "tests/support/fake_gpu_record.h"

namespace flashtune {
namespace {

using flashtune::testing::HostBuffers;
using flashtune::testing::PackSequences;

constexpr int kNoBinaryForGpu = 209;           // CUDA_ERROR_NO_BINARY_FOR_GPU
constexpr int kInvalidValue = 1;               // CUDA_ERROR_INVALID_VALUE
constexpr int kLaunchOutOfResources = 701;     // CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
constexpr int kIllegalAddress = 700;           // CUDA_ERROR_ILLEGAL_ADDRESS

class FakeGpuDriverErrors : public flashtune::testing::FakeGpuTest {};

TEST_F(FakeGpuDriverErrors, AModuleThatDoesNotLoadIsAnErrorAndTheNextCallLoadsIt) {
  const Problem p{DType::kBF16, 64, true, 1, 333, 333, 4, 4};
  auto plan = r.rt->plan(p);
  ASSERT_TRUE(plan.ok());
  HostBuffers b;
  const ForwardArgs a = r.ArgsFor(p, b);
  fake.Reset();
  fake.Fail("cuModuleLoadData", 0, 1, kNoBinaryForGpu);
  Status s = r.rt->forward(a, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kDriverError) << s.ToString();
  EXPECT_NE(s.message().find("cuModuleLoadData"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("CUDA_ERROR_NO_BINARY_FOR_GPU"), std::string::npos) << s.ToString();
  EXPECT_NE(s.ToString().find(plan->variant.Uri()), std::string::npos) << "names the kernel: " << s.ToString();
  EXPECT_TRUE(fake.Launches().empty());
  s = r.rt->forward(a, nullptr);  // nothing half-loaded was kept: this call loads and launches
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(fake.Launches().size(), 1u);
  EXPECT_EQ(std::string(fake.Launches()[0].kernel), plan->variant.Uri());
}

// The split kernel launches, its combine is refused: the call reports the combine, and the
// next call launches both.
TEST_F(FakeGpuDriverErrors, ARefusedSecondLaunchNamesItsKernel) {
  Problem p{DType::kBF16, 128, false, 1, 1, 8192, 32, 8};
  p.layout = Layout::kPaged;
  HostBuffers b;
  const ForwardArgs a = r.ArgsFor(p, b);
  ASSERT_TRUE(r.rt->forward(a, nullptr).ok());  // loaded
  fake.Reset();
  fake.Fail("cuLaunchKernelEx", 1, 1, kLaunchOutOfResources);
  Status s = r.rt->forward(a, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("launching decode_fwd_bf16_d128_"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("_combine"), std::string::npos) << "names the combine kernel: " << s.ToString();
  ASSERT_EQ(fake.Launches().size(), 1u);
  fake.Reset();
  ASSERT_TRUE(r.rt->forward(a, nullptr).ok());
  EXPECT_EQ(fake.Launches().size(), 2u);
}

// A tensor map the driver refuses: the call says which map and why, and launches nothing. The
// buffers are never freed and the shape is this test's own, so no map of the process's cache
// can answer for them.
TEST_F(FakeGpuDriverErrors, ATensorMapTheDriverRefusesLaunchesNothing) {
  const Problem p{DType::kBF16, 128, false, 1, 777, 777, 4, 4};
  auto plan = r.rt->plan(p);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->variant.family, "hopper_fwd");
  static HostBuffers* kept = new HostBuffers;
  const ForwardArgs a = r.ArgsFor(p, *kept);
  fake.Reset();
  fake.Fail("cuTensorMapEncodeTiled", 0, 1, kInvalidValue);
  Status s = r.rt->forward(a, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("tensor map"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("CUDA_ERROR_INVALID_VALUE"), std::string::npos) << s.ToString();
  EXPECT_TRUE(fake.Launches().empty());
  ASSERT_TRUE(r.rt->forward(a, nullptr).ok());
  EXPECT_EQ(fake.Launches().size(), 1u);
}

// A packed call whose tile counter the driver does not zero: the call names the memset and the
// kernel, launches nothing (a kernel claiming from a stale counter would skip tiles), and the
// next call runs.
TEST_F(FakeGpuDriverErrors, ACounterTheDriverDoesNotZeroLaunchesNothing) {
  Problem p{DType::kBF16, 128, true, 2, 2000, 2000, 64, 8};
  p.layout = Layout::kVarlen;
  auto plan = r.rt->plan(p);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->variant.Param("p"), 3) << plan->variant.Uri();
  HostBuffers b;
  ForwardArgs a = r.ArgsFor(p, b);
  PackSequences(a, b, {0, 2000, 2700});  // ragged, 23 x 64 tiles at most: the counter is used
  fake.Reset();
  fake.Fail("cuMemsetD8Async", 0, 1, kInvalidValue);
  Status s = r.rt->forward(a, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cuMemsetD8Async"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("CUDA_ERROR_INVALID_VALUE"), std::string::npos) << s.ToString();
  EXPECT_NE(s.ToString().find(plan->variant.Uri()), std::string::npos) << "names the kernel: " << s.ToString();
  EXPECT_TRUE(fake.Launches().empty());
  ASSERT_TRUE(r.rt->forward(a, nullptr).ok());
  EXPECT_EQ(fake.Launches().size(), 1u);
}

// A kernel that faults is a kFault status naming it, not an abort.
TEST_F(FakeGpuDriverErrors, AFaultIsAStatusNamingTheKernel) {
  const Problem p{DType::kBF16, 128, false, 1, 300, 300, 4, 2};
  auto plan = r.rt->plan(p);
  ASSERT_TRUE(plan.ok());
  HostBuffers b;
  const ForwardArgs a = r.ArgsFor(p, b);
  fake.Reset();
  fake.Fail("cuLaunchKernel", 0, 1, kIllegalAddress);
  Status s = r.rt->forward(a, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kFault) << s.ToString();
  EXPECT_NE(s.message().find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos) << s.ToString();
  EXPECT_NE(s.ToString().find(plan->variant.Uri()), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace flashtune
