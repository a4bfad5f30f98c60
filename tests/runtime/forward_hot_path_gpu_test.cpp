// The runtime's hot path on a real GPU: a warm forward() allocates nothing (counted by replacing
// the global operator new in this test binary), and the tensor maps it reuses (hopper_fwd on
// sm_90a: jit/tensor_map_cache.h) follow the call's pointers: calls that alternate between two
// sets of tensors each get their own tensors' answer, bit for bit.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "flashtune/driver.h"
#include "flashtune/reference.h"
#include "flashtune/runtime.h"

namespace {
// Allocations made on threads that asked to be counted.
thread_local bool t_counting = false;
std::atomic<int64_t> g_counted_allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  if (t_counting) g_counted_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace flashtune {
namespace {

// Two independent sets of device tensors for one problem, each with its own random inputs.
struct Tensors {
  ForwardArgs host, dev;
  std::vector<uint16_t> q, k, v;
  std::vector<DeviceBuffer> buffers;
};

Result<Tensors> MakeTensors(const Context& ctx, const Problem& p, uint64_t seed) {
  Tensors t;
  const size_t nq = size_t(p.batch * p.seqlen_q * p.heads_q * p.head_dim);
  const size_t nk = size_t(p.batch * p.seqlen_k * p.heads_kv * p.head_dim);
  t.q.resize(nq);
  t.k.resize(nk);
  t.v.resize(nk);
  FillRandom(t.q, p.dtype, seed);
  FillRandom(t.k, p.dtype, seed + 1);
  FillRandom(t.v, p.dtype, seed + 2);
  for (size_t bytes : {nq * 2, nk * 2, nk * 2, nq * 2}) {
    auto b = DeviceBuffer::Allocate(ctx, bytes);
    if (!b.ok()) return b.status();
    t.buffers.push_back(std::move(*b));
  }
  FT_RETURN_IF_ERROR(t.buffers[0].CopyFromHost(t.q.data(), nq * 2));
  FT_RETURN_IF_ERROR(t.buffers[1].CopyFromHost(t.k.data(), nk * 2));
  FT_RETURN_IF_ERROR(t.buffers[2].CopyFromHost(t.v.data(), nk * 2));
  t.host = ForwardArgs::Contiguous(p);
  t.host.q = t.q.data();
  t.host.k = t.k.data();
  t.host.v = t.v.data();
  t.dev = ForwardArgs::Contiguous(p);
  t.dev.q = reinterpret_cast<const void*>(t.buffers[0].get());
  t.dev.k = reinterpret_cast<const void*>(t.buffers[1].get());
  t.dev.v = reinterpret_cast<const void*>(t.buffers[2].get());
  t.dev.o = reinterpret_cast<void*>(t.buffers[3].get());
  return t;
}

std::vector<uint16_t> ReadO(const Tensors& t) {
  std::vector<uint16_t> o(t.buffers[3].size() / 2);
  EXPECT_TRUE(t.buffers[3].CopyToHost(o.data(), t.buffers[3].size()).ok());
  return o;
}

TEST(ForwardHotPathGpu, WarmForwardAllocatesNothingAndFollowsThePointers) {
  auto driver = Driver::Load();
  if (!driver.ok()) GTEST_SKIP() << "no GPU driver: " << driver.status().ToString();
  auto ctx = Context::Primary(**driver, 0);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  auto stream = Stream::Create(*ctx);
  ASSERT_TRUE(stream.ok());
  RuntimeOptions o;
  o.db_path = "/nonexistent/flashtune.db";  // the heuristic plan: hopper_fwd on sm_90a
  o.log = [](LogLevel, const std::string&) {};
  auto rt = Runtime::Open(o);
  ASSERT_TRUE(rt.ok()) << rt.status().ToString();
  const Problem p{DType::kBF16, 128, true, 2, 300, 300, 4, 2};
  auto a = MakeTensors(*ctx, p, 11);
  auto b = MakeTensors(*ctx, p, 21);
  ASSERT_TRUE(a.ok() && b.ok());
  auto plan = (*rt)->plan(p);
  ASSERT_TRUE(plan.ok());
  std::printf("[ plan     ] %s\n", plan->variant.Uri().c_str());

  // Cold: the first call compiles and loads; each set of tensors once, checked against the
  // float64 reference.
  ASSERT_TRUE((*rt)->forward(a->dev, stream->get()).ok());
  ASSERT_TRUE(stream->Synchronize().ok());
  const std::vector<uint16_t> first_a = ReadO(*a);
  ASSERT_TRUE((*rt)->forward(b->dev, stream->get()).ok());
  ASSERT_TRUE(stream->Synchronize().ok());
  const std::vector<uint16_t> first_b = ReadO(*b);
  for (const Tensors* t : {&*a, &*b}) {
    auto ref = ReferenceForward(t->host);
    ASSERT_TRUE(ref.ok());
    const std::vector<uint16_t> o = t == &*a ? first_a : first_b;
    EXPECT_LT(RelativeL2Error(GatherOutput(t->host, o.data()), ref->o), 1e-2);
  }
  ASSERT_NE(first_a, first_b);

  // Warm, alternating: no allocation on this thread, and each call its own tensors' answer.
  ASSERT_TRUE(a->buffers[3].Memset(0).ok());
  ASSERT_TRUE(b->buffers[3].Memset(0).ok());
  g_counted_allocations = 0;
  t_counting = true;
  Status status = Status::Ok();
  for (int i = 0; i < 50 && status.ok(); ++i) status = (*rt)->forward((i % 2 ? b : a)->dev, stream->get());
  t_counting = false;
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(g_counted_allocations.load(), 0);
  ASSERT_TRUE(stream->Synchronize().ok());
  EXPECT_EQ(ReadO(*a), first_a);
  EXPECT_EQ(ReadO(*b), first_b);
}

}  // namespace
}  // namespace flashtune
