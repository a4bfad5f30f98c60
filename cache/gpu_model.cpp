// SameGpuModel and the winners it admits (include/flashtune/database.h); a GPU's record
// (cache/gpu_model.h).
#include "cache/gpu_model.h"

#include <map>

namespace flashtune {

DeviceRecord DeviceRecordOf(const DeviceInfo& info, const std::string& driver_version) {
  return DeviceRecord{info.name, info.uuid, info.cc_major, info.cc_minor, info.sm_count, driver_version};
}

bool SameGpuModel(const DeviceRecord& a, const DeviceRecord& b) {
  return a.name == b.name && a.cc_major == b.cc_major && a.cc_minor == b.cc_minor && a.sm_count == b.sm_count &&
         a.driver_version == b.driver_version;
}

Result<std::vector<WinnerRow>> Database::ListWinnersFor(const DeviceRecord& device, const ToolchainInfo& toolchain) {
  auto devices = ListDevices();
  if (!devices.ok()) return devices.status();
  auto toolchains = ListToolchains();
  if (!toolchains.ok()) return toolchains.status();
  auto winners = ListWinners();
  if (!winners.ok()) return winners.status();
  std::map<int64_t, bool> device_ok, toolchain_ok;
  for (const DeviceRow& d : *devices) device_ok[d.id] = SameGpuModel(d.device, device);
  for (const ToolchainRow& t : *toolchains) toolchain_ok[t.id] = t.toolchain == toolchain;
  std::vector<WinnerRow> out;
  for (WinnerRow& w : *winners)
    if (device_ok[w.device_id] && toolchain_ok[w.toolchain_id]) out.push_back(std::move(w));
  return out;
}

}  // namespace flashtune
