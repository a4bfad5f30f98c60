// The family seam: a family that exists only in this test is enumerated, parsed, generated
// and tuned by the same pipeline as fa2_fwd, and wins when it is faster — with no change to
// the tuner, the database or the runtime.
#include "generator/family.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "flashtune/source.h"
#include "flashtune/space.h"
#include "flashtune/replay_measurer.h"
#include "flashtune/tuner.h"
#include "generator/families/fa2_fwd.h"
#include "tests/support/replay_fixture.h"

namespace flashtune {
namespace {

using namespace flashtune::testing;

// A family with two parameters that serves only the plain "sm_90" target (where fa2_fwd serves
// too and hopper_fwd does not), so the default sm_90a spaces of other tests never see it.
class ToyFamily final : public Family {
 public:
  std::string_view name() const override { return "toy_fwd"; }
  std::string_view template_name() const override { return "fa2_fwd.cuh"; }
  const std::vector<ParamAxis>& axes() const override {
    static const std::vector<ParamAxis> kAxes = {{"bm", "block_m (bm)", {64, 128, 192}, {64, 128}},
                                                 {"bn", "block_n (bn)", {64, 128}, {64, 128}}};
    return kAxes;
  }
  std::string UnservedFor(const ProblemClass& cls, const Target& target) const override {
    if (target.arch != "sm_90") return "sm_90 only";
    return cls.head_dim <= 128 ? "" : "head dims up to 128 only";
  }
  int64_t SharedMemoryBytes(const Variant& v) const override {
    return int64_t(v.Param("bm") + 2 * v.Param("bn")) * v.head_dim * 2;
  }
  int Threads(const Variant& v) const override { return v.Param("bm") + 32; }
  Status CheckRules(const Variant& v, int64_t max_smem) const override {
    if (SharedMemoryBytes(v) > max_smem) return Status(Code::kInvalidArgument, "toy: shared memory");
    return Status::Ok();
  }
  Variant Default(const ProblemClass& cls, const Target&) const override {
    const int values[] = {128, 64};
    return MakeVariant(cls, values);
  }
  int preference() const override { return 1; }
  std::string Prologue(const Variant& v) const override { return "// toy prologue for " + v.Uri() + "\n"; }
  Status CanRun(const Variant&, const ForwardArgs& args) const override {
    if (args.q_strides.seq % 64 != 0) return Status(Code::kUnsupported, "toy needs 128-byte rows");
    return Status::Ok();
  }
  void Pack(const Variant& v, const ForwardArgs& args, LaunchPacket* out) const override {
    out->grid[0] = unsigned((args.problem.seqlen_q + v.Param("bm") - 1) / v.Param("bm"));
    out->block[0] = unsigned(Threads(v));
    out->smem_bytes = uint32_t(SharedMemoryBytes(v));
    out->SetArgs(args.problem.seqlen_q);
  }
};

const ToyFamily& Toy() {
  static const ToyFamily toy;
  static const bool registered = (RegisterFamilyForTesting(&toy), true);
  (void)registered;
  return toy;
}

TEST(Family, RegistryHoldsTheBuiltinFamilies) {
  ASSERT_NE(FindFamily("fa2_fwd"), nullptr);
  EXPECT_EQ(FindFamily("fa2_fwd")->template_name(), "fa2_fwd.cuh");
  EXPECT_EQ(FindFamily("nope"), nullptr);
  EXPECT_NE(FamilyNames().find("fa2_fwd"), std::string::npos);
  Variant v = Fa2Variant(DType::kBF16, 128, false, 128, 64, 4, 2);
  v.family = "nope";
  EXPECT_EQ(FamilyOf(v).status().code(), Code::kInvalidArgument);
  EXPECT_NE(FamilyOf(v).status().message().find("known families: "), std::string::npos);
}

TEST(Family, SpaceIsTheUnionOfTheFamiliesThatServeTheTarget) {
  Toy();
  const ProblemClass cls{DType::kBF16, 128, false};
  SpaceOptions hopper;
  hopper.arch = "sm_90";
  auto both = EnumerateSpace(cls, hopper);
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  const auto toys = std::count_if(both->begin(), both->end(), [](const Variant& v) { return v.family == "toy_fwd"; });
  EXPECT_EQ(toys, 4);
  EXPECT_GT(both->size(), 4u);
  // Not served on sm_80 (nor sm_90a): the toy family's space is empty there.
  SpaceOptions ampere;
  ampere.arch = "sm_80";
  ampere.max_smem_bytes = MaxSharedMemoryForArch("sm_80");
  auto no_toy = EnumerateSpace(cls, ampere);
  ASSERT_TRUE(no_toy.ok());
  EXPECT_TRUE(std::none_of(no_toy->begin(), no_toy->end(), [](const Variant& v) { return v.family == "toy_fwd"; }));
  // A family filter.
  hopper.families = {"toy_fwd"};
  EXPECT_EQ(EnumerateSpace(cls, hopper)->size(), 4u);
  hopper.families = {"nope"};
  EXPECT_NE(EnumerateSpace(cls, hopper).status().message().find("family 'nope' is not known"), std::string::npos);
  // The preferred family's default is the untuned choice where it serves.
  EXPECT_EQ(DefaultVariant(cls, kDefaultMaxSmemBytes, "sm_90").family, "toy_fwd");
  EXPECT_EQ(DefaultVariant(cls, MaxSharedMemoryForArch("sm_80"), "sm_80").family, "fa2_fwd");
}

TEST(Family, EveryFamilyRefusesTheOtherOperationsClassesSayingWhichItComputes) {
  // One home for the operation check (Family::Unserved): no family's own reasons are asked for
  // a class it cannot compute, so Serves and Space agree for every family, built in or not.
  for (const Family* f : Families()) {
    for (Operation op : {Operation::kForward, Operation::kBackward}) {
      const ProblemClass cls{DType::kBF16, 128, false, op};
      const std::string why = f->Unserved(cls, Target{"sm_90a"});
      if (op == f->operation()) {
        EXPECT_EQ(why.find("computes the"), std::string::npos) << f->name() << ": " << why;
        continue;
      }
      EXPECT_EQ(why, f->operation() == Operation::kBackward ? "computes the backward pass only"
                                                            : "computes the forward pass only")
          << f->name();
      EXPECT_FALSE(f->Serves(cls, Target{"sm_90a"})) << f->name();
      EXPECT_TRUE(f->Space(cls, Target{"sm_90a"}).empty()) << f->name();
    }
  }
}

TEST(Family, FamiliesServingAreMostPreferredFirst) {
  Toy();
  const ProblemClass cls{DType::kBF16, 128, false};
  auto names = [](const std::vector<const Family*>& fs) {
    std::vector<std::string> out;
    for (const Family* f : fs) out.emplace_back(f->name());
    return out;
  };
  // toy (preference 1) ahead of fa2_fwd (0) where both serve; hopper_fwd (10) ahead of fa2_fwd
  // on sm_90a; fa2_fwd alone among the dense prefill families on sm_80 and for a head dim
  // hopper_fwd does not serve; fa2_paged and hopper_paged (-5, the latter on sm_90a only) and
  // decode_fwd (-10), never a class's default (picked per problem: the paged layout, decode), last.
  EXPECT_EQ(names(FamiliesServing(cls, Target{"sm_90", kDefaultMaxSmemBytes})),
            (std::vector<std::string>{"toy_fwd", "fa2_fwd", "fa2_paged", "decode_fwd"}));
  EXPECT_EQ(names(FamiliesServing(cls, Target{"sm_90a", kDefaultMaxSmemBytes})),
            (std::vector<std::string>{"hopper_fwd", "fa2_fwd", "fa2_paged", "hopper_paged", "decode_fwd"}));
  EXPECT_EQ(names(FamiliesServing(cls, Target{"sm_80", MaxSharedMemoryForArch("sm_80")})),
            (std::vector<std::string>{"fa2_fwd", "fa2_paged", "decode_fwd"}));
  EXPECT_EQ(names(FamiliesServing(ProblemClass{DType::kF16, 32, true}, Target{"sm_90a", kDefaultMaxSmemBytes})),
            (std::vector<std::string>{"fa2_fwd", "fa2_paged", "decode_fwd"}));
  EXPECT_EQ(names(FamiliesServing(ProblemClass{DType::kF16, 96, true}, Target{"sm_90a", kDefaultMaxSmemBytes})),
            (std::vector<std::string>{"hopper_fwd", "fa2_fwd", "fa2_paged", "hopper_paged", "decode_fwd"}));
}

// What a plan says of the families it passed over: each more preferred family with no
// kernels for the problem on the target, with its reason; families sharing one named together.
TEST(Family, PassedOverNamesEachPreferredFamilyThatDoesNotServeAndWhy) {
  Toy();
  const Problem d128{DType::kBF16, 128, false, 2, 2048, 2048, 16, 16};
  const Target ampere{"sm_80", MaxSharedMemoryForArch("sm_80")};
  const std::string on_ampere = PassedOver(d128, ampere, "fa2_fwd");
  EXPECT_NE(on_ampere.find("hopper_fwd and hopper_paged: needs wgmma and setmaxnreg, which only sm_90a has; this "
                           "target is sm_80"),
            std::string::npos)
      << on_ampere;
  EXPECT_NE(on_ampere.find("toy_fwd: sm_90 only"), std::string::npos) << on_ampere;
  // The most preferred family chosen, or every family before the chosen one serving: nothing.
  EXPECT_EQ(PassedOver(d128, Target{"sm_90a", kDefaultMaxSmemBytes}, "hopper_fwd"), "");
  EXPECT_EQ(PassedOver(d128, Target{"sm_90", kDefaultMaxSmemBytes}, "toy_fwd"),
            "hopper_fwd and hopper_paged: needs wgmma and setmaxnreg, which only sm_90a has; this target is sm_90");
  Problem bwd = d128;
  bwd.head_dim = 256;
  bwd.operation = Operation::kBackward;
  EXPECT_EQ(PassedOver(bwd, Target{"sm_90a", kDefaultMaxSmemBytes}, "fa2_bwd"), "hopper_bwd: head dims 64, 96 and 128 only");
  EXPECT_EQ(NeedsCpAsync(ampere), "");
  EXPECT_EQ(NeedsWgmma(Target{"sm_90a", kDefaultMaxSmemBytes}), "");
  EXPECT_NE(NeedsWgmma(Target{"sm_12", kDefaultMaxSmemBytes}).find("sm_12"), std::string::npos);  // unknown target
}

TEST(Family, UrisRoundTripAndAreValidatedByTheirFamily) {
  Toy();
  const int values[] = {192, 128};
  const Variant v = Toy().MakeVariant(ProblemClass{DType::kF16, 64, true}, values);
  EXPECT_EQ(v.Uri(), "toy_fwd_f16_d64_bm192_bn128_causal");
  auto back = Variant::FromUri(v.Uri());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, v);
  EXPECT_NE(Variant::FromUri("toy_fwd_f16_d64_bm96_bn128_causal").status().message().find("block_m (bm) (96)"),
            std::string::npos);
  EXPECT_NE(Variant::FromUri("toy_fwd_f16_d64_br64_bn128_causal").status().message().find("block_m (bm) field 'br64'"),
            std::string::npos);
  auto source = GenerateSource(v);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  EXPECT_EQ(source->text.rfind("// toy prologue for toy_fwd_f16_d64_bm192_bn128_causal\n", 0), 0u);
}

TEST(Family, PackingChecksTheClassAndTheFamilysOwnLimitsOnAFreshPacket) {
  Toy();
  const int values[] = {128, 64};
  const Variant v = Toy().MakeVariant(ProblemClass{DType::kBF16, 64, false}, values);
  ForwardArgs a = ForwardArgs::Contiguous(Problem{DType::kBF16, 64, false, 1, 300, 300, 2, 2});
  a.q = a.k = a.v = reinterpret_cast<const void*>(uintptr_t{0x1000});
  a.o = reinterpret_cast<void*>(uintptr_t{0x2000});
  LaunchPacket p;
  ASSERT_TRUE(PackForward(v, a, &p).ok());
  EXPECT_EQ(p.grid[0], 3u);
  EXPECT_EQ(p.block[0], 160u);
  // A packet reused from an earlier call carries none of its memset or further kernels.
  LaunchPacket reused;
  unsigned counter = 7;
  reused.zero = &counter;
  reused.zero_bytes = sizeof counter;
  reused.next_steps = 1;
  ASSERT_TRUE(PackForward(v, a, &reused).ok());
  EXPECT_EQ(reused.zero, nullptr);
  EXPECT_EQ(reused.zero_bytes, 0u);
  EXPECT_EQ(reused.next_steps, 0);
  a.q_strides.seq = 72;  // the toy family refuses; the reason comes back for a fallback
  Status s = PackForward(v, a, &p);
  EXPECT_EQ(s.code(), Code::kUnsupported);
  EXPECT_EQ(s.variant_uri(), v.Uri());
}

// The tuner measures both families' candidates and keeps the fastest, whatever its family; the
// database stores it under its URI like any other.
TEST(Family, TunerPicksTheFastestVariantAcrossFamilies) {
  Toy();
  const Problem p{DType::kBF16, 128, false, 4, 1024, 1024, 16, 16};
  SpaceOptions hopper;
  hopper.arch = "sm_90";
  auto space = EnumerateSpace(ClassOf(p), hopper);
  ASSERT_TRUE(space.ok());
  std::vector<RecordedRow> rows;
  for (const Variant& v : *space) {
    // fa2_fwd variants 200-300 us; the toy's 128x128 is fastest at 150 us.
    const bool star = v.family == "toy_fwd" && v.Param("bm") == 128 && v.Param("bn") == 128;
    const double us = v.family == "toy_fwd" ? (star ? 150.0 : 180.0) : 200.0 + double(rows.size());
    rows.push_back({p, v, "ok", us, 0.5, "search", ""});
  }
  ReplayMeasurer::Options o;
  auto replay_space = ReplayMeasurer::FromText(ReplayCsv(rows), "rows", o);
  auto measurer = ReplayMeasurer::FromText(ReplayCsv(rows), "rows", o);
  ASSERT_TRUE(replay_space.ok() && measurer.ok());
  std::vector<std::unique_ptr<Measurer>> ms;
  ms.push_back(std::move(*measurer));
  auto summary = Tune(ReplayTuneOptions(TempDir("family_tune") + "/t.db", {p}, replay_space->get()), std::move(ms));
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  ASSERT_EQ(summary->problems.size(), 1u);
  EXPECT_EQ(summary->problems[0].winner_uri, "toy_fwd_bf16_d128_bm128_bn128_full");
  EXPECT_EQ(summary->problems[0].space, int64_t(space->size()));
}

}  // namespace
}  // namespace flashtune
