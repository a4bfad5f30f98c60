// flashtune/kernel.h — the last stage of the pipeline (Variant → Source → Cubin → Module →
// Kernel): a loaded kernel, ready to launch on a caller's stream.
//
// The JIT layer knows no kernel family: a Kernel is a function in a loaded module with the
// dynamic shared memory it was given, and it launches a LaunchPacket — geometry, shared memory
// and the parameter bytes a family packed (PackForward in generator/family.h). The packet's
// tensor-map requests are encoded into the parameter bytes just before the launch (through the
// process's cache of encoded maps).
//
// Thread safety: Launch() may be called from several threads at once (it only reads the
// Kernel); Load and destruction need external synchronisation.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "flashtune/backward_args.h"
#include "flashtune/compiler.h"
#include "flashtune/driver.h"
#include "flashtune/status.h"
#include "flashtune/forward_args.h"
#include "flashtune/variant.h"
#include "generator/launch_packet.h"

namespace flashtune {

// Encodes the packet's tensor-map requests into its parameter bytes (each at its offset) with
// the driver's cuTensorMapEncodeTiled. `cached`: first through the process's cache of encoded
// maps, keyed by everything a map encodes (pointer, shape, strides, box, ...; jit/
// tensor_map_cache.h), so a call with the same tensors as an earlier one encodes nothing
// (forward() warm on an H200 host: 4.3 us with hits, 5.0 us encoding four maps every call).
// Host work only; allocates nothing; any thread.
// The driver's refusal names the map's index.
Status EncodeTensorMaps(const Driver& driver, LaunchPacket* packet, bool cached = true);

class Kernel {
 public:
  // Loads `cubin` into `context`, finds the function `name` and raises its dynamic shared
  // memory limit to `smem_bytes`; finds `next_names` too (the packet's further steps, in
  // LaunchStep::kernel order) and raises theirs to the same limit (`smem_bytes` is the most
  // any step of the module uses). kNotFound when the cubin has no such kernel;
  // kOutOfResources when the device cannot give it the shared memory; the driver's error
  // otherwise. Errors carry `name` as their variant URI.
  static Result<Kernel> Load(const Context& context, const Cubin& cubin, const std::string& name,
                             int64_t smem_bytes, const std::vector<std::string>& next_names = {});

  // Encodes the packet's tensor maps into its parameter bytes and launches on `stream`
  // without synchronising or allocating, then the packet's next steps in order (the packet or
  // a step with `overlap` through LaunchDependent). OK when queued; kInvalidArgument when the packet (or a
  // step) asks for more shared memory than the kernel was loaded with or a tensor map is
  // refused; kInternal when a step names a kernel the module was not loaded with;
  // kOutOfResources or kFault from the driver. Nothing is launched when the packet is refused.
  Status Launch(LaunchPacket* packet, CUstream stream) const;

  const std::string& name() const { return name_; }
  int64_t smem_bytes() const { return smem_bytes_; }
  const Function& function() const { return function_; }

 private:
  Kernel(std::string name, int64_t smem_bytes, std::unique_ptr<Module> module, Function function,
         std::vector<Function> next)
      : name_(std::move(name)),
        smem_bytes_(smem_bytes),
        module_(std::move(module)),
        function_(std::move(function)),
        next_(std::move(next)) {}
  std::string name_;
  int64_t smem_bytes_ = 0;
  std::unique_ptr<Module> module_;  // heap: Function keeps handles into it
  Function function_;
  std::vector<Function> next_;
};

// A Kernel bound to the Variant it was compiled from: a forward call's arguments are validated
// and packed by the variant's family (PackForward, generator/family.h), then launched. This is
// what the runtime and the tuner's worker hold; it names no family either.
// Thread safety: as Kernel.
class ForwardKernel {
 public:
  // Kernel::Load with the variant's URI as the function name and its shared memory; notes the
  // device's SM count (persistent grids).
  static Result<ForwardKernel> Load(const Context& context, const Cubin& cubin, const Variant& variant);

  // Validates `args` (ValidateForwardArgs, agreement with the variant, the family's CanRun)
  // and launches on `stream` without synchronising or allocating. OK when queued;
  // kInvalidArgument / kUnsupported naming the argument (nothing launched); kOutOfResources or
  // kFault from the driver.
  Status Launch(const ForwardArgs& args, CUstream stream) const;
  // Launch() for callers that have already passed `args` through ValidateForwardArgs (the
  // runtime's hot path validates once, not twice).
  Status LaunchValidated(const ForwardArgs& args, CUstream stream) const;
  // The same for a backward call (ValidateBackwardArgs, PackBackward): the variant's family
  // must compute the backward pass.
  Status LaunchBackward(const BackwardArgs& args, CUstream stream) const;
  Status LaunchBackwardValidated(const BackwardArgs& args, CUstream stream) const;

  const Variant& variant() const { return variant_; }
  const Function& function() const { return kernel_.function(); }

 private:
  ForwardKernel(Variant variant, Kernel kernel, int sm_count, int cc_major)
      : variant_(std::move(variant)), kernel_(std::move(kernel)), sm_count_(sm_count), cc_major_(cc_major) {}
  Variant variant_;
  Kernel kernel_;
  int sm_count_ = 0;  // the device's, for families with persistent grids
  int cc_major_ = 0;  // the device's, for what a launch may ask of the driver
};

}  // namespace flashtune
