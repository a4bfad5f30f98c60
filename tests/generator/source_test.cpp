#include "generator/families/decode_fwd.h"
#include "generator/families/fa2_fwd.h"
#include "flashtune/source.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "flashtune/hash.h"
#include "flashtune/space.h"
#include "generator/embedded_templates.h"

namespace flashtune {
namespace {

const Variant kVariant = Fa2Variant(DType::kBF16, 128, true, 128, 64, 4, 2);

TEST(Source, PrologueCarriesEveryParameterThenLineDirective) {
  const std::string p = GeneratePrologue(kVariant);
  const std::string expected =
      "// flashtune generated prologue for fa2_fwd_bf16_d128_br128_bc64_w4_s2_causal\n"
      "#define FT_CONFIG_PROVIDED 1\n"
      "#define FT_KERNEL_NAME fa2_fwd_bf16_d128_br128_bc64_w4_s2_causal\n"
      "namespace ft_config {\n"
      "constexpr bool kBf16 = true;  // false = fp16\n"
      "constexpr int kHeadDim = 128;\n"
      "constexpr int kBlockM = 128;\n"
      "constexpr int kBlockN = 64;\n"
      "constexpr int kWarps = 4;\n"
      "constexpr int kStages = 2;\n"
      "constexpr bool kCausal = true;\n"
      "constexpr bool kPagedKv = false;  // K/V through the block table\n"
      "constexpr int kSmemBytes = 104448;\n"
      "}  // namespace ft_config\n"
      "#line 1 \"fa2_fwd.cuh\"\n";
  EXPECT_EQ(p, expected);
  Variant f16 = kVariant;
  f16.dtype = DType::kF16;
  f16.causal = false;
  const std::string q = GeneratePrologue(f16);
  EXPECT_NE(q.find("constexpr bool kBf16 = false;"), std::string::npos);
  EXPECT_NE(q.find("constexpr bool kCausal = false;"), std::string::npos);
}

// decode_fwd's kv parameter compiles the kernel for one K/V layout (the template's kPaged).
TEST(Source, DecodePrologueNamesTheKvLayout) {
  const Variant dense = DecodeVariant(DType::kBF16, 128, false, 64, 1, 4, 3, 2);
  const Variant paged = DecodeVariant(DType::kBF16, 128, false, 64, 1, 4, 3, 2, /*paged=*/true);
  EXPECT_EQ(dense.Uri(), "decode_fwd_bf16_d128_bn64_rm1_w4_s3_cs2_kv0_full");
  EXPECT_EQ(paged.Uri(), "decode_fwd_bf16_d128_bn64_rm1_w4_s3_cs2_kv1_full");
  EXPECT_NE(GeneratePrologue(dense).find("constexpr bool kPaged = false;"), std::string::npos) << GeneratePrologue(dense);
  EXPECT_NE(GeneratePrologue(paged).find("constexpr bool kPaged = true;"), std::string::npos) << GeneratePrologue(paged);
  auto a = GenerateSource(dense);
  auto b = GenerateSource(paged);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->sha256, b->sha256);
}

// fa2_paged is fa2_fwd's template compiled to read K/V through the page table (kPagedKv).
TEST(Source, Fa2PagedIsFa2FwdsTemplateReadingPages) {
  const Variant dense = Fa2Variant(DType::kBF16, 128, true, 128, 64, 4, 2);
  const Variant paged = Fa2Variant(DType::kBF16, 128, true, 128, 64, 4, 2, /*paged=*/true);
  EXPECT_EQ(paged.Uri(), "fa2_paged_bf16_d128_br128_bc64_w4_s2_causal");
  EXPECT_NE(GeneratePrologue(dense).find("constexpr bool kPagedKv = false;"), std::string::npos);
  EXPECT_NE(GeneratePrologue(paged).find("constexpr bool kPagedKv = true;"), std::string::npos);
  EXPECT_NE(GeneratePrologue(paged).find("#line 1 \"fa2_fwd.cuh\""), std::string::npos);
  auto a = GenerateSource(dense);
  auto b = GenerateSource(paged);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->sha256, b->sha256);
  auto parsed = Variant::FromUri(paged.Uri());
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(*parsed, paged);
}

TEST(Source, IsProloguePlusTheEmbeddedTemplate) {
  auto src = GenerateSource(kVariant);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  EXPECT_EQ(src->uri, kVariant.Uri());
  EXPECT_EQ(src->kernel_name, kVariant.Uri());
  EXPECT_EQ(src->variant, kVariant);
  const auto& templates = detail::EmbeddedTemplates();
  ASSERT_EQ(templates.count("fa2_fwd.cuh"), 1u);
  EXPECT_EQ(src->text, GeneratePrologue(kVariant) + *ExpandedTemplate("fa2_fwd.cuh"));
  EXPECT_EQ(src->sha256, Sha256Hex(src->text));
  EXPECT_EQ(src->sha256.size(), 64u);
  // The template's entry point is named by the prologue's macro.
  EXPECT_NE(src->text.find("FT_KERNEL_NAME("), std::string::npos);
}

TEST(Source, SharedHeadersAreInlinedOnceAndNothingIsLeftToInclude) {
  for (const char* name : {"fa2_fwd.cuh", "hopper_fwd.cuh"}) {
    auto text = ExpandedTemplate(name);
    ASSERT_TRUE(text.ok()) << text.status().ToString();
    EXPECT_EQ(text->find("\n#include \""), std::string::npos) << name;
    // The parameter structs the host packs come from the one shared declaration, once.
    const size_t first = text->find("struct Fa2Params {");
    ASSERT_NE(first, std::string::npos) << name;
    EXPECT_EQ(text->find("struct Fa2Params {", first + 1), std::string::npos) << name;
  }
  EXPECT_EQ(ExpandedTemplate("nope.cuh").status().code(), Code::kNotFound);
}

TEST(Source, HashIsStableAndDistinctPerVariant) {
  auto a = GenerateSource(kVariant);
  auto b = GenerateSource(kVariant);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->text, b->text);
  EXPECT_EQ(a->sha256, b->sha256);
  std::set<std::string> hashes;
  size_t n = 0;
  for (DType dt : {DType::kF16, DType::kBF16}) {
    for (bool causal : {false, true}) {
      auto space = EnumerateSpace({dt, 64, causal});
      ASSERT_TRUE(space.ok());
      for (const Variant& v : *space) {
        auto s = GenerateSource(v);
        ASSERT_TRUE(s.ok()) << v.Uri();
        hashes.insert(s->sha256);
        ++n;
      }
    }
  }
  EXPECT_EQ(hashes.size(), n);
}

TEST(Source, RejectsInvalidVariantWithItsUri) {
  Variant v = kVariant;
  v.SetParam("br", 64);
  v.SetParam("w", 8);
  auto s = GenerateSource(v);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(s.status().variant_uri(), v.Uri());
  EXPECT_NE(s.status().message().find("block_m (64) must be a multiple of warps * 16"),
            std::string::npos);
}

TEST(Source, ChecksSharedMemoryAgainstTheLargestTarget) {
  // 126 KB: too much for sm_86, fine for sm_90. The per-target check is the caller's.
  Variant v = Fa2Variant(DType::kF16, 64, false, 128, 128, 4, 3);
  ASSERT_FALSE(CheckVariant(v, MaxSharedMemoryForArch("sm_86")).ok());
  EXPECT_TRUE(GenerateSource(v).ok());
  // 462 KB fits no target (and the template would static_assert).
  v = Fa2Variant(DType::kF16, 256, false, 128, 128, 4, 3);
  auto s = GenerateSource(v);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("exceeds max_smem_bytes (232448)"), std::string::npos)
      << s.status().message();
}

TEST(Source, TemplateHashCoversTheEmbeddedTemplates) {
  const std::string h = TemplateHash();
  EXPECT_EQ(h.size(), 64u);
  EXPECT_EQ(h, TemplateHash());
  // Not simply the hash of the forward template's text or of nothing.
  EXPECT_NE(h, Sha256Hex(detail::EmbeddedTemplates().at("fa2_fwd.cuh")));
  EXPECT_NE(h, Sha256Hex(""));
}

TEST(Source, TemplateHashIsTheDigestDatabasesStore) {
  // Databases store sha256 over each template's name, a NUL, then its text, in name order,
  // then (from revision 1) "generator revision", a NUL and the revision; another scheme would
  // make every stored winner stale.
  std::string all;
  for (const auto& [name, text] : detail::EmbeddedTemplates()) {
    all += name;
    all += '\0';
    all += text;
  }
  const std::string templates_only = Sha256Hex(all);
  all += std::string("generator revision") + '\0' + std::to_string(GeneratorRevision());
  EXPECT_EQ(TemplateHash(), Sha256Hex(all));
  EXPECT_NE(TemplateHash(), templates_only);
}

// sha256 over the URI and prologue of every variant the spaces hold: each family's searched
// values for every class, on sm_80 and sm_90a (the families and shared-memory limits that differ).
std::string SearchedProloguesDigest(int* count) {
  std::string all;
  *count = 0;
  for (const char* arch : {"sm_80", "sm_90a"})
    for (DType dtype : {DType::kBF16, DType::kF16})
      for (int d : kSupportedHeadDims)
        for (bool causal : {false, true})
          for (Operation op : {Operation::kForward, Operation::kBackward}) {
            SpaceOptions o;
            o.arch = arch;
            o.max_smem_bytes = MaxSharedMemoryForArch(arch);
            auto space = EnumerateSpace(ProblemClass{dtype, d, causal, op}, o);
            if (!space.ok()) continue;  // a class no family serves there
            for (const Variant& v : *space) {
              all += v.Uri() + '\0' + GeneratePrologue(v) + '\0';
              ++*count;
            }
          }
  return Sha256Hex(all);
}

TEST(Source, GeneratorRevisionPinsTheSearchedPrologues) {
  // A prologue decides what a variant compiles to as much as its template does, but the hash
  // covers the templates and the revision, not the prologues: without a new revision a database
  // would serve a winner measured on other code. So a change to any searched variant's prologue
  // must come with a new GeneratorRevision()
  // (generator/source.cpp) and this digest. Variants added to a space change the digest too;
  // then the revision may stay, as no measured variant's code changed.
  int count = 0;
  const std::string digest = SearchedProloguesDigest(&count);
  EXPECT_GT(count, 1000);
  EXPECT_EQ(GeneratorRevision(), 8);
  EXPECT_EQ(digest, "d742842d20cd4743de0a03da451d99187faaacbde5b7b70741d1461f7e2553ee")
      << count << " prologues; if a variant's prologue changed, bump GeneratorRevision() (generator/source.cpp) and pin "
      << "the new digest here";
}

}  // namespace
}  // namespace flashtune
