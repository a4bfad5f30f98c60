// Variant -> Source: the generated prologue plus the embedded template.
#include "flashtune/source.h"

#include <string>

#include "flashtune/hash.h"
#include "flashtune/space.h"
#include "generator/family.h"
#include "generator/embedded_templates.h"

namespace flashtune {

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
  const auto& templates = detail::EmbeddedTemplates();
  auto it = templates.find(template_name);
  if (it == templates.end()) {
    return Status(Code::kInternal, "template " + template_name +
                                       " is not embedded in this build (templates/ was empty)");
  }
  Source src;
  src.variant = variant;
  src.uri = variant.Uri();
  src.kernel_name = src.uri;
  src.text = (*family)->Prologue(variant);
  src.text.append(it->second);
  src.sha256 = Sha256Hex(src.text);
  return src;
}

std::string TemplateHash() {
  // Each name ends with its NUL, a separator no template name contains. This is the digest the
  // databases written so far store (ToolchainInfo::template_hash): changing the scheme would
  // make every tuned winner stale.
  std::string all;
  for (const auto& [name, text] : detail::EmbeddedTemplates()) {
    all.append(name.data(), name.size() + 1);
    all.append(text);
  }
  return Sha256Hex(all);
}

}  // namespace flashtune
