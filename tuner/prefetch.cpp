// What the GPU measurer compiles ahead; see tuner/prefetch.h.
#include "tuner/prefetch.h"

#include "generator/family.h"

namespace flashtune::detail {

std::vector<std::string> PrefetchFamilies(const Problem& problem, const std::string& arch) {
  std::vector<std::string> names;
  for (const Family* f : FamiliesSearchedFor(problem, Target{arch})) names.emplace_back(f->name());
  return names;
}

std::vector<Variant> FamilySpace(const ProblemClass& cls, const std::string& family, const std::string& arch,
                                 int64_t max_smem_bytes, Layout layout) {
  SpaceOptions options;
  options.arch = arch;
  options.max_smem_bytes = max_smem_bytes;
  options.families = {family};
  auto space = EnumerateSpace(cls, options);
  // An error here means no variant of this family fits (or no such family): nothing to queue;
  // the candidate that asked for it is compiled, and fails, on its own.
  if (!space.ok()) return {};
  const Family* f = FindFamily(family);
  std::vector<Variant> out;
  for (Variant& v : *space)
    if (f->ReadsLayout(v, layout)) out.push_back(std::move(v));
  return out;
}

Layout FirstLayoutRead(const Variant& v) {
  const Family* f = FindFamily(v.family);
  for (Layout l : {Layout::kDense, Layout::kPaged, Layout::kVarlen})
    if (f != nullptr && f->ReadsLayout(v, l)) return l;
  return Layout::kDense;
}

}  // namespace flashtune::detail
