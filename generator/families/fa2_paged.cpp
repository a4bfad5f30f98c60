// The fa2_paged family's registry entry: fa2_fwd's template and space reading K/V through a
// page table (generator/families/fa2_fwd.cpp holds both).
#include "generator/families/fa2_fwd.h"

namespace flashtune {

const Family& FamilyEntry_fa2_paged() { return Fa2PagedFamily(); }

}  // namespace flashtune
