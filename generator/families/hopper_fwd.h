// hopper_fwd: the Hopper (sm_90a) forward family (templates/hopper_fwd.cuh: wgmma, TMA,
// mbarriers, a producer warpgroup and 1-3 consumer warpgroups). hopper_paged: the same
// template and parameters reading K/V from a paged cache (vLLM's layout): prefill over pages.
//
// Thread safety: the families are immutable singletons.
#pragma once

namespace flashtune {

class Family;
// The hopper_paged family (its registry entry is generator/families/hopper_paged.cpp).
const Family& HopperPagedFamily();

}  // namespace flashtune
