// Stored-cubin verification; see include/flashtune/cubin_verify.h.
#include "flashtune/cubin_verify.h"

#include "flashtune/source.h"
#include "flashtune/space.h"

namespace flashtune {

CubinVerifier::CubinVerifier() : compiler_(Compiler::Options{"-", 1}) {
  // Every class, every variant the template accepts: the runtime may load any of them.
  SpaceOptions all;
  all.max_smem_bytes = INT64_MAX;
  for (DType dtype : {DType::kBF16, DType::kF16})
    for (int head_dim : kSupportedHeadDims)
      for (bool causal : {false, true}) {
        auto space = EnumerateSpace(ProblemClass{dtype, head_dim, causal}, all);
        if (!space.ok()) continue;
        for (const Variant& v : *space) {
          auto source = GenerateSource(v);
          if (source.ok()) by_source_hash_.emplace(source->sha256, v);
        }
      }
}

Result<CubinCheck> CubinVerifier::Verify(const CubinRecord& cubin) const {
  CubinCheck check;
  const auto found = by_source_hash_.find(cubin.source_hash);
  check.what = (found == by_source_hash_.end() ? "source " + cubin.source_hash.substr(0, 12) : found->second.Uri()) +
               " " + cubin.arch;
  if (found == by_source_hash_.end()) {
    check.why = "no variant of this build has source " + cubin.source_hash.substr(0, 12) + " (another template)";
    return check;
  }
  if (cubin.nvrtc_version != Compiler::NvrtcVersion()) {
    check.why = "built by NVRTC " + cubin.nvrtc_version + ", this build has " + Compiler::NvrtcVersion();
    return check;
  }
  if (!cubin.options.empty()) {
    check.why = "built with NVRTC options '" + cubin.options + "' that flashtune never uses";
    return check;
  }
  if (!Compiler::ValidateArch(cubin.arch).ok()) {
    check.why = "arch '" + cubin.arch + "' is not one this NVRTC targets";
    return check;
  }
  auto source = GenerateSource(found->second);
  if (!source.ok()) return source.status();
  // The same request LoadOrCompileCubin makes, so the same bytes.
  auto compiled = compiler_.Compile(GeneratedSourceRequest(source->uri, source->text, cubin.arch));
  if (!compiled.ok()) return compiled.status();
  if (compiled->image == cubin.image) {
    check.verdict = CubinVerdict::kVerified;
  } else {
    check.verdict = CubinVerdict::kMismatch;
    check.why = "its " + std::to_string(cubin.image.size()) + " bytes are not the " +
                std::to_string(compiled->image.size()) + " bytes its source compiles to";
  }
  return check;
}

}  // namespace flashtune
