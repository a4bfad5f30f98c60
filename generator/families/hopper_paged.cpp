// The hopper_paged family's registry entry: hopper_fwd's template and space reading K/V
// through a page table (generator/families/hopper_fwd.cpp holds both).
#include "generator/families/hopper_fwd.h"

namespace flashtune {

const Family& FamilyEntry_hopper_paged() { return HopperPagedFamily(); }

}  // namespace flashtune
