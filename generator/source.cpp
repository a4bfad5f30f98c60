// Variant -> Source: the generated prologue plus the embedded template.
#include "flashtune/source.h"

#include <string>

#include "flashtune/hash.h"
#include "flashtune/space.h"
#include "generator/embedded_templates.h"

namespace flashtune {

std::string GeneratePrologue(const Variant& v) {
  const std::string uri = v.Uri();
  auto b = [](bool x) { return x ? "true" : "false"; };
  std::string s;
  s += "// flashtune generated prologue for " + uri + "\n";
  s += "#define FT_CONFIG_PROVIDED 1\n";
  s += "#define FT_KERNEL_NAME " + uri + "\n";
  s += "namespace ft_config {\n";
  s += std::string("constexpr bool kBf16 = ") + b(v.dtype == DType::kBF16) + ";  // false = fp16\n";
  s += "constexpr int kHeadDim = " + std::to_string(v.head_dim) + ";\n";
  s += "constexpr int kBlockM = " + std::to_string(v.block_m) + ";\n";
  s += "constexpr int kBlockN = " + std::to_string(v.block_n) + ";\n";
  s += "constexpr int kWarps = " + std::to_string(v.warps) + ";\n";
  s += "constexpr int kStages = " + std::to_string(v.stages) + ";\n";
  s += std::string("constexpr bool kCausal = ") + b(v.causal) + ";\n";
  s += "constexpr int kSmemBytes = " + std::to_string(SharedMemoryBytes(v)) + ";\n";
  s += "}  // namespace ft_config\n";
  s += "#line 1 \"" + std::string(kForwardTemplateName) + "\"\n";
  return s;
}

Result<Source> GenerateSource(const Variant& variant) {
  // Only the largest opt-in limit here (the template asserts it too); the per-target limit is
  // the caller's (EnumerateSpace / the tuner).
  Status valid = CheckVariant(variant, kLargestMaxSmemBytes);
  if (!valid.ok()) return valid.WithVariant(variant.Uri());
  const auto& templates = detail::EmbeddedTemplates();
  auto it = templates.find(std::string(kForwardTemplateName));
  if (it == templates.end()) {
    return Status(Code::kInternal, "template " + std::string(kForwardTemplateName) +
                                       " is not embedded in this build (templates/ was empty)");
  }
  Source src;
  src.variant = variant;
  src.uri = variant.Uri();
  src.kernel_name = src.uri;
  src.text = GeneratePrologue(variant);
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
