// The Measurer's default behaviours and a device's search target; see include/flashtune/measurer.h.
#include "flashtune/measurer.h"

#include <utility>

#include "flashtune/arch.h"

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

SpaceOptions SpaceOptionsOn(const DeviceRecord& device, SpaceOptions base) {
  if (device.name.empty()) return base;
  base.arch = ArchFor(device.cc_major, device.cc_minor);
  const int64_t limit = MaxSharedMemoryForArch(base.arch);
  base.max_smem_bytes = limit > 0 ? limit : kDefaultMaxSmemBytes;
  return base;
}

Result<int> Measurer::CompiledRegisters(const Variant& variant) {
  return Status(Code::kUnsupported, "this measurer cannot tell " + variant.Uri() + "'s registers before measuring");
}

}  // namespace flashtune
