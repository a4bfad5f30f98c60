#include "tuner/device_space.h"

#include "flashtune/arch.h"

namespace flashtune {

SpaceOptions SpaceOptionsOn(const DeviceRecord& device, SpaceOptions base) {
  if (device.name.empty()) return base;
  base.arch = ArchFor(device.cc_major, device.cc_minor);
  const int64_t limit = MaxSharedMemoryForArch(base.arch);
  base.max_smem_bytes = limit > 0 ? limit : kDefaultMaxSmemBytes;
  return base;
}

}  // namespace flashtune
