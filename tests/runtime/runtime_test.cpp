#include "flashtune/runtime.h"
#include "generator/families/decode_fwd.h"

#include <gtest/gtest.h>

#include <tuple>

#include <atomic>
#include <filesystem>
#include <thread>

#include "flashtune/problem_set.h"
#include "flashtune/space.h"
#include "flashtune/replay_measurer.h"
#include "flashtune/tuner.h"
#include "tests/runtime/tuned_db.h"

namespace flashtune {
namespace {

using namespace flashtune::testing;

struct Logged {
  std::vector<std::pair<LogLevel, std::string>> lines;
  int warnings() const {
    int n = 0;
    for (const auto& l : lines) n += l.first == LogLevel::kWarning;
    return n;
  }
};

std::unique_ptr<Runtime> OpenOn(const std::string& db, const DeviceRecord& device, Logged* logged) {
  RuntimeOptions o;
  o.db_path = db;
  o.device_override = device;
  o.log = [logged](LogLevel level, const std::string& message) { logged->lines.push_back({level, message}); };
  auto r = Runtime::Open(o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return std::move(*r);
}

class RuntimeLookup : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { db_ = new std::string(MakeTunedDatabase(TempDir("runtime_lookup"))); }
  static void TearDownTestSuite() { delete db_; }
  static std::string* db_;
};
std::string* RuntimeLookup::db_ = nullptr;

TEST_F(RuntimeLookup, ExactBucketGivesTheTunedWinner) {
  Logged logged;
  auto rt = OpenOn(*db_, TunedDevice(), &logged);
  ASSERT_TRUE(rt->has_database());
  auto db = Database::Open(*db_);
  ASSERT_TRUE(db.ok());
  for (const Problem& p : TunedProblems()) {
    auto w = (*db)->FindWinner(TunedDevice(), CurrentToolchain(), BucketOf(p));
    ASSERT_TRUE(w.ok() && w->has_value());
    // A different problem of the same bucket gets the same winner.
    Problem same_bucket = p;
    same_bucket.seqlen_q -= 1;
    same_bucket.seqlen_k -= 1;
    for (const Problem& q : {p, same_bucket}) {
      auto plan = rt->plan(q);
      ASSERT_TRUE(plan.ok()) << plan.status().ToString();
      EXPECT_EQ(plan->source, PlanSource::kExact) << plan->why;
      EXPECT_EQ(plan->variant, (*w)->variant);
      EXPECT_EQ(plan->problem, q);
      ASSERT_TRUE(plan->tuned_problem.has_value());
      EXPECT_EQ(*plan->tuned_problem, p);
      EXPECT_DOUBLE_EQ(plan->tuned_median_us, (*w)->median_us);
      EXPECT_EQ(plan->distance, 0);
      EXPECT_NE(plan->why.find("tuned winner"), std::string::npos) << plan->why;
    }
  }
  EXPECT_EQ(logged.warnings(), 0);
}

TEST_F(RuntimeLookup, UntunedBucketOfATunedClassUsesTheNearest) {
  Logged logged;
  auto rt = OpenOn(*db_, TunedDevice(), &logged);
  // Nq = Nk = 4096 (bucket 12); 2048 (bucket 11) is tuned, 512 (bucket 9) too.
  Problem p{DType::kBF16, 128, false, 4, 4096, 4096, 16, 16};
  auto plan = rt->plan(p);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->source, PlanSource::kNearest) << plan->why;
  ASSERT_TRUE(plan->tuned_problem.has_value());
  EXPECT_EQ(plan->tuned_problem->seqlen_q, 2048);
  EXPECT_GT(plan->distance, 0);
  EXPECT_GT(plan->tuned_median_us, 0);
  EXPECT_NE(plan->why.find("nearest"), std::string::npos) << plan->why;
  EXPECT_EQ(logged.warnings(), 0);
}

// `p`'s bucket won by its class default in `db`, as the build of toolchain `old` would record it.
void RecordWinnerOf(const std::string& db, const Problem& p, const ToolchainInfo& old) {
  auto opened = Database::Open(db);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  const int64_t dev = *(*opened)->UpsertDevice(TunedDevice()), tc = *(*opened)->UpsertToolchain(old);
  TrialRecord t;
  t.problem = p;
  t.variant = DefaultVariant(ClassOf(p));
  t.source_hash = "src-old";
  t.median_us = 100;
  t.reps = 20;
  ASSERT_TRUE((*opened)->RecordTrial(dev, tc, t).ok());
  ASSERT_TRUE((*opened)->SetWinner(dev, tc, p, t.variant, t.source_hash, 100, 1).ok());
}

// A bucket whose only winner was tuned by another build (other templates) is planned around like
// an untuned one, and the plan names that build instead of calling the bucket untuned; a bucket
// nobody tuned says nothing of the kind.
TEST(RuntimeStaleWinner, PlanNamesTheBuildThatTunedTheBucket) {
  const std::string db = MakeTunedDatabase(TempDir("runtime_stale_winner"));
  const Problem p{DType::kBF16, 128, false, 4, 4096, 4096, 16, 16};  // bucket 12: not in the tuned set
  ToolchainInfo old = CurrentToolchain();
  old.template_hash = "0123456789abcdef0123";
  ASSERT_NO_FATAL_FAILURE(RecordWinnerOf(db, p, old));
  Logged logged;
  auto rt = OpenOn(db, TunedDevice(), &logged);
  auto plan = rt->plan(p);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->source, PlanSource::kNearest) << plan->why;
  EXPECT_NE(plan->why.find(" with this build (its winner was tuned with nvrtc " + old.nvrtc_version + " / generator " +
                           old.generator_version + " / templates 0123456789ab; `flashtune tune` re-tunes it)"),
            std::string::npos)
      << plan->why;
  Problem untuned = p;
  untuned.batch = 2;
  untuned.seqlen_q = untuned.seqlen_k = 8192;
  auto other = rt->plan(untuned);
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  EXPECT_EQ(other->source, PlanSource::kNearest) << other->why;
  EXPECT_EQ(other->why.find("tuned with"), std::string::npos) << other->why;
}

// The same when nothing of the class is tuned with this build: the heuristic plan names the build
// that tuned the bucket.
TEST(RuntimeStaleWinner, HeuristicPlanNamesTheBuildThatTunedTheBucket) {
  const std::string db = TempDir("runtime_stale_only") + "/stale.db";
  const Problem p{DType::kBF16, 128, false, 4, 4096, 4096, 16, 16};
  ToolchainInfo old = CurrentToolchain();
  old.template_hash = "fedcba9876543210fedc";
  ASSERT_NO_FATAL_FAILURE(RecordWinnerOf(db, p, old));
  Logged logged;
  auto rt = OpenOn(db, TunedDevice(), &logged);
  auto plan = rt->plan(p);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->source, PlanSource::kHeuristic) << plan->why;
  EXPECT_NE(plan->why.find(" (this bucket's winner was tuned with nvrtc " + old.nvrtc_version + " / generator " +
                           old.generator_version + " / templates fedcba987654; `flashtune tune` re-tunes it)"),
            std::string::npos)
      << plan->why;
}

// GQA groups are buckets of their own: a GQA-8 call of a tuned MHA shape is not exact, it gets
// that MHA winner as the nearest bucket (distance 0), and its plan is cached apart.
TEST_F(RuntimeLookup, GqaCallOfATunedMhaShapeUsesTheMhaWinner) {
  Logged logged;
  auto rt = OpenOn(*db_, TunedDevice(), &logged);
  const Problem mha = TunedProblems().front();
  Problem gqa = mha;
  gqa.heads_kv = mha.heads_q / 8;
  auto exact = rt->plan(mha);
  auto near = rt->plan(gqa);
  ASSERT_TRUE(exact.ok() && near.ok());
  EXPECT_EQ(exact->source, PlanSource::kExact);
  EXPECT_EQ(near->source, PlanSource::kNearest) << near->why;
  EXPECT_EQ(near->distance, 0);
  EXPECT_EQ(near->variant, exact->variant);
  EXPECT_EQ(near->bucket_name, exact->bucket_name + "/g3");
  EXPECT_EQ(rt->plan(mha)->source, PlanSource::kExact);  // the MHA plan was not overwritten
}

// The database holds bf16 d128 full only: f16 d128 takes its winner's tile (the other dtype),
// d96 too (the next larger head dim), each said in why.
TEST_F(RuntimeLookup, UntunedClassNextToATunedOneUsesItsWinner) {
  Logged logged;
  auto rt = OpenOn(*db_, TunedDevice(), &logged);
  auto db = Database::Open(*db_);
  ASSERT_TRUE(db.ok());
  const Problem tuned = TunedProblems()[1];
  auto w = (*db)->FindWinner(TunedDevice(), CurrentToolchain(), BucketOf(tuned));
  ASSERT_TRUE(w.ok() && w->has_value());
  for (auto [dtype, head_dim, reason] : {std::tuple{DType::kF16, 128, "same head dim, other dtype"},
                                         std::tuple{DType::kBF16, 96, "next larger tuned head dim"}}) {
    Problem p = tuned;
    p.dtype = dtype;
    p.head_dim = head_dim;
    auto plan = rt->plan(p);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_EQ(plan->source, PlanSource::kNeighbour) << plan->why;
    Variant expected = (*w)->variant;
    expected.dtype = dtype;
    expected.head_dim = head_dim;
    EXPECT_EQ(plan->variant, expected) << plan->why;
    ASSERT_TRUE(plan->tuned_problem.has_value());
    EXPECT_EQ(*plan->tuned_problem, tuned);
    EXPECT_EQ(plan->tuned_median_us, 0) << "the neighbour's time is of another class";
    EXPECT_NE(plan->why.find(reason), std::string::npos) << plan->why;
    EXPECT_EQ(PlanSourceName(plan->source), "neighbour");
  }
  EXPECT_EQ(logged.warnings(), 0);
}

// A paged call has its own bucket: never the dense winner of its shape (timed on no page
// table), but the paged winner once tuned; and the dense call keeps the dense winner.
// The plan of a call is what forward() launches for it: a dense call with per-sequence key
// counts and 64 queries cannot run on hopper_fwd (the problem's plan on sm_90a), so the call's
// plan names the same tile in hopper_paged (which reads a dense cache's lengths), as a
// heuristic, and says why; without the lengths, the problem's plan stands. A paged prefill call plans hopper_paged, and with pages of fewer than
// 16 keys (which its TMA boxes do not read) fa2_paged, saying why.
TEST(RuntimePlanCall, AFallbackTheCallCausesIsWhatItsPlanSays) {
  Logged logged;
  auto rt = OpenOn(TempDir("runtime_plan_call") + "/absent.db", TunedDevice(), &logged);
  Problem p{DType::kBF16, 128, true, 2, 64, 4096, 32, 8};
  alignas(16) static char storage[6][64];
  ForwardArgs a = ForwardArgs::Contiguous(p);
  a.q = storage[0], a.k = storage[1], a.v = storage[2], a.o = storage[3];
  auto plain = rt->plan(a);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->variant.family, "hopper_fwd");
  a.seqlens_k = reinterpret_cast<const int32_t*>(storage[4]);
  auto with_lengths = rt->plan(a);
  ASSERT_TRUE(with_lengths.ok()) << with_lengths.status().ToString();
  EXPECT_EQ(with_lengths->variant.family, "hopper_paged");
  EXPECT_EQ(with_lengths->variant.params, plain->variant.params);
  EXPECT_EQ(with_lengths->source, PlanSource::kHeuristic);
  EXPECT_NE(with_lengths->why.find(plain->variant.Uri() + " (heuristic) cannot run this call"), std::string::npos)
      << with_lengths->why;
  EXPECT_NE(with_lengths->why.find("seqlens_k"), std::string::npos) << with_lengths->why;
  EXPECT_NE(with_lengths->why.find("falls back to the same tile in hopper_paged, " + with_lengths->variant.Uri()),
            std::string::npos)
      << with_lengths->why;
  EXPECT_EQ(with_lengths->bucket_name, plain->bucket_name);
  p.layout = Layout::kPaged;
  ForwardArgs paged = ForwardArgs::Contiguous(p, 16);
  paged.q = storage[0], paged.k = storage[1], paged.v = storage[2], paged.o = storage[3];
  paged.seqlens_k = reinterpret_cast<const int32_t*>(storage[4]);
  paged.paged.block_table = reinterpret_cast<const int32_t*>(storage[5]);
  auto chunk = rt->plan(paged);
  ASSERT_TRUE(chunk.ok()) << chunk.status().ToString();
  EXPECT_EQ(chunk->variant.family, "hopper_paged");
  EXPECT_EQ(chunk->why.find("cannot run"), std::string::npos) << chunk->why;
  // Untuned, it says how to tune prefill over pages: a problem-set line (the decode set's paged
  // buckets hold up to 16 queries, so `--decode-layouts paged` would not tune this one).
  EXPECT_NE(chunk->why.find("`flashtune tune --problem-set FILE` with a line like `" + FormatProblemLine(p) + "`"),
            std::string::npos)
      << chunk->why;
  EXPECT_EQ(chunk->why.find("--decode-layouts"), std::string::npos) << chunk->why;
  ForwardArgs small_pages = ForwardArgs::Contiguous(p, 8);
  small_pages.q = storage[0], small_pages.k = storage[1], small_pages.v = storage[2], small_pages.o = storage[3];
  small_pages.seqlens_k = paged.seqlens_k;
  small_pages.paged.block_table = paged.paged.block_table;
  auto small = rt->plan(small_pages);
  ASSERT_TRUE(small.ok()) << small.status().ToString();
  EXPECT_EQ(small->variant.family, "fa2_paged");
  EXPECT_NE(small->why.find(chunk->variant.Uri() + " (heuristic) cannot run this call"), std::string::npos) << small->why;
  EXPECT_NE(small->why.find("paged.block_size (8) is below 16"), std::string::npos) << small->why;
}

// A tuned hopper_fwd winner's tile serves a dense cache with lengths, compiled as hopper_paged:
// the tune picked the tile for the shape, and hopper_paged runs hopper_fwd's template. Where
// the lengths are the only difference, the tuned tile, not hopper_paged's default.
TEST(RuntimePlanCall, ADenseCacheWithLengthsRunsTheTunedTileAsHopperPaged) {
  const std::string db = TempDir("runtime_dense_lengths") + "/t.db";
  const Problem p{DType::kBF16, 128, false, 2, 512, 4096, 32, 8};
  auto seed = DefaultVariantFor(p, MaxSharedMemoryForArch("sm_90a"), "sm_90a");
  ASSERT_TRUE(seed.ok()) << seed.status().ToString();
  ASSERT_EQ(seed->family, "hopper_fwd");
  Variant tuned = *seed;
  tuned.SetParam("bn", 176);
  tuned.SetParam("p", 1);
  ASSERT_TRUE(CheckVariant(tuned).ok()) << CheckVariant(tuned).ToString();
  RecordedRow r;
  r.problem = p;
  r.variant = tuned;
  r.median_us = 80;
  r.iqr_us = 0.5;
  TuneRowsInto(db, {p}, {r});
  Logged logged;
  auto rt = OpenOn(db, TunedDevice(), &logged);
  alignas(16) static char storage[5][64];
  ForwardArgs a = ForwardArgs::Contiguous(p);
  a.q = storage[0], a.k = storage[1], a.v = storage[2], a.o = storage[3];
  auto plain = rt->plan(a);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->source, PlanSource::kExact) << plain->why;
  EXPECT_EQ(plain->variant, tuned);
  a.seqlens_k = reinterpret_cast<const int32_t*>(storage[4]);
  auto with_lengths = rt->plan(a);
  ASSERT_TRUE(with_lengths.ok()) << with_lengths.status().ToString();
  EXPECT_EQ(with_lengths->variant.family, "hopper_paged");
  EXPECT_EQ(with_lengths->variant.params, tuned.params) << with_lengths->variant.Uri();
  EXPECT_NE(with_lengths->why.find(tuned.Uri() + " (exact) cannot run this call"), std::string::npos)
      << with_lengths->why;
  // 16 queries or fewer: decode_fwd reads the lengths, and the problem's plan is its own.
  ForwardArgs decode = ForwardArgs::Contiguous(Problem{DType::kBF16, 128, false, 2, 4, 4096, 32, 8});
  decode.q = storage[0], decode.k = storage[1], decode.v = storage[2], decode.o = storage[3];
  decode.seqlens_k = a.seqlens_k;
  auto step = rt->plan(decode);
  ASSERT_TRUE(step.ok()) << step.status().ToString();
  EXPECT_EQ(step->variant.family, "decode_fwd");
  EXPECT_EQ(step->why.find("cannot run"), std::string::npos) << step->why;
}

TEST(RuntimePaged, PagedCallsPlanTheirOwnBuckets) {
  const std::string db = TempDir("runtime_paged") + "/t.db";
  Problem dense{DType::kBF16, 128, false, 8, 1, 32768, 32, 8};
  Problem paged = dense;
  paged.layout = Layout::kPaged;
  const Variant wide = DecodeVariant(DType::kBF16, 128, false, 128, 1, 4, 2, 2);
  const Variant narrow = DecodeVariant(DType::kBF16, 128, false, 32, 1, 2, 2, 4);
  // The same tiles compiled for pages.
  const Variant paged_wide = DecodeVariant(DType::kBF16, 128, false, 128, 1, 4, 2, 2, /*paged=*/true);
  const Variant paged_narrow = DecodeVariant(DType::kBF16, 128, false, 32, 1, 2, 2, 4, /*paged=*/true);
  auto row = [](const Problem& p, const Variant& v, double us) {
    RecordedRow r;
    r.problem = p;
    r.variant = v;
    r.median_us = us;
    r.iqr_us = us * 0.003;
    return r;
  };
  // Dense only at first: the paged call is planned untuned.
  TuneRowsInto(db, {dense}, {row(dense, wide, 60), row(dense, narrow, 62)});
  Logged logged;
  {
    auto rt = OpenOn(db, TunedDevice(), &logged);
    auto d = rt->plan(dense);
    auto p = rt->plan(paged);
    ASSERT_TRUE(d.ok() && p.ok());
    EXPECT_EQ(d->source, PlanSource::kExact);
    EXPECT_EQ(d->variant, wide);
    EXPECT_EQ(p->bucket_name, d->bucket_name + "/paged");
    EXPECT_EQ(p->source, PlanSource::kHeuristic) << p->why;
    EXPECT_EQ(p->variant.family, "decode_fwd");
    EXPECT_EQ(p->variant.Param("kv"), 1) << p->variant.Uri();  // the default tile, compiled for pages
    EXPECT_NE(p->why.find("no tuned paged bucket of class bf16 d128 full"), std::string::npos) << p->why;
    EXPECT_NE(p->why.find("--decode-layouts paged"), std::string::npos) << p->why;
  }
  // Then tuned on pages, where the narrow tile wins.
  TuneRowsInto(db, {paged}, {row(paged, paged_wide, 90), row(paged, paged_narrow, 65)});
  auto rt = OpenOn(db, TunedDevice(), &logged);
  auto d = rt->plan(dense);
  auto p = rt->plan(paged);
  ASSERT_TRUE(d.ok() && p.ok());
  EXPECT_EQ(d->variant, wide);
  EXPECT_EQ(p->source, PlanSource::kExact) << p->why;
  EXPECT_EQ(p->variant, paged_narrow);
  ASSERT_TRUE(p->tuned_problem.has_value());
  EXPECT_EQ(p->tuned_problem->layout, Layout::kPaged);
}

TEST_F(RuntimeLookup, UntunedClassWithNoNeighbourUsesTheHeuristic) {
  Logged logged;
  auto rt = OpenOn(*db_, TunedDevice(), &logged);
  Problem p{DType::kBF16, 32, true, 2, 1024, 1024, 8, 8};  // d128 is more than 2x away
  auto plan = rt->plan(p);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->source, PlanSource::kHeuristic);
  EXPECT_EQ(plan->variant, DefaultVariant(ClassOf(p), MaxSharedMemoryForArch("sm_90a")));
  EXPECT_FALSE(plan->tuned_problem.has_value());
  EXPECT_NE(plan->why.find("default tile"), std::string::npos) << plan->why;
  EXPECT_EQ(logged.warnings(), 0) << "the device is tuned, just not this class or one next to it";
}

// An untuned plan on a family other than the most preferred says why each family passed over
// has no kernels for the class (the d32 forward and the d96 backward leave Hopper's families).
TEST_F(RuntimeLookup, UntunedPlanSaysWhyThePreferredFamiliesDoNotServe) {
  Logged logged;
  auto rt = OpenOn(*db_, TunedDevice(), &logged);
  auto d32 = rt->plan(Problem{DType::kBF16, 32, true, 2, 1024, 1024, 8, 8});
  ASSERT_TRUE(d32.ok()) << d32.status().ToString();
  EXPECT_EQ(d32->variant.family, "fa2_fwd");
  EXPECT_NE(d32->why.find("; not hopper_fwd and hopper_paged: head dims 64 to 256 in steps of 32 only"),
            std::string::npos)
      << d32->why;
  auto d256 = rt->plan(Problem{DType::kBF16, 256, false, 2, 2048, 2048, 16, 16, Operation::kBackward});
  ASSERT_TRUE(d256.ok()) << d256.status().ToString();
  EXPECT_EQ(d256->variant.family, "fa2_bwd");
  EXPECT_NE(d256->why.find("; not hopper_bwd: head dims 64, 96 and 128 only"), std::string::npos) << d256->why;
  // The most preferred family serving: nothing passed over, nothing said.
  auto d128 = rt->plan(Problem{DType::kBF16, 128, false, 2, 2048, 2048, 16, 16, Operation::kBackward});
  ASSERT_TRUE(d128.ok()) << d128.status().ToString();
  EXPECT_EQ(d128->variant.family, "hopper_bwd");
  EXPECT_EQ(d128->why.find("; not "), std::string::npos) << d128->why;
}

// A tuned plan says it too: the tuner searched only the families with kernels for the class.
TEST(RuntimeTunedPlan, SaysWhyThePreferredFamiliesDoNotServe) {
  const std::string db = TempDir("runtime_passed_over") + "/tuned.db";
  const Problem d256{DType::kBF16, 256, false, 2, 2048, 2048, 16, 16, Operation::kBackward};
  ASSERT_NO_FATAL_FAILURE(RecordWinnerOf(db, d256, CurrentToolchain()));
  Logged logged;
  auto rt = OpenOn(db, TunedDevice(), &logged);
  auto plan = rt->plan(d256);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->source, PlanSource::kExact) << plan->why;
  EXPECT_EQ(plan->variant.family, "fa2_bwd");
  EXPECT_NE(plan->why.find("tuned winner of bucket "), std::string::npos) << plan->why;
  EXPECT_NE(plan->why.find("; not hopper_bwd: head dims 64, 96 and 128 only"), std::string::npos) << plan->why;
}

// The untuned decode tile depends on the K/V stream's size, and the plan says so.
TEST_F(RuntimeLookup, UntunedDecodePlanSaysWhenItsTileIsForAShortStream) {
  Logged logged;
  auto rt = OpenOn(*db_, TunedDevice(), &logged);
  Problem short_stream{DType::kBF16, 128, false, 1, 1, 2048, 32, 8};
  auto plan = rt->plan(short_stream);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->source, PlanSource::kHeuristic) << plan->why;
  EXPECT_EQ(plan->variant.Uri(), "decode_fwd_bf16_d128_bn32_rm1_w2_s4_cs4_kv0_full");
  EXPECT_NE(plan->why.find("(a short K/V stream: B*Hkv*Nk*D = 2097152 key elements <= 2^25)"), std::string::npos)
      << plan->why;
  Problem long_stream = short_stream;
  long_stream.batch = 64;
  plan = rt->plan(long_stream);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->variant.Uri(), "decode_fwd_bf16_d128_bn64_rm1_w4_s3_cs2_kv0_full") << plan->why;
  EXPECT_EQ(plan->why.find("short K/V stream"), std::string::npos) << plan->why;
  // At head dims up to 64 the bound is lower (2^20 dense), and the plan names it.
  Problem narrow = short_stream;
  narrow.head_dim = 64;
  plan = rt->plan(narrow);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->variant.Uri(), "decode_fwd_bf16_d64_bn32_rm1_w2_s4_cs4_kv0_full") << plan->why;
  EXPECT_NE(plan->why.find("(a short K/V stream: B*Hkv*Nk*D = 1048576 key elements <= 2^20)"), std::string::npos)
      << plan->why;
  // Paged past its bound (2^21 at d64) a narrow head takes a tile of its own, and the plan says why.
  Problem narrow_paged = narrow;
  narrow_paged.layout = Layout::kPaged;
  narrow_paged.batch = 8;
  plan = rt->plan(narrow_paged);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->variant.Uri(), "decode_fwd_bf16_d64_bn64_rm1_w4_s2_cs4_kv1_full") << plan->why;
  EXPECT_NE(plan->why.find("(paged K/V at head dim <= 64 past the short streams: B*Hkv*Nk*D = 8388608 key "
                           "elements > 2^21)"),
            std::string::npos)
      << plan->why;
}

TEST_F(RuntimeLookup, UntunedGpuIsReportedOnceAndGetsHeuristics) {
  Logged logged;
  DeviceRecord a100{"NVIDIA A100-SXM4-80GB", "GPU-other", 8, 0, 108, "13.0"};
  auto rt = OpenOn(*db_, a100, &logged);
  for (const Problem& p : TunedProblems()) {
    auto plan = rt->plan(p);
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(plan->source, PlanSource::kHeuristic);
    // sm_80's smaller shared memory is respected.
    EXPECT_TRUE(CheckVariant(plan->variant, MaxSharedMemoryForArch("sm_80")).ok());
  }
  ASSERT_EQ(logged.warnings(), 1);
  EXPECT_NE(logged.lines[0].second.find("A100"), std::string::npos) << logged.lines[0].second;
  EXPECT_NE(logged.lines[0].second.find("not tuned"), std::string::npos) << logged.lines[0].second;
}

TEST_F(RuntimeLookup, SameModelOtherDriverIsUntuned) {
  Logged logged;
  DeviceRecord d = TunedDevice();
  d.driver_version = "12.4";
  auto rt = OpenOn(*db_, d, &logged);
  auto plan = rt->plan(TunedProblems()[0]);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->source, PlanSource::kHeuristic);
  EXPECT_EQ(logged.warnings(), 1);
}

TEST_F(RuntimeLookup, ThreadsSharingOneRuntimeAgree) {
  Logged logged;
  auto rt = OpenOn(*db_, TunedDevice(), &logged);
  const Problem p = TunedProblems()[1];
  auto expected = rt->plan(p);
  ASSERT_TRUE(expected.ok());
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        Problem q = p;
        q.seqlen_q = 1 + (i * 37 + t) % 4096;  // several buckets, computed concurrently
        auto a = rt->plan(q);
        auto b = rt->plan(p);
        if (!a.ok() || !b.ok() || b->variant != expected->variant) ++mismatches;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(Runtime, MissingDatabaseIsHeuristicAndReported) {
  Logged logged;
  const std::string dir = TempDir("runtime_missing_db");
  auto rt = OpenOn(dir + "/absent.db", TunedDevice(), &logged);
  EXPECT_FALSE(rt->has_database());
  EXPECT_EQ(rt->db_path(), dir + "/absent.db");
  auto plan = rt->plan(TunedProblems()[0]);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->source, PlanSource::kHeuristic);
  ASSERT_EQ(logged.warnings(), 1);
  EXPECT_NE(logged.lines[0].second.find("absent.db"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir + "/absent.db")) << "the runtime must not create the database";
}

TEST(Runtime, CorruptDatabaseFailsToOpen) {
  const std::string path = WriteTempFile("runtime_corrupt.db", "this is not a database, just some text\n");
  RuntimeOptions o;
  o.db_path = path;
  o.device_override = TunedDevice();
  auto rt = Runtime::Open(o);
  ASSERT_FALSE(rt.ok());
  EXPECT_EQ(rt.status().code(), Code::kCorrupt) << rt.status().ToString();
}

TEST(Runtime, DatabasePathDefaultsToEnvironment) {
  const std::string dir = TempDir("runtime_env_db");
  ::setenv("FLASHTUNE_DB", (dir + "/env.db").c_str(), 1);
  RuntimeOptions o;
  o.device_override = TunedDevice();
  o.log = [](LogLevel, const std::string&) {};
  auto rt = Runtime::Open(o);
  ::unsetenv("FLASHTUNE_DB");
  ASSERT_TRUE(rt.ok());
  EXPECT_EQ((*rt)->db_path(), dir + "/env.db");
}

TEST(Runtime, PlanRejectsInvalidProblems) {
  Logged logged;
  auto rt = OpenOn(TempDir("runtime_bad_problem") + "/x.db", TunedDevice(), &logged);
  Problem p{DType::kBF16, 100, false, 1, 128, 128, 4, 4};
  auto plan = rt->plan(p);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), Code::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("head_dim"), std::string::npos);
  p.head_dim = 64;
  p.heads_kv = 3;
  plan = rt->plan(p);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("heads_kv"), std::string::npos);
}

// Validation happens before the driver is even looked at: on a machine without a GPU a bad call
// is kInvalidArgument naming the argument, not kNoDriver.
ForwardArgs GoodArgs() {
  alignas(16) static char fake[64];
  ForwardArgs a;
  a.problem.dtype = DType::kBF16;
  a.problem.head_dim = 64;
  a.problem.batch = 1;
  a.problem.seqlen_q = a.problem.seqlen_k = 128;
  a.problem.heads_q = a.problem.heads_kv = 2;
  a.q = a.k = a.v = fake;
  a.o = fake;
  a.q_strides = a.k_strides = a.v_strides = a.o_strides = Strides::Contiguous(128, 2, 64);
  return a;
}

TEST(Runtime, ForwardValidatesBeforeLaunching) {
  Logged logged;
  auto rt = OpenOn(TempDir("runtime_forward_validation") + "/x.db", TunedDevice(), &logged);
  struct Case {
    const char* name;
    void (*mutate)(ForwardArgs&);
  } cases[] = {
      {"q", [](ForwardArgs& a) { a.q = nullptr; }},
      {"o", [](ForwardArgs& a) { a.o = nullptr; }},
      {"head_dim", [](ForwardArgs& a) { a.problem.head_dim = 48; }},
      {"heads_kv", [](ForwardArgs& a) { a.problem.heads_kv = 3; }},
      {"seqlen_k", [](ForwardArgs& a) { a.problem.seqlen_k = 0; }},
      {"softmax_scale", [](ForwardArgs& a) { a.softmax_scale = -1.0f; }},
      {"k", [](ForwardArgs& a) { a.k = static_cast<const char*>(a.k) + 2; }},
  };
  for (const Case& c : cases) {
    ForwardArgs a = GoodArgs();
    c.mutate(a);
    Status s = rt->forward(a, nullptr);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << c.name << ": " << s.ToString();
    EXPECT_NE(s.message().find(c.name), std::string::npos) << c.name << ": " << s.message();
  }
  EXPECT_TRUE(logged.lines.empty()) << "a rejected call must not even plan";
}

TEST(Runtime, BackwardPlansItsOwnBucketsAndValidatesBeforeLaunching) {
  Logged logged;
  auto rt = OpenOn(TempDir("runtime_backward") + "/x.db", TunedDevice(), &logged);
  Problem p = GoodArgs().problem;
  p.operation = Operation::kBackward;
  auto plan = rt->plan(p);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->variant.family, "hopper_bwd");  // the untuned choice on an H200 (sm_90a)
  EXPECT_EQ(plan->bucket_name.rfind("bwd/", 0), 0u) << plan->bucket_name;
  p.operation = Operation::kForward;
  auto forward = rt->plan(p);
  ASSERT_TRUE(forward.ok());
  EXPECT_NE(forward->variant.family, "hopper_bwd");  // the two passes never share a plan
  EXPECT_NE(forward->variant.family, "fa2_bwd");

  alignas(256) static char fake[256];
  BackwardArgs b;
  b.forward = GoodArgs();
  b.forward.lse = reinterpret_cast<float*>(fake);
  b.d_o = b.dq = b.dk = b.dv = fake;
  b.d_o_strides = b.dq_strides = b.dk_strides = b.dv_strides = b.forward.q_strides;
  b.forward.workspace = fake;
  b.forward.workspace_bytes = BackwardWorkspaceBytes(b.problem()) - 1;
  logged.lines.clear();
  Status s = rt->backward(b, nullptr);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("workspace_bytes"), std::string::npos) << s.message();
  b.forward.workspace_bytes += 1;
  b.dq = nullptr;
  s = rt->backward(b, nullptr);
  EXPECT_NE(s.message().find("dq must not be null"), std::string::npos) << s.message();
  EXPECT_TRUE(logged.lines.empty()) << "a rejected call must not even plan";
}

}  // namespace
}  // namespace flashtune

namespace flashtune {
namespace {

using namespace flashtune::testing;

// Applications read the database while a tuner writes it: from before the file exists,
// through schema creation and every trial, to the last winner.
TEST(Runtime, ReadsWhileATunerWrites) {
  const std::string path = TempDir("runtime_concurrent") + "/t.db";
  const std::vector<RecordedRow> rows = TunedRows();
  const auto problems = TunedProblems();
  ReplayMeasurer::Options o;
  o.device = TunedDevice();
  o.toolchain = CurrentToolchain();
  o.delay_ms = 3;  // a run of a few hundred milliseconds
  auto space = ReplayMeasurer::FromText(ReplayCsv(rows), "rows", o);
  auto measurer = ReplayMeasurer::FromText(ReplayCsv(rows), "rows", o);
  ASSERT_TRUE(space.ok() && measurer.ok());
  std::atomic<bool> done{false};
  Status tuned;
  std::thread tuner([&] {
    std::vector<std::unique_ptr<Measurer>> ms;
    ms.push_back(std::move(*measurer));
    TuneOptions t;
    t.db_path = path;
    t.problems = problems;
    ReplayMeasurer* s = space->get();
    t.enumerate = [s](const Problem& p, const DeviceRecord&) -> Result<std::vector<Variant>> { return s->Variants(p); };
    auto summary = Tune(t, std::move(ms));
    tuned = summary.ok() ? Status::Ok() : summary.status();
    done = true;
  });
  int reads = 0, failures = 0;
  std::string first_failure;
  while (!done) {
    RuntimeOptions ro;
    ro.db_path = path;
    ro.device_override = TunedDevice();
    ro.log = [](LogLevel, const std::string&) {};
    auto rt = Runtime::Open(ro);
    Status s = rt.ok() ? Status::Ok() : rt.status();
    for (const Problem& p : problems) {
      if (!s.ok()) break;
      auto plan = (*rt)->plan(p);
      if (!plan.ok()) s = plan.status();
    }
    ++reads;
    if (!s.ok() && failures++ == 0) first_failure = s.ToString();
  }
  tuner.join();
  ASSERT_TRUE(tuned.ok()) << tuned.ToString();
  EXPECT_GT(reads, 5);
  EXPECT_EQ(failures, 0) << first_failure;
  // After the run, a new runtime sees every winner.
  Logged logged;
  auto rt = OpenOn(path, TunedDevice(), &logged);
  for (const Problem& p : problems) {
    auto plan = rt->plan(p);
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(plan->source, PlanSource::kExact) << p.ToString();
  }
}

}  // namespace
}  // namespace flashtune
