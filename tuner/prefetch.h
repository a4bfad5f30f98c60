// What the GPU measurer compiles ahead, on its background threads, for a problem: the variants
// of the families the tuner will search for that problem, and only those. A class's space
// holds every family of its operation, but a family serves only some problems
// (Family::PreferenceFor): decode_fwd's variants (half of a d64 or d96 class's space) never
// run on a prefill problem, so compiling them ahead only made the candidates that do run wait
// behind them (on a cold tune's first class, about one second per candidate on the H200).
//
// Thread safety: pure functions of their arguments.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "flashtune/space.h"

namespace flashtune::detail {

// The families the tuner searches for `problem` on `arch` (FamiliesSearchedFor), most preferred
// first (the ones the search is likely to try first), as names.
std::vector<std::string> PrefetchFamilies(const Problem& problem, const std::string& arch = "sm_90a");

// The variants of `family` in `cls`'s space on `arch` with `max_smem_bytes` of shared
// memory whose kernels read `layout` (Family::ReadsLayout: decode_fwd compiles a kernel per
// layout, and a dense tune never runs the paged half), in the space's order; empty where the
// family has none there (e.g. hopper_fwd below sm_90a).
std::vector<Variant> FamilySpace(const ProblemClass& cls, const std::string& family, const std::string& arch,
                                 int64_t max_smem_bytes, Layout layout);

// The first of dense, paged, varlen that `v`'s kernel reads (dense for an unknown family): the
// layout whose space a variant asked for by itself is compiled ahead with.
Layout FirstLayoutRead(const Variant& v);

}  // namespace flashtune::detail
