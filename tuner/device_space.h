// tuner/device_space.h — the target a GPU's search space is enumerated for: the arch of its
// compute capability and that arch's shared memory. One home for it, so that `flashtune tune`
// (each GPU of a mixed machine) and `flashtune bench` agree with what the GPU worker compiles
// for. Thread safety: a pure function.
#pragma once

#include "flashtune/database.h"  // DeviceRecord
#include "flashtune/space.h"

namespace flashtune {

// `base` with the arch of `device`'s compute capability and that arch's opt-in shared memory;
// `base` as given for an empty record (no GPU: a dry run, a compile-only run).
SpaceOptions SpaceOptionsOn(const DeviceRecord& device, SpaceOptions base = {});

}  // namespace flashtune
