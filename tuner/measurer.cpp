// The Measurer's default behaviours; see include/flashtune/measurer.h.
#include "flashtune/measurer.h"

#include <utility>

namespace flashtune {

Result<std::vector<Measurement>> Measurer::Remeasure(const Problem& problem, const std::vector<Variant>& variants) {
  std::vector<Measurement> out;
  for (const Variant& v : variants) {
    auto m = Measure(problem, v);
    if (!m.ok()) return m.status();
    out.push_back(std::move(*m));
  }
  return out;
}

Result<int> Measurer::CompiledRegisters(const Variant& variant) {
  return Status(Code::kUnsupported, "this measurer cannot tell " + variant.Uri() + "'s registers before measuring");
}

}  // namespace flashtune
