// The CUDA occupancy rules over the arch table's per-SM limits; see include/flashtune/occupancy.h.
#include "flashtune/occupancy.h"

#include <algorithm>

#include "flashtune/arch.h"

namespace flashtune {

SmLimits SmLimitsFor(int cc_major, int cc_minor) {
  // The arch table's row (arch.h); an unknown arch gets the smallest of every known limit.
  auto limits = [](const GpuArch& a) {
    return SmLimits{a.registers_per_sm, a.smem_per_sm, SmLimits{}.smem_reserved_per_cta, a.threads_per_sm, a.ctas_per_sm};
  };
  if (const GpuArch* a = FindGpuArch(cc_major, cc_minor)) return limits(*a);
  SmLimits l = limits(KnownGpuArchs().front());
  for (const GpuArch& a : KnownGpuArchs()) {
    const SmLimits k = limits(a);
    l = {std::min(l.registers, k.registers), std::min(l.smem_bytes, k.smem_bytes), l.smem_reserved_per_cta,
         std::min(l.threads, k.threads), std::min(l.ctas, k.ctas)};
  }
  return l;
}

int ResidentCtasPerSm(const SmLimits& limits, int registers, int threads, int64_t smem_bytes) {
  if (registers <= 0 || threads <= 0) return 0;
  const int warps = (threads + 31) / 32;
  const int regs_per_warp = (registers * 32 + 255) / 256 * 256;
  int ctas = std::min(limits.ctas, limits.threads / (warps * 32));
  ctas = std::min(ctas, limits.registers / regs_per_warp / warps);
  ctas = int(std::min<int64_t>(ctas, limits.smem_bytes / (smem_bytes + limits.smem_reserved_per_cta)));
  return std::max(ctas, 0);
}

}  // namespace flashtune
