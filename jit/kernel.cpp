#include "flashtune/kernel.h"

#include "generator/launch_config.h"
#include "flashtune/space.h"

namespace flashtune {

Result<Kernel> Kernel::Load(const Context& context, const Cubin& cubin, const Variant& variant) {
  auto module = Module::Load(context, cubin);
  if (!module.ok()) return Status(module.status()).WithVariant(variant.Uri());
  auto owned = std::make_unique<Module>(std::move(*module));
  auto function = owned->GetFunction(variant.Uri());
  if (!function.ok()) return Status(function.status()).WithVariant(variant.Uri());
  Status smem = function->SetMaxDynamicSharedMemory(static_cast<int>(SharedMemoryBytes(variant)));
  if (!smem.ok()) return smem.WithVariant(variant.Uri());
  return Kernel(variant, std::move(owned), std::move(*function));
}

Status Kernel::Launch(const ForwardArgs& args, CUstream stream) const {
  FT_RETURN_IF_ERROR(ValidateForwardArgs(args));
  return LaunchValidated(args, stream);
}

Status Kernel::LaunchValidated(const ForwardArgs& args, CUstream stream) const {
  FT_RETURN_IF_ERROR(CheckArgsMatchVariant(variant_, args));
  const detail::LaunchConfig config = detail::ComputeLaunchConfig(variant_, args);
  detail::KernelParams params = detail::MakeKernelParams(args);
  void* kernel_args[] = {&params};
  Status status = flashtune::Launch(function_, {config.grid[0], config.grid[1], config.grid[2]},
                                    {config.block[0], config.block[1], config.block[2]},
                                    static_cast<unsigned>(config.smem_bytes), stream, kernel_args);
  if (!status.ok()) status.WithVariant(variant_.Uri());
  return status;
}

}  // namespace flashtune
