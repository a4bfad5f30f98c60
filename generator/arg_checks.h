// Argument checks the forward and backward calls share (defined in generator/forward_args.cpp):
// one rule for what a valid tensor pointer and a valid set of strides are.
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "flashtune/forward_args.h"
#include "flashtune/status.h"

namespace flashtune::detail {

// "32, 64, ..., 256" for messages.
std::string SupportedHeadDims();
// kInvalidArgument naming `name` when p is null or not `alignment`-byte aligned.
Status CheckPointer(const char* name, const void* p, uintptr_t alignment);
// kInvalidArgument naming `name`_strides.<dim> when a stride is negative, not a multiple of 8
// elements, or the largest byte offset of a [batch, seqlen, heads, head_dim] tensor overflows.
Status CheckStrides(const char* name, const Strides& s, int64_t batch, int64_t seqlen, int64_t heads,
                    int head_dim);
// For a tensor the call writes (o, dq, dk, dv): kInvalidArgument naming `name`_strides.<dim> when
// two of its elements share an address (a zero stride, or rows or heads that overlap), since the
// threads writing them would race. Inputs may overlap (K/V broadcast over heads). Call after
// CheckStrides, which rules out overflow.
Status CheckDistinctElements(const char* name, const Strides& s, int64_t batch, int64_t seqlen, int64_t heads,
                             int head_dim);

}  // namespace flashtune::detail
