// SameGpuModel; see include/flashtune/database.h.
#include "flashtune/database.h"

namespace flashtune {

bool SameGpuModel(const DeviceRecord& a, const DeviceRecord& b) {
  return a.name == b.name && a.cc_major == b.cc_major && a.cc_minor == b.cc_minor && a.sm_count == b.sm_count &&
         a.driver_version == b.driver_version;
}

}  // namespace flashtune
