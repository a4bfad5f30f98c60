// The variant space: static rules, enumeration and the default heuristic.
#include "flashtune/space.h"

#include <algorithm>
#include <span>
#include <string>

#include "flashtune/arch.h"
#include "generator/family.h"

namespace flashtune {

namespace {

std::string List(std::span<const int> values) {
  std::string s;
  for (int v : values) s += (s.empty() ? "" : ", ") + std::to_string(v);
  return s;
}

bool Contains(std::span<const int> values, int v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

Status Invalid(std::string message) { return Status(Code::kInvalidArgument, std::move(message)); }

}  // namespace

std::string ProblemClass::ToString() const {
  return std::string(DTypeName(dtype)) + " d" + std::to_string(head_dim) + (causal ? " causal" : " full") +
         (operation == Operation::kBackward ? " bwd" : "");
}

ProblemClass ClassOf(const Problem& p) { return {p.dtype, p.head_dim, p.causal, p.operation}; }
ProblemClass ClassOf(const Variant& v) {
  const Family* family = FindFamily(v.family);
  return {v.dtype, v.head_dim, v.causal, family ? family->operation() : Operation::kForward};
}

Status CheckVariant(const Variant& v, int64_t max_smem_bytes) {
  auto family = FamilyOf(v);
  if (!family.ok()) return family.status();
  return (*family)->Check(v, max_smem_bytes);
}

Result<std::vector<Variant>> EnumerateSpace(const ProblemClass& pc, const SpaceOptions& opt) {
  if (!Contains(kSupportedHeadDims, pc.head_dim)) {
    return Invalid("head_dim (" + std::to_string(pc.head_dim) + ") must be one of " +
                   List(kSupportedHeadDims));
  }
  for (const std::string& name : opt.families) {
    if (FindFamily(name) == nullptr) {
      return Invalid("family '" + name + "' is not known; known families: " + FamilyNames());
    }
  }
  for (const auto& [param, values] : opt.values) {
    bool known = false;
    for (const Family* f : Families()) {
      if (f->operation() != pc.operation) continue;  // other passes' parameters do not apply
      for (const ParamAxis& axis : f->axes()) {
        if (axis.name != param) continue;
        known = true;
        for (int v : values) {
          if (!Contains(axis.allowed, v)) {
            return Invalid("SpaceOptions." + param + " holds " + std::to_string(v) + "; " +
                           std::string(f->name()) + " allows: " + List(axis.allowed));
          }
        }
      }
    }
    if (!known) return Invalid("SpaceOptions: no family has a parameter '" + param + "'");
  }
  const Target target{opt.arch, opt.max_smem_bytes};
  std::vector<Variant> out;
  for (const Family* f : Families()) {
    if (!opt.families.empty() &&
        std::find(opt.families.begin(), opt.families.end(), f->name()) == opt.families.end()) {
      continue;
    }
    std::vector<Variant> space = f->Space(pc, target, opt.values);
    out.insert(out.end(), space.begin(), space.end());
  }
  if (out.empty()) {
    return Invalid("no variant of " + pc.ToString() + " fits " + opt.arch + " (max_smem_bytes " +
                   std::to_string(opt.max_smem_bytes) + ") with the given SpaceOptions");
  }
  return out;
}

Result<std::vector<Variant>> EnumerateSpaceFor(const Problem& problem, const SpaceOptions& opt) {
  auto all = EnumerateSpace(ClassOf(problem), opt);
  if (!all.ok()) return all;
  // Families the caller named are searched as named; otherwise the tuner's choice.
  const std::vector<const Family*> searched = FamiliesSearchedFor(problem, Target{opt.arch, opt.max_smem_bytes});
  std::vector<Variant> out;
  for (Variant& v : *all) {
    const Family* f = FindFamily(v.family);
    if (f == nullptr || f->PreferenceFor(problem) < 0 || !f->SearchedFor(problem) || !f->ReadsLayout(v, problem.layout))
      continue;
    if (opt.families.empty() && std::find(searched.begin(), searched.end(), f) == searched.end()) continue;
    out.push_back(std::move(v));
  }
  if (out.empty()) return Invalid("no kernel family serves " + problem.ToString() + " on " + opt.arch);
  return out;
}

Result<Variant> DefaultVariantFor(const Problem& problem, int64_t max_smem_bytes, std::string_view arch) {
  const Target target{std::string(arch), max_smem_bytes};
  const ProblemClass cls = ClassOf(problem);
  for (const Family* f : FamiliesFor(problem))
    if (f->Serves(cls, target)) return f->DefaultFor(problem, target);
  return Invalid("no kernel family serves " + problem.ToString() + " on " + std::string(arch));
}

Result<Variant> DefaultVariantForGpu(const Problem& problem, int cc_major, int cc_minor) {
  const GpuArch* arch = FindGpuArch(cc_major, cc_minor);
  if (arch == nullptr)
    return Invalid("no arch row for compute capability " + std::to_string(cc_major) + "." + std::to_string(cc_minor) +
                   ": its untuned plan is unknown");
  return DefaultVariantFor(problem, arch->max_smem_per_block_optin, arch->Name());
}

Variant DefaultVariant(const ProblemClass& pc, int64_t max_smem_bytes, std::string_view arch) {
  const Target target{std::string(arch), max_smem_bytes};
  const std::vector<const Family*> serving = FamiliesServing(pc, target);
  const Family* best = serving.empty() ? FindFamily("fa2_fwd") : serving.front();
  return best->Default(pc, target);
}

}  // namespace flashtune
