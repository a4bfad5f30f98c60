// fa2_bwd (and hopper_bwd, named by URI: sm_90a only) on the GPU: dq, dk, dv against the float64 CPU reference (ReferenceBackward) on the
// shapes issue 15 lists — N 1, 17, 127, 1000, 4097, Nq != Nk both ways (masked rows), GQA 8:1,
// MQA, head-major strides — both dtypes, causal and not; every searched variant of two classes
// (both warp layouts, dQ staged and not) and the default variant of the others; the
// deterministic mode bit-identical over 3 runs for every way of adding dQ (d128 and d64), and
// hopper_bwd's (det 1: d64 and d128, causal and not).
// Gradients are poisoned (NaN) before each run, so an unwritten element fails; o and lse are
// the reference forward's (o rounded to the dtype), so only the backward is under test.
// Tolerances (relative L2 over each of dq, dk, dv): bf16 1e-2, f16 2e-3, the forward's — P
// and dS are rounded to 16 bits before their MMAs, as in FA-2. Measured on an H200
// (bench/data/2026-12-01-h200-backward): at most 2.7e-3 (bf16) and 3.5e-4 (f16).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "flashtune/arch.h"
#include "flashtune/backward_args.h"
#include "flashtune/driver.h"
#include "flashtune/kernel.h"
#include "flashtune/reference.h"
#include "flashtune/space.h"
#include "tests/support/gpu_fixture.h"
#include "tests/support/variant_checks.h"

namespace flashtune {
namespace {

using testing::GetGpu;
using testing::Gpu;
using testing::Shape;

const Shape kLong = {1, 4097, 4097, 1, 1, false};

// One shape's inputs, device buffers and reference gradients for one class.
struct Case {
  Shape shape;
  BackwardArgs host, device;
  std::vector<uint16_t> q, k, v, o, d_o;
  std::vector<float> lse;
  ReferenceGradients expected;
  std::vector<std::optional<DeviceBuffer>> buffers;
};

size_t Span(int64_t b, int64_t n, int64_t h, int64_t d) { return size_t(b * n * h * d); }

std::unique_ptr<Case> MakeCase(Gpu& gpu, const ProblemClass& cls, const Shape& s, uint64_t seed) {
  auto c = std::make_unique<Case>();
  c->shape = s;
  const Problem problem{cls.dtype, cls.head_dim, cls.causal, s.batch, s.seqlen_q, s.seqlen_k, s.heads_q, s.heads_kv};
  BackwardArgs& a = c->host;
  a = BackwardArgs::Contiguous(problem);
  ForwardArgs& f = a.forward;
  f.q_strides = a.d_o_strides = testing::StridesFor(s, s.seqlen_q, s.heads_q, cls.head_dim);
  f.k_strides = f.v_strides = testing::StridesFor(s, s.seqlen_k, s.heads_kv, cls.head_dim);
  a.dk_strides = f.k_strides;  // dv stays contiguous: strides may differ between tensors
  c->q.resize(Span(s.batch, s.seqlen_q, s.heads_q, cls.head_dim));
  c->d_o.resize(c->q.size());
  c->k.resize(Span(s.batch, s.seqlen_k, s.heads_kv, cls.head_dim));
  c->v.resize(c->k.size());
  FillRandom(c->q, cls.dtype, seed);
  FillRandom(c->k, cls.dtype, seed + 1);
  FillRandom(c->v, cls.dtype, seed + 2);
  FillRandom(c->d_o, cls.dtype, seed + 3);
  f.q = c->q.data();
  f.k = c->k.data();
  f.v = c->v.data();
  auto fwd = ReferenceForward(f);
  EXPECT_TRUE(fwd.ok()) << fwd.status().ToString();
  // o is contiguous [B, Nq, Hq, D] (o_strides from Contiguous), lse [B, Hq, Nq].
  c->o.resize(c->q.size());
  for (size_t i = 0; i < c->o.size(); ++i) c->o[i] = FloatToBits(float(fwd->o[i]), cls.dtype);
  c->lse.resize(fwd->lse.size());
  for (size_t i = 0; i < c->lse.size(); ++i) c->lse[i] = float(fwd->lse[i]);
  auto grads = ReferenceBackward(f, c->d_o.data(), a.d_o_strides);
  EXPECT_TRUE(grads.ok()) << grads.status().ToString();
  if (grads.ok()) c->expected = std::move(*grads);

  c->buffers.resize(10);
  auto alloc = [&](int slot, size_t bytes, const void* host) -> void* {
    auto b = DeviceBuffer::Allocate(*gpu.context, bytes);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    if (!b.ok()) return nullptr;
    c->buffers[size_t(slot)].emplace(std::move(*b));
    if (host) {
      EXPECT_TRUE(c->buffers[size_t(slot)]->CopyFromHost(host, bytes).ok());
    }
    return reinterpret_cast<void*>(c->buffers[size_t(slot)]->get());
  };
  c->device = a;
  ForwardArgs& df = c->device.forward;
  df.q = alloc(0, c->q.size() * 2, c->q.data());
  df.k = alloc(1, c->k.size() * 2, c->k.data());
  df.v = alloc(2, c->v.size() * 2, c->v.data());
  df.o = alloc(3, c->o.size() * 2, c->o.data());
  df.lse = static_cast<float*>(alloc(4, c->lse.size() * 4, c->lse.data()));
  c->device.d_o = alloc(5, c->d_o.size() * 2, c->d_o.data());
  c->device.dq = alloc(6, c->q.size() * 2, nullptr);
  c->device.dk = alloc(7, c->k.size() * 2, nullptr);
  c->device.dv = alloc(8, c->v.size() * 2, nullptr);
  df.workspace_bytes = BackwardWorkspaceBytes(c->device.problem());
  df.workspace = alloc(9, size_t(df.workspace_bytes), nullptr);
  return c;
}

// [B, N, H, D] with `strides` from 16-bit host bits into dense doubles.
std::vector<double> Gather(const std::vector<uint16_t>& bits, DType dtype, const Strides& strides, int64_t B,
                           int64_t N, int64_t H, int64_t D) {
  std::vector<double> out(size_t(B * N * H * D));
  size_t i = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t d = 0; d < D; ++d)
          out[i++] = BitsToFloat(bits[size_t(b * strides.batch + n * strides.seq + h * strides.head + d)], dtype);
  return out;
}

struct Outputs {
  std::vector<uint16_t> dq, dk, dv;
};

// Runs the kernel on `c` with poisoned gradients and workspace; the status of the run.
Status RunBackward(Gpu& gpu, const ForwardKernel& kernel, Case& c, Outputs* out) {
  for (int slot : {6, 7, 8, 9}) FT_RETURN_IF_ERROR(c.buffers[size_t(slot)]->Memset(0xFF));
  FT_RETURN_IF_ERROR(kernel.LaunchBackward(c.device, gpu.stream->get()));
  FT_RETURN_IF_ERROR(gpu.stream->Synchronize());
  out->dq.resize(c.q.size());
  out->dk.resize(c.k.size());
  out->dv.resize(c.v.size());
  FT_RETURN_IF_ERROR(c.buffers[6]->CopyToHost(out->dq.data(), out->dq.size() * 2));
  FT_RETURN_IF_ERROR(c.buffers[7]->CopyToHost(out->dk.data(), out->dk.size() * 2));
  return c.buffers[8]->CopyToHost(out->dv.data(), out->dv.size() * 2);
}

// "" when the outputs match the reference, else why not.
std::string Compare(const Case& c, const Outputs& got) {
  const Problem& f = c.host.forward.problem;
  const DType dt = f.dtype;
  const int64_t D = f.head_dim;
  const double dq = RelativeL2Error(Gather(got.dq, dt, c.host.dq_strides, f.batch, f.seqlen_q, f.heads_q, D), c.expected.dq);
  const double dk = RelativeL2Error(Gather(got.dk, dt, c.host.dk_strides, f.batch, f.seqlen_k, f.heads_kv, D), c.expected.dk);
  const double dv = RelativeL2Error(Gather(got.dv, dt, c.host.dv_strides, f.batch, f.seqlen_k, f.heads_kv, D), c.expected.dv);
  const double tol = dt == DType::kBF16 ? 1e-2 : 2e-3;
  char buf[256];
  std::snprintf(buf, sizeof buf, "B%lld Nq%lld Nk%lld Hq%lld Hkv%lld%s: dq %.3g dk %.3g dv %.3g (tol %.0e)",
                (long long)c.shape.batch, (long long)c.shape.seqlen_q, (long long)c.shape.seqlen_k,
                (long long)c.shape.heads_q, (long long)c.shape.heads_kv, c.shape.head_major ? " head-major" : "", dq, dk,
                dv, tol);
  std::printf("[ errors   ] %s\n", buf);
  return dq <= tol && dk <= tol && dv <= tol ? "" : buf;
}

// One deterministic kernel on `shape`: within tolerance of the float64 reference, and the
// same bits for dq, dk and dv on two more runs.
void ExpectCorrectAndBitIdenticalOverThreeRuns(Gpu& gpu, const ForwardKernel& kernel, const ProblemClass& cls,
                                               const Shape& shape, uint64_t seed) {
  auto c = MakeCase(gpu, cls, shape, seed);
  Outputs first;
  ASSERT_TRUE(RunBackward(gpu, kernel, *c, &first).ok());
  EXPECT_EQ(Compare(*c, first), "");
  for (int run = 1; run < 3; ++run) {
    Outputs again;
    ASSERT_TRUE(RunBackward(gpu, kernel, *c, &again).ok());
    EXPECT_TRUE(again.dq == first.dq) << "dq differs on run " << run + 1;
    EXPECT_TRUE(again.dk == first.dk) << "dk differs on run " << run + 1;
    EXPECT_TRUE(again.dv == first.dv) << "dv differs on run " << run + 1;
  }
}

// Compiles every deterministic variant at once, then checks each on every one of `shapes`:
// within tolerance and bit-identical over three runs.
void ExpectDeterministicVariants(Gpu& gpu, const std::vector<Variant>& variants, const std::vector<Shape>& shapes,
                                 uint64_t seed) {
  auto kernels = testing::CompileAndLoad(gpu, variants);
  int checked = 0;
  for (size_t i = 0; i < variants.size(); ++i) {
    const Variant& v = variants[i];
    SCOPED_TRACE(v.Uri());
    const Result<ForwardKernel>& kernel = kernels[i];
    // As CheckEveryVariant: a tile this GPU's shared memory cannot hold (sm_80's 163 KB) is not
    // for it; any other load error fails.
    if (!kernel.ok() && kernel.status().code() == Code::kOutOfResources) continue;
    ASSERT_TRUE(kernel.ok()) << kernel.status().ToString();
    ++checked;
    for (const Shape& shape : shapes) ExpectCorrectAndBitIdenticalOverThreeRuns(gpu, *kernel, ClassOf(v), shape, seed);
  }
  std::printf("[ checked  ] deterministic: %d of %zu variants x %zu shapes, 3 runs each\n", checked, variants.size(),
              shapes.size());
}

// Compiles every variant at once (NVRTC in parallel), then checks each class's variants on its
// shapes (plus N 4097 when `with_long` says so for the class, and `extra`).
void CheckVariants(const std::vector<Variant>& variants, bool (*with_long)(const ProblemClass&),
                   const std::vector<Shape>& extra = {}) {
  ASSERT_NO_FATAL_FAILURE(testing::AssertValid(variants));
  auto gpu = GetGpu();
  if (!gpu.ok()) GTEST_SKIP() << "no GPU to run on: " << gpu.status().ToString();
  auto kernels = testing::CompileAndLoad(**gpu, variants);
  std::optional<ProblemClass> cls;
  std::vector<std::unique_ptr<Case>> cases;
  uint64_t seed = 500;
  for (size_t i = 0; i < variants.size(); ++i) {
    if (!cls || !(ClassOf(variants[i]) == *cls)) {  // variants come grouped by class
      cls = ClassOf(variants[i]);
      cases.clear();
      for (const Shape& s : testing::kEdgeShapes) cases.push_back(MakeCase(**gpu, *cls, s, seed += 10));
      if (with_long(*cls)) cases.push_back(MakeCase(**gpu, *cls, kLong, seed += 10));
      for (const Shape& s : extra) cases.push_back(MakeCase(**gpu, *cls, s, seed += 10));
    }
    const Result<ForwardKernel>& kernel = kernels[i];
    if (!kernel.ok() && kernel.status().code() == Code::kOutOfResources) continue;  // not for this GPU
    ASSERT_TRUE(kernel.ok()) << variants[i].Uri() << ": " << kernel.status().ToString();
    for (auto& c : cases) {
      Outputs out;
      Status run = RunBackward(**gpu, *kernel, *c, &out);
      ASSERT_TRUE(run.ok()) << variants[i].Uri() << ": " << run.ToString();
      EXPECT_EQ(Compare(*c, out), "") << variants[i].Uri();
    }
    std::printf("[ checked  ] %s on %zu shapes\n", variants[i].Uri().c_str(), cases.size());
  }
}

ProblemClass Bwd(DType dtype, int head_dim, bool causal) {
  return ProblemClass{dtype, head_dim, causal, Operation::kBackward};
}

TEST(BackwardGpu, EverySearchedVariantMatchesTheReference) {
  std::vector<Variant> all;
  for (const ProblemClass& cls : {Bwd(DType::kBF16, 128, true), Bwd(DType::kF16, 64, false)}) {
    auto space = EnumerateSpace(cls);
    ASSERT_TRUE(space.ok()) << space.status().ToString();
    ASSERT_FALSE(space->empty());
    all.insert(all.end(), space->begin(), space->end());
  }
  CheckVariants(all, [](const ProblemClass&) { return false; });
}

// The default variant of every dtype x causal x head dim 32 ... 256 (64/128/256 and a sample
// of the others), and fa2_bwd's where hopper_bwd is the default (d64, d128: fa2_bwd still serves
// deterministic calls and strides TMA cannot describe); N 4097 for d128.
TEST(BackwardGpu, DefaultVariantsMatchTheReference) {
  std::vector<Variant> all;
  for (int d : {32, 64, 96, 128, 256})
    for (DType dtype : {DType::kBF16, DType::kF16})
      for (bool causal : {false, true}) {
        all.push_back(DefaultVariant(Bwd(dtype, d, causal)));
        if (all.back().family != "fa2_bwd")
          all.push_back(DefaultVariant(Bwd(dtype, d, causal), MaxSharedMemoryForArch("sm_80"), "sm_80"));
      }
  CheckVariants(all, [](const ProblemClass& cls) { return cls.head_dim == 128; });
}

// hopper_bwd (wgmma, sm_90a only; the default where it serves, named by URI here): both dtypes, d64,
// d96 (on d128's tiles) and d128, causal and not, det 0, det 1 (deterministic mode), dqw 1 and, causal, det 2 (each
// after det 0 of its class, sharing its cases), on the edge shapes (N 1, 17, 127, 1000, Nq != Nk both ways, GQA 8:1, MQA,
// head-major strides, and heads of one query block walked by the dQ writer's warps: GQA 8:1 with
// Nq 40, and GQA 3:1 causal where the last key block sees one query block); the same tolerances
// as fa2_bwd (P and dS are rounded to 16 bits before their GEMMs likewise).
TEST(HopperBwdGpu, EveryClassMatchesTheReference) {
  std::vector<Variant> all;
  for (DType dtype : {DType::kBF16, DType::kF16})
    for (int d : {64, 96, 128})
      for (bool causal : {false, true})
        // (det0_dg0_dqw1: the writer without turns)
        for (const char* mode : {"det0_dg0_dqw0", "det1_dg0_dqw0", "det0_dg0_dqw1", "det2_dg0_dqw0"}) {
          if (!causal && std::string(mode) == "det2_dg0_dqw0") continue;  // descending turns: causal only
          auto v = Variant::FromUri(std::string("hopper_bwd_") + std::string(DTypeName(dtype)) + "_d" + std::to_string(d) +
                                    "_bn128_bm64_" + mode + (causal ? "_causal" : "_full"));
          ASSERT_TRUE(v.ok()) << v.status().ToString();
          all.push_back(*v);
        }
  ASSERT_NO_FATAL_FAILURE(testing::AssertValid(all));
  auto gpu = GetGpu();
  if (!gpu.ok()) GTEST_SKIP() << "no GPU to run on: " << gpu.status().ToString();
  if ((*gpu)->info.Arch() != "sm_90a") GTEST_SKIP() << "hopper_bwd needs sm_90a; the GPU is " << (*gpu)->info.Arch();
  CheckVariants(all, [](const ProblemClass&) { return false; },
                {Shape{1, 40, 300, 8, 1, false}, Shape{1, 100, 660, 6, 2, false}});
}

// hopper_bwd's deterministic mode (det 1): the same bits over 3 runs and within tolerance, d64,
// d96 and d128, causal and not, on shapes where many key blocks add into
// each dq row: GQA 2:1 with 8 key blocks, MQA with Nk > Nq (12 key blocks, 8 query heads each
// walked by every block; causal blocks see different numbers of query blocks), and MQA with one
// query block (each writer warp's steps cross heads); det 2 (descending turns, causal) likewise;
// and both with dispatch groups (dg 2; dg 8: 12 key blocks in a group of 8 and one of 4).
TEST(HopperBwdGpuDeterministic, BitIdenticalOverThreeRunsAndCorrect) {
  std::vector<Variant> variants;
  for (int d : {64, 96, 128})
    for (const char* mode : {"det1_dg0_dqw0_full", "det1_dg0_dqw0_causal", "det2_dg0_dqw0_causal", "det1_dg2_dqw0_full",
                             "det1_dg8_dqw0_causal", "det2_dg2_dqw0_causal"}) {
      auto v = Variant::FromUri("hopper_bwd_bf16_d" + std::to_string(d) + "_bn128_bm64_" + mode);
      ASSERT_TRUE(v.ok()) << v.status().ToString();
      variants.push_back(*v);
    }
  ASSERT_NO_FATAL_FAILURE(testing::AssertValid(variants));
  auto gpu = GetGpu();
  if (!gpu.ok()) GTEST_SKIP() << "no GPU to run on: " << gpu.status().ToString();
  if ((*gpu)->info.Arch() != "sm_90a") GTEST_SKIP() << "hopper_bwd needs sm_90a; the GPU is " << (*gpu)->info.Arch();
  ExpectDeterministicVariants(
      **gpu, variants,
      {Shape{2, 1000, 1000, 4, 2, false}, Shape{1, 700, 1500, 8, 1, false}, Shape{1, 40, 300, 8, 1, false}}, 91);
}

TEST(BackwardGpuDeterministic, BitIdenticalOverThreeRunsAndCorrect) {
  // Every way of adding under the counter: a plain load and store (dqv 1), red.add.v2 (dqv 2,
  // whose order the counter alone must keep) and the staged tile's bulk reductions (dqs 1), in
  // both warp layouts (128 keys over 8 warps, d128: the defaults' tile); and d64's default tile
  // (128 queries per step) with and without staging.
  struct Mode {
    int head_dim;
    bool causal;
    int dq_vec, dq_staged, layout;
  };
  const Mode kModes[] = {{128, false, 1, 0, 2}, {128, true, 1, 0, 2}, {128, false, 2, 0, 2}, {128, true, 2, 0, 2},
                         {128, false, 2, 1, 2}, {128, true, 2, 1, 2}, {128, false, 2, 1, 1}, {128, true, 2, 0, 1},
                         {64, false, 2, 0, 2},  {64, true, 2, 0, 2},  {64, false, 2, 1, 2},  {64, true, 2, 1, 2}};
  std::vector<Variant> variants;
  for (const Mode& m : kModes) {
    // fa2_bwd's default (sm_80's choice), the family with a deterministic mode.
    Variant v = DefaultVariant(Bwd(DType::kBF16, m.head_dim, m.causal), MaxSharedMemoryForArch("sm_80"), "sm_80");
    v.SetParam("bc", 128);
    v.SetParam("br", m.head_dim == 64 ? 128 : 64);
    v.SetParam("w", 8);
    v.SetParam("dqc", 64);
    v.SetParam("det", 1);
    v.SetParam("dqv", m.dq_vec);
    v.SetParam("dqs", m.dq_staged);
    v.SetParam("lay", m.layout);
    variants.push_back(v);
  }
  ASSERT_NO_FATAL_FAILURE(testing::AssertValid(variants));
  auto gpu = GetGpu();
  if (!gpu.ok()) GTEST_SKIP() << "no GPU to run on: " << gpu.status().ToString();
  // Many key blocks add into each dq row: the order matters for the bits. (The staged tiles in
  // layout 2, dqs 1 lay 2, need more shared memory than sm_80's 163 KB: left out there.)
  ExpectDeterministicVariants(**gpu, variants, {Shape{2, 1000, 1000, 4, 2, false}}, 77);
}

}  // namespace
}  // namespace flashtune
