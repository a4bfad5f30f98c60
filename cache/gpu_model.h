// cache/gpu_model.h — a GPU as the tuning database keys it (DeviceRecord), from what the driver
// says of it. The one construction the tuner's worker (GpuMeasurer::Device), the runtime's
// planner and the tune CLI's dry run share: a winner is found again only when their records of
// one GPU are equal. Thread safety: a pure function.
#pragma once

#include <string>

#include "flashtune/database.h"
#include "flashtune/driver.h"

namespace flashtune {

// `info`'s name, UUID, compute capability and SM count, with the driver's VersionString().
DeviceRecord DeviceRecordOf(const DeviceInfo& info, const std::string& driver_version);

}  // namespace flashtune
