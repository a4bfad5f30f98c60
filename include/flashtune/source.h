// flashtune/source.h — a Variant turned into one self-contained CUDA translation unit.
//
// The text is a generated constexpr prologue (the variant's parameters, the kernel's extern "C"
// name = the variant URI) followed by `#line 1 "<template>"` and the variant's family's kernel
// template, embedded in the library at build time. The text depends only on the variant and the template, so the
// sha256 is stable: the same variant built from the same template always hashes the same, and a
// template change changes every hash (the database keys timings on it).
//
// Thread safety: pure functions; safe from any thread.
#pragma once

#include <string>
#include <string_view>

#include "flashtune/status.h"
#include "flashtune/variant.h"

namespace flashtune {

struct Source {
  Variant variant;
  std::string uri;          // variant.Uri()
  std::string kernel_name;  // the extern "C" entry point (equal to uri)
  std::string text;         // the whole .cu translation unit
  std::string sha256;       // Sha256Hex(text)
};

// Builds the source of `variant`. kInvalidArgument (from CheckVariant against the largest
// opt-in limit of any target, kLargestMaxSmemBytes; the per-target limit is the caller's) when
// the variant is not valid; kInternal when the template was not embedded in this build.
Result<Source> GenerateSource(const Variant& variant);

// The generated prologue alone (ends with the `#line 1 "<template>"` line); "" for an unknown
// family. No validation: tests use it to force invalid combinations through the template's
// static_asserts.
std::string GeneratePrologue(const Variant& variant);

// The embedded template `name` ("fa2_fwd.cuh") as NVRTC gets it: every line
// `#include "x.cuh"` naming another embedded template replaced by that one's text (expanded in
// turn, each at most once). kNotFound for an unknown name; kInternal for an include of a file
// that is not embedded.
Result<std::string> ExpandedTemplate(std::string_view name);

// The generator's revision: what it writes before the templates (each family's prologue: its
// policies, such as hopper_fwd's blocks per SM or rescale threshold) changes a variant's code
// as much as a template edit does, so a change to any variant's prologue bumps it.
// tests/generator/source_test.cpp pins the prologues of every searched variant to it.
int GeneratorRevision();

// sha256 over every embedded template's name and text, in name order, then the generator's
// revision; identifies the template version (the database stores it, so a winner is never
// served by code other than what was tuned).
std::string TemplateHash();

}  // namespace flashtune
