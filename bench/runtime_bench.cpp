// Host overhead of Runtime::forward when warm (target <= 5 us/call) with repeated tensors (the
// tensor-map cache hits) and with new pointers every call (it misses), a paged decode call (two
// launches), packing + encoding alone,
// the bare cuLaunchKernel floor, and the first call of a tuned problem through a new Runtime
// (cubin from the database; target <= 50 ms).
//   FLASHTUNE_BENCH_DB=<tuned db> build/bench/flashtune_runtime_bench
// Without a GPU, FLASHTUNE_LIBCUDA=build/tests/libft_fake_gpu_libcuda.so (a fake H200 that runs
// nothing, tests/fixtures/fake_gpu.h) times flashtune's own host work: the launches cost ~0.
// The first-call benchmark needs a database tuned for bf16 d64 N256 Hq4 B2 (the GPU test's
// `flashtune tune ... --head-dims 64 --seqlens 256 --hidden 256 --tokens 512`).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <optional>

#include "flashtune/compiler.h"
#include "flashtune/driver.h"
#include "flashtune/kernel.h"
#include "flashtune/runtime.h"
#include "flashtune/source.h"
#include "generator/family.h"

namespace flashtune {
namespace {

struct Gpu {
  Driver* driver = nullptr;
  std::optional<Context> context;
  std::optional<DeviceBuffer> buffer;  // q, k, v, o share one buffer: timing only
  std::optional<Stream> stream;
  std::string error;
};

void Init(Gpu& g) {
  auto d = Driver::Load();
  if (!d.ok()) return void(g.error = d.status().message());
  g.driver = *d;
  auto c = Context::Primary(*g.driver, 0);
  if (!c.ok()) return void(g.error = c.status().message());
  g.context.emplace(std::move(*c));
  auto b = DeviceBuffer::Allocate(*g.context, 8 << 20);
  if (!b.ok()) return void(g.error = b.status().message());
  (void)b->Memset(0);
  g.buffer.emplace(std::move(*b));
  auto s = Stream::Create(*g.context);
  if (!s.ok()) return void(g.error = s.status().message());
  g.stream.emplace(std::move(*s));
}

Gpu& TheGpu() {
  static Gpu* gpu = [] {
    auto* g = new Gpu;  // never destroyed: the driver may be gone at exit
    Init(*g);
    return g;
  }();
  return *gpu;
}

ForwardArgs SmallArgs(const Gpu& g) {
  ForwardArgs a;
  a.problem.dtype = DType::kBF16;
  a.problem.head_dim = 64;
  a.problem.batch = 2;
  a.problem.seqlen_q = a.problem.seqlen_k = 256;
  a.problem.heads_q = a.problem.heads_kv = 4;
  void* p = reinterpret_cast<void*>(g.buffer->get());
  a.q = a.k = a.v = p;
  a.o = static_cast<char*>(p) + (4 << 20);
  a.q_strides = a.k_strides = a.v_strides = a.o_strides = Strides::Contiguous(256, 4, 64);
  return a;
}

// A runtime on $FLASHTUNE_BENCH_DB (or no database: the heuristic plan), silent.
Result<std::unique_ptr<Runtime>> OpenQuietRuntime() {
  const char* db = std::getenv("FLASHTUNE_BENCH_DB");
  RuntimeOptions o;
  o.db_path = db ? db : "/nonexistent/flashtune.db";
  o.log = [](LogLevel, const std::string&) {};
  return Runtime::Open(o);
}

// Times `launch` per iteration; every 512 launches the stream is drained untimed, so a full
// launch queue never blocks the host inside the measurement.
template <typename Launch>
void TimeLaunches(benchmark::State& state, Gpu& g, Launch launch) {
  int64_t n = 0;
  for (auto _ : state) {
    Status s = launch();
    benchmark::DoNotOptimize(s);
    if (++n % 512 == 0) {
      state.PauseTiming();
      (void)g.stream->Synchronize();
      state.ResumeTiming();
    }
  }
  (void)g.stream->Synchronize();
}

// Times warm forward() calls: one untimed call first (plan, compile, load), then the calls
// `args_of(base, i)` gives for i = 0, 1, ... (base: SmallArgs).
template <typename ArgsOf>
void TimeWarmForward(benchmark::State& state, ArgsOf args_of) {
  Gpu& g = TheGpu();
  if (!g.error.empty()) return state.SkipWithError(("no GPU: " + g.error).c_str());
  auto rt = OpenQuietRuntime();
  if (!rt.ok()) return state.SkipWithError(rt.status().ToString().c_str());
  const ForwardArgs base = SmallArgs(g);
  if (!(*rt)->forward(args_of(base, 0), g.stream->get()).ok()) return state.SkipWithError("warm-up forward failed");
  (void)g.stream->Synchronize();
  int64_t call = 0;
  TimeLaunches(state, g, [&] { return (*rt)->forward(args_of(base, call++), g.stream->get()); });
}

void BM_ForwardWarmHostOverhead(benchmark::State& state) {
  TimeWarmForward(state, [](const ForwardArgs& base, int64_t) -> const ForwardArgs& { return base; });
}
BENCHMARK(BM_ForwardWarmHostOverhead);

// forward() when no call repeats an earlier call's tensors: q, k, v and o move by 256 bytes per
// call over 4096 positions, more maps than the tensor-map cache holds, so a hopper_fwd plan
// encodes its four maps every call (what forward() cost before the cache).
void BM_ForwardWarmNewPointersEveryCall(benchmark::State& state) {
  TimeWarmForward(state, [](const ForwardArgs& base, int64_t call) {
    ForwardArgs a = base;
    const size_t shift = size_t(call % 4096) * 256;  // within the buffer: 1 MB of 8
    a.q = static_cast<const char*>(base.q) + shift;
    a.k = a.v = a.q;
    a.o = static_cast<char*>(base.o) + shift;
    return a;
  });
}
BENCHMARK(BM_ForwardWarmNewPointersEveryCall);

// SmallArgs over a dense cache with every sequence's length in memory (seqlens_k, at 5 MB of
// the buffer): 256 queries, so a prefill kernel that reads the lengths. On sm_90a the bucket's
// plan (hopper_fwd) cannot read them and forward() falls back to its tile as hopper_paged.
void BM_ForwardWarmDenseCacheWithLengths(benchmark::State& state) {
  TimeWarmForward(state, [](const ForwardArgs& base, int64_t) {
    ForwardArgs a = base;
    a.seqlens_k = reinterpret_cast<const int32_t*>(static_cast<const char*>(base.q) + (5 << 20));
    return a;
  });
}
BENCHMARK(BM_ForwardWarmDenseCacheWithLengths);

// Times warm forward() calls of `a` after one untimed call, labelled with the planned kernel:
// with the workspace the runtime asks for (arg 1; in a buffer of its own: for packed and paged
// prefill it covers a mixed call's decode part too, megabytes) or without it (arg 0). For calls
// whose tile counter the workspace holds, the difference is its memset.
void TimeWarmForwardWithWorkspaceArg(benchmark::State& state, Gpu& g, Runtime& rt, ForwardArgs a) {
  auto ws = rt.workspace_size(a.problem);
  if (!ws.ok()) return state.SkipWithError(ws.status().ToString().c_str());
  auto ws_buffer = DeviceBuffer::Allocate(*g.context, *ws);
  if (!ws_buffer.ok()) return state.SkipWithError(ws_buffer.status().ToString().c_str());
  if (state.range(0) != 0) {
    a.workspace = reinterpret_cast<void*>(ws_buffer->get());
    a.workspace_bytes = *ws;
  }
  if (!rt.forward(a, g.stream->get()).ok()) return state.SkipWithError("warm-up forward failed");
  (void)g.stream->Synchronize();
  auto plan = rt.plan(a);
  if (plan.ok()) state.SetLabel(plan->variant.Uri());
  TimeLaunches(state, g, [&] { return rt.forward(a, g.stream->get()); });
}

// The paged K/V cache of the 8 MB buffer's layout: k and v pools at 0 and 2 MB, the table and
// key lengths at 5 MB (zero: page 0, empty sequences).
void PlacePagedCache(const Gpu& g, ForwardArgs& a) {
  char* base = reinterpret_cast<char*>(g.buffer->get());
  a.k = base;
  a.v = base + (2 << 20);
  a.paged.block_table = reinterpret_cast<const int32_t*>(base + (5 << 20));
  a.seqlens_k = reinterpret_cast<const int32_t*>(base + (5 << 20) + (64 << 10));
}

// A warm packed call: SmallArgs's shape as two sequences of 256 and 128 tokens (cu_seqlens at 5
// MB of the buffer: zeros, so every tile is past its sequence's end and the kernel does almost
// nothing; the host path is the same). Arg 1 passes the workspace, whose tile counter forward()
// zeroes on the stream before the launch (a packed hopper_fwd call claims its tiles: a memset
// and a launch); arg 0 passes none (the static deal: one launch). The difference is the memset.
void BM_ForwardWarmPackedHostOverhead(benchmark::State& state) {
  Gpu& g = TheGpu();
  if (!g.error.empty()) return state.SkipWithError(("no GPU: " + g.error).c_str());
  auto rt = OpenQuietRuntime();
  if (!rt.ok()) return state.SkipWithError(rt.status().ToString().c_str());
  ForwardArgs a = SmallArgs(g);
  a.problem.layout = Layout::kVarlen;
  a.q_strides = a.k_strides = a.v_strides = a.o_strides = Strides{0, 4 * 64, 64};
  char* base = reinterpret_cast<char*>(g.buffer->get());
  a.varlen.cu_seqlens_q = a.varlen.cu_seqlens_k = reinterpret_cast<const int32_t*>(base + (5 << 20));
  a.varlen.total_q = a.varlen.total_k = 256 + 128;
  TimeWarmForwardWithWorkspaceArg(state, g, **rt, a);
}
BENCHMARK(BM_ForwardWarmPackedHostOverhead)->Arg(0)->Arg(1);

// A warm paged decode call (split kernel + combine: two launches), B1 Nk 1024 Hq 32 Hkv 8 d128
// on 16-key pages, inside the 8 MB buffer: k and v pools at 0 and 2 MB, q and o at 4 MB, the
// table and key lengths at 5 MB (zero: page 0, empty sequences), the workspace at 6 MB.
void BM_DecodeForwardWarmHostOverhead(benchmark::State& state) {
  Gpu& g = TheGpu();
  if (!g.error.empty()) return state.SkipWithError(("no GPU: " + g.error).c_str());
  auto rt = OpenQuietRuntime();
  if (!rt.ok()) return state.SkipWithError(rt.status().ToString().c_str());
  Problem p{DType::kBF16, 128, false, 1, 1, 1024, 32, 8};
  p.layout = Layout::kPaged;
  ForwardArgs a = ForwardArgs::Contiguous(p, 16);
  PlacePagedCache(g, a);
  char* base = reinterpret_cast<char*>(g.buffer->get());
  a.q = base + (4 << 20);
  a.o = base + (4 << 20) + (64 << 10);
  auto ws = (*rt)->workspace_size(p);
  if (!ws.ok() || *ws > (2 << 20)) return state.SkipWithError("the workspace does not fit the buffer");
  a.workspace = base + (6 << 20);
  a.workspace_bytes = *ws;
  if (!(*rt)->forward(a, g.stream->get()).ok()) return state.SkipWithError("warm-up forward failed");
  (void)g.stream->Synchronize();
  TimeLaunches(state, g, [&] { return (*rt)->forward(a, g.stream->get()); });
}
BENCHMARK(BM_DecodeForwardWarmHostOverhead);

// A warm paged prefill call (hopper_paged on sm_90a): B64 Nq 17 over at most 1024 keys a sequence,
// Hq 16 Hkv 2 d128, on 16-key pages: a short paged stream, planned on the claiming twin, with
// tiles enough to claim (72 x 16 tiles on 132 SMs). The pools (256 pages each) in the shared
// buffer at 0 and 2 MB, the table and key lengths at 5 MB (zero: empty sequences, so the kernel
// only writes o = 0), q, o and lse in a buffer of their own. Arg 1 passes the workspace (a
// memset of the tile counter and a launch), arg 0 none (the static deal: one launch).
void BM_PagedPrefillForwardWarmHostOverhead(benchmark::State& state) {
  Gpu& g = TheGpu();
  if (!g.error.empty()) return state.SkipWithError(("no GPU: " + g.error).c_str());
  auto rt = OpenQuietRuntime();
  if (!rt.ok()) return state.SkipWithError(rt.status().ToString().c_str());
  Problem p{DType::kBF16, 128, false, 64, 17, 1024, 16, 2};
  p.layout = Layout::kPaged;
  ForwardArgs a = ForwardArgs::Contiguous(p, 16);
  PlacePagedCache(g, a);
  a.paged.num_blocks = (2 << 20) / (16 * 2 * 128 * 2);
  auto qo = DeviceBuffer::Allocate(*g.context, 10 << 20);
  if (!qo.ok()) return state.SkipWithError(qo.status().ToString().c_str());
  char* qo_base = reinterpret_cast<char*>(qo->get());
  a.q = qo_base;
  a.o = qo_base + (9 << 19);  // q is 64 x 17 x 16 x 128 x 2 bytes: 4.25 MB
  a.lse = reinterpret_cast<float*>(qo_base + (9 << 20));
  TimeWarmForwardWithWorkspaceArg(state, g, **rt, a);
}
BENCHMARK(BM_PagedPrefillForwardWarmHostOverhead)->Arg(0)->Arg(1);

// The runtime's plan for SmallArgs, for the benchmarks that bypass forward().
struct PlannedCall {
  ForwardArgs args;
  Variant variant;
  DeviceInfo device;
};
Result<PlannedCall> PlanSmallCall(Gpu& g) {
  if (!g.error.empty()) return Status(Code::kNoDevice, "no GPU: " + g.error);
  auto rt = OpenQuietRuntime();
  if (!rt.ok()) return rt.status();
  PlannedCall c;
  c.args = SmallArgs(g);
  auto plan = (*rt)->plan(c.args.problem);
  if (!plan.ok()) return plan.status();
  auto device = g.driver->Device(0);
  if (!device.ok()) return device.status();
  c.variant = plan->variant;
  c.device = *device;
  return c;
}

// The planned variant's packing and tensor-map encoding alone (no launch): through the cache
// (arg 1, every call a hit) and straight through cuTensorMapEncodeTiled (arg 0).
void BM_PackAndEncodeTensorMaps(benchmark::State& state) {
  Gpu& g = TheGpu();
  auto call = PlanSmallCall(g);
  if (!call.ok()) return state.SkipWithError(call.status().ToString().c_str());
  const bool cached = state.range(0) != 0;
  for (auto _ : state) {
    LaunchPacket packet;
    packet.sm_count = call->device.sm_count;
    packet.cc_major = call->device.cc_major;
    Status s = PackForward(call->variant, call->args, &packet);
    if (s.ok()) s = EncodeTensorMaps(*g.driver, &packet, cached);
    benchmark::DoNotOptimize(s);
    benchmark::DoNotOptimize(packet.args);
  }
  state.SetLabel(call->variant.Uri());
}
BENCHMARK(BM_PackAndEncodeTensorMaps)->Arg(0)->Arg(1);

// The floor under the number above: cuLaunchKernel alone, same kernel, same arguments, launch
// configuration and parameter block computed once. forward()'s own cost is the difference.
void BM_DriverLaunchBaseline(benchmark::State& state) {
  Gpu& g = TheGpu();
  auto call = PlanSmallCall(g);
  if (!call.ok()) return state.SkipWithError(call.status().ToString().c_str());
  auto source = GenerateSource(call->variant);
  if (!source.ok()) return state.SkipWithError("cannot generate the planned variant's source");
  Compiler compiler(Compiler::Options{});
  auto cubin = compiler.Compile(GeneratedSourceRequest(source->uri, source->text, call->device.Arch()));
  if (!cubin.ok()) return state.SkipWithError(cubin.status().ToString().c_str());
  auto kernel = ForwardKernel::Load(*g.context, *cubin, call->variant);
  if (!kernel.ok()) return state.SkipWithError(kernel.status().ToString().c_str());
  LaunchPacket packet;
  packet.sm_count = call->device.sm_count;
  packet.cc_major = call->device.cc_major;
  if (!PackForward(call->variant, call->args, &packet).ok()) return state.SkipWithError("cannot pack the call");
  // Tensor maps (hopper_fwd) encoded once here: the floor excludes them; forward() pays them.
  if (!EncodeTensorMaps(*g.driver, &packet, /*cached=*/false).ok())
    return state.SkipWithError("cannot encode the tensor maps");
  void* kernel_args[] = {packet.args};
  const std::array<unsigned, 3> grid{packet.grid[0], packet.grid[1], packet.grid[2]};
  const std::array<unsigned, 3> block{packet.block[0], packet.block[1], packet.block[2]};
  TimeLaunches(state, g, [&] {
    return Launch(kernel->function(), grid, block, packet.smem_bytes, g.stream->get(), kernel_args);
  });
}
BENCHMARK(BM_DriverLaunchBaseline);

void BM_FirstCallTunedFromDatabase(benchmark::State& state) {
  Gpu& g = TheGpu();
  if (!g.error.empty()) return state.SkipWithError(("no GPU: " + g.error).c_str());
  const char* db = std::getenv("FLASHTUNE_BENCH_DB");
  if (db == nullptr) return state.SkipWithError("set FLASHTUNE_BENCH_DB to a tuned database");
  const ForwardArgs args = SmallArgs(g);
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    RuntimeOptions o;
    o.db_path = db;
    auto rt = Runtime::Open(o);
    if (!rt.ok()) return state.SkipWithError(rt.status().ToString().c_str());
    auto plan = (*rt)->plan(args.problem);
    if (!plan.ok() || plan->source != PlanSource::kExact) return state.SkipWithError("the problem is not tuned in the db");
    if (!(*rt)->forward(args, g.stream->get()).ok()) return state.SkipWithError("forward failed");
    (void)g.stream->Synchronize();
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
}
BENCHMARK(BM_FirstCallTunedFromDatabase)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(10);

}  // namespace
}  // namespace flashtune

BENCHMARK_MAIN();
