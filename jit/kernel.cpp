#include "flashtune/kernel.h"

namespace flashtune {

Result<Kernel> Kernel::Load(const Context& context, const Cubin& cubin, const std::string& name, int64_t smem_bytes) {
  auto module = Module::Load(context, cubin);
  if (!module.ok()) return Status(module.status()).WithVariant(name);
  auto owned = std::make_unique<Module>(std::move(*module));
  auto function = owned->GetFunction(name);
  if (!function.ok()) return Status(function.status()).WithVariant(name);
  Status smem = function->SetMaxDynamicSharedMemory(static_cast<int>(smem_bytes));
  if (!smem.ok()) return smem.WithVariant(name);
  return Kernel(name, smem_bytes, std::move(owned), std::move(*function));
}

Status Kernel::Launch(LaunchPacket* packet, CUstream stream) const {
  if (packet->smem_bytes > smem_bytes_) {
    return Status(Code::kInvalidArgument, "launch asks for " + std::to_string(packet->smem_bytes) +
                                              " bytes of dynamic shared memory; the kernel was loaded with " +
                                              std::to_string(smem_bytes_))
        .WithVariant(name_);
  }
  for (int i = 0; i < packet->tensor_maps; ++i) {
    Status encoded = EncodeTensorMap(function_.driver(), packet->maps[i], packet->args + packet->maps[i].offset);
    if (!encoded.ok()) return encoded.WithVariant(name_);
  }
  void* kernel_args[] = {packet->args};
  Status status = flashtune::Launch(function_, {packet->grid[0], packet->grid[1], packet->grid[2]},
                                    {packet->block[0], packet->block[1], packet->block[2]}, packet->smem_bytes,
                                    stream, kernel_args);
  if (!status.ok()) status.WithVariant(name_);
  return status;
}

}  // namespace flashtune
