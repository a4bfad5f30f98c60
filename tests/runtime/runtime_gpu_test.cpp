// The runtime on a real GPU: tune a small set with the CLI, then launch it from a fresh process
// with zero NVRTC calls; graph capture and replay; first-use compile for an untuned shape; a
// warm forward() allocates nothing (tests/support/allocation_counter.h) and follows the call's
// pointers through the cache of encoded tensor maps.
#include "flashtune/runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "flashtune/compiler.h"
#include "flashtune/driver.h"
#include "flashtune/reference.h"
#include "generator/family.h"
#include "jit/cuda_api.h"
#include "tests/support/allocation_counter.h"
#include "tests/support/gpu_fixture.h"
#include "tests/support/graph_capture.h"
#include "tests/support/replay_fixture.h"
#include "tests/support/test_cli.h"
#include "tests/support/varlen_case.h"

namespace flashtune {
namespace {

using namespace flashtune::testing;

// The tuned shape: bf16 d64 non-causal, N 256, hidden 256 (Hq 4), tokens 512 (B 2).
constexpr int64_t kB = 2, kN = 256, kH = 4, kD = 64;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Inputs on the host and device, and a way to read o back.
struct Attention {
  ForwardArgs host;  // q/k/v point to host data (for the reference)
  ForwardArgs dev;
  std::vector<uint16_t> q, k, v;
  std::vector<DeviceBuffer> buffers;

  static Result<Attention> Make(const Context& ctx, const Problem& p) {
    Attention a;
    ForwardArgs args = ForwardArgs::Contiguous(p);
    const size_t nq = p.batch * p.seqlen_q * p.heads_q * p.head_dim;
    const size_t nk = p.batch * p.seqlen_k * p.heads_kv * p.head_dim;
    a.q.resize(nq);
    a.k.resize(nk);
    a.v.resize(nk);
    FillRandom(a.q, p.dtype, 1);
    FillRandom(a.k, p.dtype, 2);
    FillRandom(a.v, p.dtype, 3);
    const size_t sizes[] = {nq * 2, nk * 2, nk * 2, nq * 2, size_t(p.batch * p.heads_q * p.seqlen_q) * 4};
    for (size_t s : sizes) {
      auto b = DeviceBuffer::Allocate(ctx, s);
      if (!b.ok()) return b.status();
      a.buffers.push_back(std::move(*b));
    }
    FT_RETURN_IF_ERROR(a.buffers[0].CopyFromHost(a.q.data(), nq * 2));
    FT_RETURN_IF_ERROR(a.buffers[1].CopyFromHost(a.k.data(), nk * 2));
    FT_RETURN_IF_ERROR(a.buffers[2].CopyFromHost(a.v.data(), nk * 2));
    a.host = args;
    a.host.q = a.q.data();
    a.host.k = a.k.data();
    a.host.v = a.v.data();
    a.dev = args;
    a.dev.q = reinterpret_cast<const void*>(a.buffers[0].get());
    a.dev.k = reinterpret_cast<const void*>(a.buffers[1].get());
    a.dev.v = reinterpret_cast<const void*>(a.buffers[2].get());
    a.dev.o = reinterpret_cast<void*>(a.buffers[3].get());
    a.dev.lse = reinterpret_cast<float*>(a.buffers[4].get());
    return a;
  }
  std::vector<uint16_t> ReadO() const {
    std::vector<uint16_t> o(buffers[3].size() / 2);
    EXPECT_TRUE(buffers[3].CopyToHost(o.data(), buffers[3].size()).ok());
    return o;
  }
  double Error(const std::vector<uint16_t>& o) const {
    auto ref = ReferenceForward(host);
    EXPECT_TRUE(ref.ok()) << ref.status().ToString();
    return RelativeL2Error(GatherOutput(host, o.data()), ref->o);
  }
};

// Runs in the child process only (the parent sets FT_RUNTIME_CHILD_DB): a fresh process, so
// NVRTC call counts start at zero.
TEST(RuntimeGpuChild, TunedForwardWithoutNvrtc) {
  const char* db = std::getenv("FT_RUNTIME_CHILD_DB");
  const char* mark = std::getenv("FT_RUNTIME_CHILD_MARK");
  if (db == nullptr || mark == nullptr) GTEST_SKIP() << "child of RuntimeGpu.TunedProblemRunsFromTheDatabase";
  auto driver = Driver::Load();
  ASSERT_TRUE(driver.ok()) << driver.status().ToString();
  auto ctx = Context::Primary(**driver, 0);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  RuntimeOptions o;
  o.db_path = db;
  std::vector<std::string> warnings;
  o.log = [&](LogLevel level, const std::string& m) {
    if (level >= LogLevel::kWarning) warnings.push_back(m);
  };
  auto rt = Runtime::Open(o);
  ASSERT_TRUE(rt.ok()) << rt.status().ToString();
  const Problem p{DType::kBF16, kD, false, kB, kN, kN, kH, kH};
  auto plan = (*rt)->plan(p);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->source, PlanSource::kExact) << plan->why;
  auto a = Attention::Make(*ctx, p);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  auto stream = Stream::Create(*ctx);
  ASSERT_TRUE(stream.ok());
  ASSERT_TRUE((*rt)->forward(a->dev, stream->get()).ok());
  ASSERT_TRUE(stream->Synchronize().ok());
  EXPECT_EQ(Compiler::NvrtcCallCount(), 0u) << "a tuned problem must not compile";
  const std::vector<uint16_t> first = a->ReadO();
  const double error = a->Error(first);
  EXPECT_LT(error, 1e-2);

  // Graph capture and replay: same output, bit for bit.
  const detail::CudaApi& api = (*driver)->api();
  ASSERT_TRUE(a->buffers[3].Memset(0).ok());
  CUgraphExec exec = CaptureForward(api, **rt, a->dev, stream->get());
  ASSERT_NE(exec, nullptr);
  EXPECT_EQ(a->ReadO(), std::vector<uint16_t>(first.size(), 0)) << "capture must not run the kernel";
  ASSERT_EQ(api.cuGraphLaunch(exec, stream->get()), CUDA_SUCCESS);
  ASSERT_TRUE(stream->Synchronize().ok());
  EXPECT_EQ(a->ReadO(), first);
  api.cuGraphExecDestroy(exec);
  EXPECT_EQ(Compiler::NvrtcCallCount(), 0u);
  EXPECT_TRUE(warnings.empty()) << warnings[0];
  if (!::testing::Test::HasFailure()) std::ofstream(mark) << "ok error=" << error << "\n";
}

TEST(RuntimeGpu, TunedProblemRunsFromTheDatabase) {
  auto driver = Driver::Load();
  if (!driver.ok()) GTEST_SKIP() << "needs a CUDA GPU: " << driver.status().message();
  const std::string dir = TempDir("runtime_gpu_tuned");
  const std::string db = dir + "/t.db";
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string cli = testing::GpuTestCli();
  ASSERT_EQ(RunShell("'" + cli + "' tune --db '" + db +
                     "' --dtypes bf16 --head-dims 64 --causal 0 --seqlens 256 --hidden 256 --tokens 512 > '" + dir +
                     "/tune.log' 2>&1"),
            0)
      << ReadFile(dir + "/tune.log");
  const std::string mark = dir + "/child.ok";
  const int rc = RunShell("FT_RUNTIME_CHILD_DB='" + db + "' FT_RUNTIME_CHILD_MARK='" + mark + "' '" + self +
                          "' --gtest_filter=RuntimeGpuChild.TunedForwardWithoutNvrtc > '" + dir + "/child.log' 2>&1");
  EXPECT_EQ(rc, 0) << ReadFile(dir + "/child.log");
  EXPECT_NE(ReadFile(mark).find("ok"), std::string::npos) << ReadFile(dir + "/child.log");
}

TEST(RuntimeGpu, UntunedShapeCompilesOnFirstUseAndMatches) {
  auto driver = Driver::Load();
  if (!driver.ok()) GTEST_SKIP() << "needs a CUDA GPU: " << driver.status().message();
  auto ctx = Context::Primary(**driver, 0);
  ASSERT_TRUE(ctx.ok());
  RuntimeOptions o;
  o.db_path = TempDir("runtime_gpu_untuned") + "/absent.db";
  int warnings = 0;
  o.log = [&](LogLevel level, const std::string&) { warnings += level == LogLevel::kWarning; };
  auto rt = Runtime::Open(o);
  ASSERT_TRUE(rt.ok());
  const Problem p{DType::kF16, 128, true, 1, 200, 300, 4, 2};  // GQA, Nq != Nk, causal
  auto a = Attention::Make(*ctx, p);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  for (int i = 0; i < 2; ++i) ASSERT_TRUE((*rt)->forward(a->dev, nullptr).ok());
  ASSERT_TRUE(ctx->Synchronize().ok());
  EXPECT_LT(a->Error(a->ReadO()), 1e-2);
  EXPECT_EQ(warnings, 1) << "the untuned GPU is reported once";
}

// A varlen call through the runtime (the planner picks a family that reads cu_seqlens): two
// sequences of 200 queries and 300 keys packed back to back are the dense [2, N, H, D] tensors
// with batch strides 0, so the dense reference answers; lse is skipped ([Hq, total_q] there).
TEST(RuntimeGpu, VarlenCallRunsThroughThePlanner) {
  auto gpu = GetGpu();
  if (!gpu.ok()) GTEST_SKIP() << "needs a CUDA GPU: " << gpu.status().ToString();
  const Context* ctx = &*(*gpu)->context;
  RuntimeOptions options;
  options.db_path = TempDir("runtime_gpu_varlen") + "/absent.db";
  auto rt = Runtime::Open(options);
  ASSERT_TRUE(rt.ok());
  const Problem p{DType::kBF16, 128, true, 2, 200, 300, 8, 2};
  auto a = Attention::Make(*ctx, p);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  const int32_t cu[2][3] = {{0, 200, 400}, {0, 300, 600}};
  auto offsets = DeviceBuffer::Allocate(*ctx, sizeof cu);
  ASSERT_TRUE(offsets.ok());
  ASSERT_TRUE(offsets->CopyFromHost(cu, sizeof cu).ok());
  ForwardArgs v = a->dev;
  v.problem.layout = Layout::kVarlen;
  v.q_strides.batch = v.k_strides.batch = v.v_strides.batch = v.o_strides.batch = 0;
  v.varlen = {reinterpret_cast<const int32_t*>(offsets->get()), reinterpret_cast<const int32_t*>(offsets->get()) + 3,
              400, 600};
  v.lse = nullptr;
  ASSERT_TRUE(a->buffers[3].Memset(0xFF).ok());
  Status s = (*rt)->forward(v, nullptr);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_TRUE(ctx->Synchronize().ok());
  EXPECT_LT(a->Error(a->ReadO()), 1e-2);
  auto plan = (*rt)->plan(v.problem);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_NE(plan->variant.family, "decode_fwd");
}

// A mixed prefill + decode varlen batch, decode sequences first: with varlen.decode_seqs the
// runtime runs them on decode_fwd and the prefills on a prefill family (two launches over the
// same tensors); without it, as one prefill call. Both match the float64 reference, lse too
// ([Hq, total_q]), and leave the rows past total_q alone.
TEST(RuntimeGpu, MixedVarlenBatchRoutesDecodeRowsToTheDecodeKernel) {
  auto gpu = GetGpu();
  if (!gpu.ok()) GTEST_SKIP() << "needs a CUDA GPU: " << gpu.status().ToString();
  RuntimeOptions options;
  options.db_path = TempDir("runtime_gpu_mixed") + "/absent.db";
  auto rt = Runtime::Open(options);
  ASSERT_TRUE(rt.ok());
  for (bool causal : {false, true}) {
    const ProblemClass cls{DType::kBF16, 128, causal};
    // Six decode sequences (1-4 queries; 0 to 4097 keys), then three prefills (17, 300, 0 rows).
    VarlenCase c = MakeVarlenCase(**gpu, cls, 16, 2, {1, 1, 4, 1, 2, 1, 17, 300, 0},
                                  {4097, 0, 1000, 1, 33, 700, 40, 300, 5}, 4000 + causal);
    for (int64_t decode_seqs : {6, 0}) {
      ForwardArgs a = c.device;
      a.varlen.decode_seqs = decode_seqs;
      a.varlen.decode_max_seqlen_q = decode_seqs > 0 ? 4 : 0;
      ASSERT_TRUE(PoisonVarlen(c));
      Status s = (*rt)->forward(a, nullptr);
      ASSERT_TRUE(s.ok()) << s.ToString();
      ASSERT_TRUE((*gpu)->context->Synchronize().ok());
      EXPECT_EQ(CheckVarlen(c), "") << "decode_seqs " << decode_seqs;
    }
    // The parts are planned under their own buckets: decode_fwd for the decode part.
    ForwardArgs a = c.device;
    a.varlen.decode_seqs = 6;
    a.varlen.decode_max_seqlen_q = 4;
    const CallParts parts = MixedVarlenParts(a);
    ASSERT_EQ(parts.count, 2);
    auto decode = (*rt)->plan(parts.part[0].problem);
    ASSERT_TRUE(decode.ok()) << decode.status().ToString();
    EXPECT_EQ(decode->variant.family, "decode_fwd");
    auto prefill = (*rt)->plan(parts.part[1].problem);
    ASSERT_TRUE(prefill.ok()) << prefill.status().ToString();
    EXPECT_NE(prefill->variant.family, "decode_fwd");
  }
}

// A paged call whose queries are packed (vLLM's varlen q over its cache): a varlen case's keys
// copied onto shuffled 16-key pages, its queries left packed. It must give the varlen case's
// answer (the float64 reference), lse [Hq, total_q] too: on the paged decode kernel with at most
// 16 new tokens a sequence, on the prefill kernel over pages (chunked prefill over the cache) with
// more; and vLLM's mixed batch (three decode sequences first, varlen.decode_seqs) as two launches,
// the decode sequences on the decode kernel, and as one without decode_seqs.
TEST(RuntimeGpu, PagedCallWithPackedQueriesMatchesTheReference) {
  auto gpu = GetGpu();
  if (!gpu.ok()) GTEST_SKIP() << "needs a CUDA GPU: " << gpu.status().ToString();
  RuntimeOptions options;
  options.db_path = TempDir("runtime_gpu_paged_packed") + "/absent.db";
  auto rt = Runtime::Open(options);
  ASSERT_TRUE(rt.ok());
  constexpr int64_t kHq = 32, kHkv = 8, kD = 128, kPage = 16;
  // 1-16 new tokens a sequence (and none), then up to 300 (more queries than keys included: their
  // first rows see no key when causal), over 5 to 4097 keys.
  const std::vector<std::vector<int32_t>> new_tokens = {{1, 16, 0, 5, 3}, {300, 17, 0, 200, 40}, {1, 3, 1, 200, 40}};
  for (size_t shape = 0; shape < new_tokens.size(); ++shape)
  for (bool causal : {false, true}) {
    const std::vector<int32_t>& len_q = new_tokens[shape];
    const std::vector<int32_t> len_k = {4097, 17, 300, 1000, 5};
    VarlenCase c = MakeVarlenCase(**gpu, ProblemClass{DType::kBF16, kD, causal}, kHq, kHkv, len_q, len_k,
                                  6000 + causal + 2 * int(shape));
    // 1289 pages (a prime): sequence b's page j is page (b * max_blocks + j) * 7 mod 1289, so the
    // pages are shuffled and each is used at most once; 4 are left over.
    const int64_t B = int64_t(len_q.size()), max_blocks = (4097 + kPage - 1) / kPage, pages = B * max_blocks + 4;
    ASSERT_EQ(pages, 1289);
    std::vector<int32_t> table(size_t(B * max_blocks));
    for (int64_t i = 0; i < B * max_blocks; ++i) table[size_t(i)] = int32_t((i * 7) % pages);
    const int64_t row = kHkv * kD;
    std::vector<uint16_t> k_pool(size_t(pages * kPage * row)), v_pool(k_pool.size());
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < len_k[size_t(b)]; ++j) {
        const int64_t to = (int64_t(table[size_t(b * max_blocks + j / kPage)]) * kPage + j % kPage) * row;
        const int64_t from = (c.cu_k[size_t(b)] + j) * row;
        std::copy_n(c.k.begin() + from, row, k_pool.begin() + to);
        std::copy_n(c.v.begin() + from, row, v_pool.begin() + to);
      }
    std::vector<DeviceBuffer> paged;
    for (const auto& [data, bytes] : {std::pair<const void*, size_t>{k_pool.data(), k_pool.size() * 2},
                                      {v_pool.data(), v_pool.size() * 2},
                                      {table.data(), table.size() * 4},
                                      {len_k.data(), len_k.size() * 4}}) {
      auto buffer = Upload(**gpu, data, bytes);
      ASSERT_TRUE(buffer.ok()) << buffer.status().ToString();
      paged.push_back(std::move(*buffer));
    }
    ForwardArgs a = c.device;  // q, o, lse and cu_seqlens_q as the varlen call's
    a.problem.layout = Layout::kPaged;
    a.k = reinterpret_cast<const void*>(paged[0].get());
    a.v = reinterpret_cast<const void*>(paged[1].get());
    a.k_strides = a.v_strides = Strides{kPage * row, row, kD};
    a.paged = {reinterpret_cast<const int32_t*>(paged[2].get()), max_blocks, max_blocks, pages, int(kPage)};
    a.seqlens_k = reinterpret_cast<const int32_t*>(paged[3].get());
    a.varlen.cu_seqlens_k = nullptr;
    a.varlen.total_k = 0;
    auto ws = (*rt)->workspace_size(a.problem);
    ASSERT_TRUE(ws.ok()) << ws.status().ToString();
    auto workspace = DeviceBuffer::Allocate(*(*gpu)->context, size_t(std::max<int64_t>(*ws, 16)));
    ASSERT_TRUE(workspace.ok());
    a.workspace = reinterpret_cast<void*>(workspace->get());
    a.workspace_bytes = *ws;
    for (int64_t decode_seqs : shape == 2 ? std::vector<int64_t>{3, 0} : std::vector<int64_t>{0}) {
      a.varlen.decode_seqs = decode_seqs;
      a.varlen.decode_max_seqlen_q = decode_seqs > 0 ? 3 : 0;
      ASSERT_TRUE(PoisonVarlen(c));
      Status s = (*rt)->forward(a, nullptr);
      ASSERT_TRUE(s.ok()) << s.ToString();
      ASSERT_TRUE((*gpu)->context->Synchronize().ok());
      EXPECT_EQ(CheckVarlen(c), "") << "causal " << causal << ", new tokens up to " << a.problem.seqlen_q
                                    << ", decode_seqs " << decode_seqs;
    }
    a.varlen.decode_seqs = 0;
    auto plan = (*rt)->plan(a.problem);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    if (shape == 0) {
      EXPECT_NE(plan->variant.Uri().find("decode_fwd_"), std::string::npos) << plan->variant.Uri();
      EXPECT_NE(plan->variant.Uri().find("_kv1_"), std::string::npos) << plan->variant.Uri();
    } else {
      // Prefill over pages: the wgmma kernel on sm_90a, FA-2's elsewhere.
      EXPECT_EQ(plan->variant.family, (*gpu)->info.Arch() == "sm_90a" ? "hopper_paged" : "fa2_paged")
          << plan->variant.Uri();
    }
  }
}

// A packed call whose plan claims its tiles (on sm_90a: a p3 tile, its counter in the workspace),
// captured into a CUDA graph and replayed three times: each replay must zero the counter before
// its kernel (the last one left it at the tile count, past which blocks claim nothing and write
// no row), so every replay reproduces the eager call bit for bit on poisoned outputs and matches
// the float64 reference.
TEST(RuntimeGpu, PackedCallsReplayedFromAGraphClaimTheirTilesAfresh) {
  auto gpu = GetGpu();
  if (!gpu.ok()) GTEST_SKIP() << "needs a CUDA GPU: " << gpu.status().ToString();
  auto driver = Driver::Load();
  ASSERT_TRUE(driver.ok());
  const detail::CudaApi& api = (*driver)->api();
  RuntimeOptions options;
  options.db_path = TempDir("runtime_gpu_packed_graph") + "/absent.db";
  auto rt = Runtime::Open(options);
  ASSERT_TRUE(rt.ok());
  auto stream = Stream::Create(*(*gpu)->context);
  ASSERT_TRUE(stream.ok());
  // 48 sequences of 0 to 299 tokens over 32 query heads: a short K/V stream, so the untuned d128
  // plan is the persistent two-Q-buffer tile, which a packed call runs claimed, with tiles
  // enough to use the counter (HopperClaimsRepay).
  const std::vector<int32_t> lengths = ShortSequenceLengths();
  for (bool causal : {false, true}) {
    VarlenCase c = MakeVarlenCase(**gpu, ProblemClass{DType::kBF16, 128, causal}, 32, 4, lengths, lengths, 7000 + causal);
    ASSERT_GE(c.device.workspace_bytes, 16);
    auto plan = (*rt)->plan(c.device.problem);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    if ((*gpu)->info.Arch() == "sm_90a") {
      EXPECT_EQ(plan->variant.Param("p"), 3) << plan->variant.Uri();
      LaunchPacket packet;
      packet.sm_count = (*gpu)->info.sm_count;
      FindFamily(plan->variant.family)->Pack(plan->variant, c.device, &packet);
      EXPECT_GT(packet.zero_bytes, 0u) << "the call claims its tiles";
    }
    const size_t o_bytes = size_t(c.device.varlen.total_q * c.device.problem.heads_q * 128 * 2);
    auto read_o = [&] {
      std::vector<uint16_t> o(o_bytes / 2);
      EXPECT_TRUE(c.o().CopyToHost(o.data(), o_bytes).ok());
      return o;
    };
    ASSERT_TRUE(PoisonVarlen(c));
    Status s = (*rt)->forward(c.device, stream->get());
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_TRUE(stream->Synchronize().ok());
    ASSERT_EQ(CheckVarlen(c), "") << "eager, causal " << causal;
    const std::vector<uint16_t> eager = read_o();
    CUgraphExec exec = CaptureForward(api, **rt, c.device, stream->get());
    ASSERT_NE(exec, nullptr);
    for (int replay = 0; replay < 3; ++replay) {
      ASSERT_TRUE(PoisonVarlen(c));
      ASSERT_EQ(api.cuGraphLaunch(exec, stream->get()), CUDA_SUCCESS);
      ASSERT_TRUE(stream->Synchronize().ok());
      EXPECT_EQ(CheckVarlen(c), "") << "replay " << replay << ", causal " << causal;
      EXPECT_TRUE(read_o() == eager) << "replay " << replay << ", causal " << causal;
    }
    api.cuGraphExecDestroy(exec);
  }
}

// On sm_90a the untuned plan is hopper_fwd; a call whose strides TMA cannot describe (K and V
// broadcast over their heads with a zero head stride) is served by fa2_fwd instead, said once,
// and still matches the reference.
TEST(RuntimeGpu, StridesTmaCannotDescribeFallBackToFa2) {
  auto driver = Driver::Load();
  if (!driver.ok()) GTEST_SKIP() << "needs a CUDA GPU: " << driver.status().message();
  auto info = (*driver)->Device(0);
  ASSERT_TRUE(info.ok());
  if (info->Arch() != "sm_90a") GTEST_SKIP() << "needs an sm_90a GPU (hopper_fwd); this is " << info->Arch();
  auto ctx = Context::Primary(**driver, 0);
  ASSERT_TRUE(ctx.ok());
  RuntimeOptions o;
  o.db_path = TempDir("runtime_gpu_fallback") + "/absent.db";
  std::vector<std::string> warnings;
  o.log = [&](LogLevel level, const std::string& m) {
    if (level == LogLevel::kWarning) warnings.push_back(m);
  };
  auto rt = Runtime::Open(o);
  ASSERT_TRUE(rt.ok());
  const Problem p{DType::kBF16, 128, false, 1, 300, 300, 4, 2};
  auto plan = (*rt)->plan(p);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->variant.family, "hopper_fwd") << plan->why;
  auto a = Attention::Make(*ctx, p);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE((*rt)->forward(a->dev, nullptr).ok());  // TMA-describable: hopper_fwd
  ASSERT_TRUE(ctx->Synchronize().ok());
  EXPECT_LT(a->Error(a->ReadO()), 1e-2);
  a->dev.k_strides.head = a->dev.v_strides.head = 0;  // one K/V head for both
  a->host.k_strides.head = a->host.v_strides.head = 0;
  for (int i = 0; i < 2; ++i) ASSERT_TRUE((*rt)->forward(a->dev, nullptr).ok());
  ASSERT_TRUE(ctx->Synchronize().ok());
  EXPECT_LT(a->Error(a->ReadO()), 1e-2);
  int fallbacks = 0;
  for (const std::string& w : warnings) fallbacks += w.find("falling back to fa2_fwd_bf16_d128_") != std::string::npos;
  EXPECT_EQ(fallbacks, 1);
}

// Warm: no allocation on the calling thread, and calls that alternate between two sets of
// tensors (hopper_fwd on sm_90a: tensor maps from the cache, keyed by pointer) each write their
// own output, bit for bit what the first call wrote. The outputs are zeroed before the warm
// calls, so a map served for the wrong pointers would leave one of them zero.
TEST(RuntimeGpu, WarmForwardAllocatesNothingAndFollowsThePointers) {
  auto driver = Driver::Load();
  if (!driver.ok()) GTEST_SKIP() << "needs a CUDA GPU: " << driver.status().message();
  auto ctx = Context::Primary(**driver, 0);
  ASSERT_TRUE(ctx.ok());
  auto stream = Stream::Create(*ctx);
  ASSERT_TRUE(stream.ok());
  RuntimeOptions o;
  o.db_path = TempDir("runtime_gpu_hot_path") + "/absent.db";  // the heuristic plan
  o.log = [](LogLevel, const std::string&) {};
  auto rt = Runtime::Open(o);
  ASSERT_TRUE(rt.ok());
  const Problem p{DType::kBF16, 128, true, 2, 300, 300, 4, 2};
  auto a = Attention::Make(*ctx, p);
  auto b = Attention::Make(*ctx, p);
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<std::vector<uint16_t>> first;
  for (Attention* t : {&*a, &*b}) {
    ASSERT_TRUE((*rt)->forward(t->dev, stream->get()).ok());
    ASSERT_TRUE(stream->Synchronize().ok());
    first.push_back(t->ReadO());
    EXPECT_LT(t->Error(first.back()), 1e-2);
  }
  ASSERT_TRUE(a->buffers[3].Memset(0).ok() && b->buffers[3].Memset(0).ok());
  Status status = Status::Ok();
  int64_t allocations = 0;
  {
    CountAllocations counter;
    for (int i = 0; i < 50 && status.ok(); ++i) status = (*rt)->forward((i % 2 ? *b : *a).dev, stream->get());
    allocations = counter.count();
  }
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(allocations, 0);
  ASSERT_TRUE(stream->Synchronize().ok());
  EXPECT_EQ(a->ReadO(), first[0]);
  EXPECT_EQ(b->ReadO(), first[1]);
}

}  // namespace
}  // namespace flashtune
