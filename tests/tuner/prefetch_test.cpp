// What the GPU measurer compiles ahead for a problem (tuner/prefetch.h): the spaces of the
// families the tuner searches for that problem, in their order of preference, and nothing else.
#include "tuner/prefetch.h"

#include "generator/family.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace flashtune::detail {
namespace {

constexpr int64_t kH200Smem = 232448;

Problem Prefill(int head_dim) { return Problem{DType::kBF16, head_dim, false, 4, 4096, 4096, 16, 16}; }

Problem Decode(int head_dim) { return Problem{DType::kBF16, head_dim, false, 8, 1, 8192, 32, 8}; }

std::set<std::string> Uris(const std::vector<Variant>& variants) {
  std::set<std::string> uris;
  for (const Variant& v : variants) uris.insert(v.Uri());
  return uris;
}

// Everything the measurer queues for `problem`: each prefetch family's space.
std::vector<Variant> Queued(const Problem& problem, const std::string& arch) {
  std::vector<Variant> all;
  for (const std::string& family : PrefetchFamilies(problem, arch)) {
    std::vector<Variant> space = FamilySpace(ClassOf(problem), family, arch, kH200Smem, problem.layout);
    all.insert(all.end(), space.begin(), space.end());
  }
  return all;
}

TEST(PrefetchFamilies, APrefillProblemLeavesOutTheDecodeFamily) {
  const std::vector<std::string> families = PrefetchFamilies(Prefill(64));
  EXPECT_EQ(std::count(families.begin(), families.end(), "decode_fwd"), 0);
  EXPECT_EQ(std::count(families.begin(), families.end(), "fa2_fwd"), 1);
  EXPECT_EQ(std::count(families.begin(), families.end(), "hopper_fwd"), 1);
  EXPECT_EQ(std::count(families.begin(), families.end(), "fa2_bwd"), 0);
}

TEST(PrefetchFamilies, ADecodeProblemPutsTheDecodeFamilyFirst) {
  const std::vector<std::string> families = PrefetchFamilies(Decode(128));
  ASSERT_FALSE(families.empty());
  EXPECT_EQ(families.front(), "decode_fwd");
}

// Where the tuner searches decode_fwd alone (Family::SearchedAloneFor), nothing else is
// compiled ahead: Decode(128) is a default decode bucket (GQA 4, one row, 8k keys).
TEST(PrefetchFamilies, ADecodeBucketSearchedAloneQueuesOnlyTheDecodeFamily) {
  EXPECT_EQ(PrefetchFamilies(Decode(128)), std::vector<std::string>{"decode_fwd"});
  EXPECT_EQ(PrefetchFamilies(Decode(128), "sm_80"), std::vector<std::string>{"decode_fwd"});
  const std::vector<std::string> d64 = PrefetchFamilies(Decode(64));  // not measured at d64
  EXPECT_EQ(std::count(d64.begin(), d64.end(), "fa2_fwd"), 1);
  EXPECT_EQ(std::count(d64.begin(), d64.end(), "hopper_fwd"), 1);
  EXPECT_EQ(PrefetchFamilies(Prefill(64), "sm_80"), std::vector<std::string>{"fa2_fwd"});
}

TEST(PrefetchFamilies, ABackwardProblemGetsOnlyTheBackwardFamilies) {
  Problem p = Prefill(128);
  p.operation = Operation::kBackward;
  EXPECT_EQ(PrefetchFamilies(p), (std::vector<std::string>{"hopper_bwd", "fa2_bwd"}));  // most preferred first
}

TEST(FamilySpace, IsTheClassSpaceOfThatFamilyForTheLayoutInItsOrder) {
  const ProblemClass cls = ClassOf(Prefill(64));
  SpaceOptions options;
  options.max_smem_bytes = kH200Smem;
  auto whole = EnumerateSpace(cls, options);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  for (Layout layout : {Layout::kDense, Layout::kPaged}) {
    for (const std::string family : {"decode_fwd", "fa2_fwd", "hopper_fwd"}) {
      std::vector<Variant> expected;
      for (const Variant& v : *whole)
        if (v.family == family && FindFamily(family)->ReadsLayout(v, layout)) expected.push_back(v);
      ASSERT_FALSE(expected.empty()) << family;
      const std::vector<Variant> got = FamilySpace(cls, family, "sm_90a", kH200Smem, layout);
      ASSERT_EQ(got.size(), expected.size()) << family;
      for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].Uri(), expected[i].Uri());
    }
  }
}

// decode_fwd compiles a kernel per K/V layout: a dense decode tune compiles none of the paged
// half ahead, and a paged one none of the dense half.
TEST(FamilySpace, DecodeQueuesOnlyTheKernelsOfTheLayout) {
  const ProblemClass cls = ClassOf(Decode(128));
  const std::vector<Variant> dense = FamilySpace(cls, "decode_fwd", "sm_90a", kH200Smem, Layout::kDense);
  const std::vector<Variant> paged = FamilySpace(cls, "decode_fwd", "sm_90a", kH200Smem, Layout::kPaged);
  ASSERT_FALSE(dense.empty());
  ASSERT_EQ(dense.size(), paged.size());
  for (const Variant& v : dense) EXPECT_EQ(v.Param("kv"), 0) << v.Uri();
  for (const Variant& v : paged) EXPECT_EQ(v.Param("kv"), 1) << v.Uri();
  EXPECT_EQ(FirstLayoutRead(dense.front()), Layout::kDense);
  EXPECT_EQ(FirstLayoutRead(paged.front()), Layout::kPaged);
  EXPECT_EQ(FamilySpace(cls, "decode_fwd", "sm_90a", kH200Smem, Layout::kVarlen).size(), dense.size());
}

TEST(FamilySpace, AFamilyWithNoVariantOnTheArchOrAnUnknownOneIsEmpty) {
  EXPECT_TRUE(FamilySpace(ClassOf(Prefill(128)), "hopper_fwd", "sm_80", 166912, Layout::kDense).empty());
  EXPECT_TRUE(FamilySpace(ClassOf(Prefill(128)), "no_such_family", "sm_90a", kH200Smem, Layout::kDense).empty());
}

// The contract the tuner relies on: what is compiled ahead is exactly what it searches
// (EnumerateSpaceFor, the CLI's enumerate function), for prefill, decode and backward problems.
TEST(Prefetch, QueuesExactlyTheSpaceTheTunerSearches) {
  Problem backward = Prefill(128);
  backward.operation = Operation::kBackward;
  Problem paged = Decode(128);
  paged.layout = Layout::kPaged;
  for (const Problem& p : {Prefill(64), Prefill(96), Prefill(256), Decode(128), paged, backward}) {
    SpaceOptions options;
    options.max_smem_bytes = kH200Smem;
    auto searched = EnumerateSpaceFor(p, options);
    ASSERT_TRUE(searched.ok()) << searched.status().ToString();
    const std::vector<Variant> queued = Queued(p, "sm_90a");
    EXPECT_EQ(queued.size(), Uris(queued).size()) << p.ToString() << ": a variant queued twice";
    EXPECT_EQ(Uris(queued), Uris(*searched)) << p.ToString();
  }
}

// What the change saves: a d64 prefill class's space is half decode variants, none of which a
// prefill problem runs.
TEST(Prefetch, APrefillClassQueuesFarLessThanItsWholeSpace) {
  SpaceOptions options;
  options.max_smem_bytes = kH200Smem;
  auto whole = EnumerateSpace(ClassOf(Prefill(64)), options);
  ASSERT_TRUE(whole.ok());
  const size_t queued = Queued(Prefill(64), "sm_90a").size();
  EXPECT_GT(queued, 0u);
  EXPECT_LT(queued * 3, whole->size() * 2) << queued << " of " << whole->size();
}

}  // namespace
}  // namespace flashtune::detail
