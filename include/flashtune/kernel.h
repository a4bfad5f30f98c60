// flashtune/kernel.h — the last stage of the pipeline (Variant → Source → Cubin → Module →
// Kernel): a loaded FA-2 forward kernel, ready to launch on a caller's stream.
//
// A Kernel owns its Module, knows its Variant (and so its tile geometry and shared memory),
// and validates every ForwardArgs before launching: on bad input nothing is launched.
//
// Thread safety: Launch() may be called from several threads at once (it only reads the
// Kernel); Load and destruction need external synchronisation.
#pragma once

#include <memory>

#include "flashtune/compiler.h"
#include "flashtune/driver.h"
#include "flashtune/forward_args.h"
#include "flashtune/status.h"
#include "flashtune/variant.h"

namespace flashtune {

class Kernel {
 public:
  // Loads `cubin` (compiled from GenerateSource(variant)) into `context` and raises the
  // function's dynamic shared memory limit to what the variant needs.
  // kNotFound when the cubin has no kernel named variant.Uri(); kOutOfResources when the
  // device cannot give the variant its shared memory; the driver's error otherwise.
  static Result<Kernel> Load(const Context& context, const Cubin& cubin, const Variant& variant);

  // Validates `args` (ValidateForwardArgs and agreement with the variant) and launches on
  // `stream` without synchronising or allocating. OK when queued; kInvalidArgument naming the
  // argument (nothing launched); kOutOfResources or kFault from the driver.
  Status Launch(const ForwardArgs& args, CUstream stream) const;

  // Launch() for callers that have already passed `args` through ValidateForwardArgs (the
  // runtime's hot path validates once, not twice); still checks agreement with the variant.
  Status LaunchValidated(const ForwardArgs& args, CUstream stream) const;

  const Variant& variant() const { return variant_; }
  const Function& function() const { return function_; }

 private:
  Kernel(Variant variant, std::unique_ptr<Module> module, Function function)
      : variant_(variant), module_(std::move(module)), function_(std::move(function)) {}
  Variant variant_;
  std::unique_ptr<Module> module_;  // heap: Function keeps handles into it
  Function function_;
};

}  // namespace flashtune
