// Variant -> Source: the generated prologue plus the embedded template.
#include "flashtune/source.h"

#include <set>
#include <string>

#include "flashtune/hash.h"
#include "flashtune/space.h"
#include "generator/family.h"
#include "generator/embedded_templates.h"

namespace flashtune {
namespace {

// `text` with every line `#include "x.cuh"` that names an embedded template replaced by that
// template's text (itself expanded; each at most once per source, like an include guard), and
// #line directives around it so NVRTC's messages name the file and line they come from. NVRTC gets
// one self-contained program; the host compiles the same headers with its own #include.
Status InlineTemplateIncludes(std::string_view text, std::string_view name, std::set<std::string>* seen,
                              std::string* out) {
  const auto& templates = detail::EmbeddedTemplates();
  size_t line_no = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    ++line_no;
    pos = end + 1;
    constexpr std::string_view kInclude = "#include \"";
    if (line.substr(0, kInclude.size()) == kInclude && line.size() > kInclude.size() + 1 && line.back() == '"') {
      const std::string included(line.substr(kInclude.size(), line.size() - kInclude.size() - 1));
      auto it = templates.find(included);
      if (it == templates.end())
        return Status(Code::kInternal, std::string(name) + ":" + std::to_string(line_no) + " includes \"" + included +
                                           "\", which is not an embedded template (templates/*.cuh)");
      if (seen->insert(included).second) {
        out->append("#line 1 \"" + included + "\"\n");
        FT_RETURN_IF_ERROR(InlineTemplateIncludes(it->second, included, seen, out));
        out->append("#line " + std::to_string(line_no + 1) + " \"" + std::string(name) + "\"\n");
      }
      continue;
    }
    out->append(line);
    out->push_back('\n');
  }
  return Status::Ok();
}

}  // namespace

Result<std::string> ExpandedTemplate(std::string_view name) {
  const auto& templates = detail::EmbeddedTemplates();
  auto it = templates.find(std::string(name));
  if (it == templates.end())
    return Status(Code::kNotFound, "template " + std::string(name) + " is not embedded in this build");
  std::string out;
  std::set<std::string> seen{std::string(name)};
  FT_RETURN_IF_ERROR(InlineTemplateIncludes(it->second, name, &seen, &out));
  return out;
}

std::string GeneratePrologue(const Variant& v) {
  const Family* family = FindFamily(v.family);
  return family ? family->Prologue(v) : std::string();
}

Result<Source> GenerateSource(const Variant& variant) {
  auto family = FamilyOf(variant);
  if (!family.ok()) return Status(family.status()).WithVariant(variant.Uri());
  // Only the largest opt-in limit here (the template asserts it too); the per-target limit is
  // the caller's (EnumerateSpace / the tuner).
  Status valid = (*family)->Check(variant, kLargestMaxSmemBytes);
  if (!valid.ok()) return valid.WithVariant(variant.Uri());
  const std::string template_name((*family)->template_name());
  auto text = ExpandedTemplate(template_name);
  if (!text.ok()) {
    return Status(Code::kInternal, text.status().message() + " (templates/ was empty?)").WithVariant(variant.Uri());
  }
  Source src;
  src.variant = variant;
  src.uri = variant.Uri();
  src.kernel_name = src.uri;
  src.text = (*family)->Prologue(variant) + *text;
  src.sha256 = Sha256Hex(src.text);
  return src;
}

int GeneratorRevision() {
  // Session 28 (1): the thresholded rescale also in d128's three-warpgroup hopper_fwd tiles.
  // Session 31 (2): hopper_fwd's split tail (kSplitTail in the prologue, its merge buffer in kSmemBytes).
  // Session 33 (3): fa2_fwd's prologue says kPagedKv (false; fa2_paged's true).
  // Session 34 (4): hopper_fwd's prologue says kPagedKv (false; hopper_paged's true).
  // Session 41 (5): hopper_fwd's prologue says kHeadDimData (the tensors' head dim; kHeadDim the tiles').
  // Session 47 (6): the padded head dims' register accounting at O's width (AccumulatorsFit;
  // d96's 192x96 over three warpgroups searched).
  // Session 49 (7): hopper_fwd's prologue says kClaimTiles (true only for p3, which no space
  // searches; the searched variants compile to the same SASS).
  // Session 54 (8): hopper_bwd's prologue says kHeadDimData (the tensors' head dim; d96 runs on
  // d128's tiles).
  return 8;
}

std::string TemplateHash() {
  // Each name ends with its NUL, a separator no template name contains. Revision 0 hashed the
  // templates alone (the databases written before it store that digest); a later revision
  // follows them as one more entry, so a prologue change makes every winner stale as a template
  // change does.
  std::string all;
  for (const auto& [name, text] : detail::EmbeddedTemplates()) {
    all.append(name.data(), name.size() + 1);
    all.append(text);
  }
  all.append("generator revision", sizeof("generator revision"));
  all.append(std::to_string(GeneratorRevision()));
  return Sha256Hex(all);
}

}  // namespace flashtune
