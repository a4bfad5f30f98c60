#include "flashtune/kernel.h"

#include "jit/cuda_api.h"
#include "jit/tensor_map_cache.h"

namespace flashtune {

Result<Kernel> Kernel::Load(const Context& context, const Cubin& cubin, const std::string& name, int64_t smem_bytes,
                            const std::vector<std::string>& next_names) {
  auto module = Module::Load(context, cubin);
  if (!module.ok()) return Status(module.status()).WithVariant(name);
  auto owned = std::make_unique<Module>(std::move(*module));
  auto function = owned->GetFunction(name);
  if (!function.ok()) return Status(function.status()).WithVariant(name);
  Status smem = function->SetMaxDynamicSharedMemory(static_cast<int>(smem_bytes));
  if (!smem.ok()) return smem.WithVariant(name);
  std::vector<Function> next;
  for (const std::string& n : next_names) {
    auto f = owned->GetFunction(n);
    if (!f.ok()) return Status(f.status()).WithVariant(name);
    Status raised = f->SetMaxDynamicSharedMemory(static_cast<int>(smem_bytes));
    if (!raised.ok()) return raised.WithVariant(name);
    next.push_back(std::move(*f));
  }
  return Kernel(name, smem_bytes, std::move(owned), std::move(*function), std::move(next));
}

namespace {

// The family's description as the driver layer's typed spec (no name: nothing allocated).
TensorMapSpec SpecOf(const TensorMapRequest& r) {
  TensorMapSpec s;
  s.dtype = r.bf16 ? TensorMapDataType::kBFloat16 : TensorMapDataType::kFloat16;
  s.rank = int(r.rank);
  s.address = r.base;
  for (int i = 0; i < 5; ++i) {
    s.dims[i] = r.dims[i];
    s.box[i] = r.box[i];
    s.element_strides[i] = r.element_strides[i];
    if (i < 4) s.strides_bytes[i] = r.strides_bytes[i];
  }
  switch (r.swizzle) {
    case TensorMapRequest::Swizzle::kNone: s.swizzle = TensorMapSwizzle::kNone; break;
    case TensorMapRequest::Swizzle::k32B: s.swizzle = TensorMapSwizzle::k32B; break;
    case TensorMapRequest::Swizzle::k64B: s.swizzle = TensorMapSwizzle::k64B; break;
    case TensorMapRequest::Swizzle::k128B: s.swizzle = TensorMapSwizzle::k128B; break;
  }
  s.oob_zero = r.oob_zero;
  s.l2_promotion = r.l2_promotion >= 256  ? TensorMapL2Promotion::k256B
                   : r.l2_promotion >= 128 ? TensorMapL2Promotion::k128B
                   : r.l2_promotion >= 64  ? TensorMapL2Promotion::k64B
                                           : TensorMapL2Promotion::kNone;
  return s;
}

// One kernel of a packet: plainly, or as a programmatic dependent of the kernel before it.
Status LaunchOne(const Function& function, const unsigned (&grid)[3], const unsigned (&block)[3],
                 uint32_t smem_bytes, bool overlap, CUstream stream, void** args) {
  const std::array<unsigned, 3> g{grid[0], grid[1], grid[2]}, b{block[0], block[1], block[2]};
  return overlap ? LaunchDependent(function, g, b, smem_bytes, stream, args)
                 : flashtune::Launch(function, g, b, smem_bytes, stream, args);
}

}  // namespace

Status EncodeTensorMaps(const Driver& driver, LaunchPacket* packet, bool cached) {
  detail::TensorMapCache& cache = detail::TensorMapCache::Shared();
  for (int i = 0; i < packet->tensor_maps; ++i) {
    const TensorMapRequest& m = packet->maps[i];
    if (m.offset % 64 != 0 || m.offset + kTensorMapBytes > packet->kMaxArgBytes) {
      return Status(Code::kInvalidArgument, "tensor map " + std::to_string(i) + ": offset " + std::to_string(m.offset) +
                                                " is not a 64-byte-aligned slot inside the kernel parameters");
    }
    void* out = packet->args + m.offset;
    detail::TensorMapCache::Key key;
    if (cached) {
      key = detail::TensorMapCache::KeyOf(m);
      if (cache.Lookup(key, out)) continue;
    }
    Status s = driver.EncodeTensorMapTiled(SpecOf(m), out);
    if (!s.ok()) return Status(s.code(), "tensor map " + std::to_string(i) + ": " + s.message());
    if (cached) cache.Insert(key, out);  // only maps the driver accepted
  }
  return Status::Ok();
}

Status Kernel::Launch(LaunchPacket* packet, CUstream stream) const {
  if (packet->smem_bytes > smem_bytes_) {
    return Status(Code::kInvalidArgument, "launch asks for " + std::to_string(packet->smem_bytes) +
                                              " bytes of dynamic shared memory; the kernel was loaded with " +
                                              std::to_string(smem_bytes_))
        .WithVariant(name_);
  }
  if (packet->next_steps < 0 || packet->next_steps > LaunchPacket::kMaxNextSteps)
    return Status(Code::kInternal, "launch packet has " + std::to_string(packet->next_steps) + " next steps; at most " +
                                       std::to_string(LaunchPacket::kMaxNextSteps))
        .WithVariant(name_);
  for (int i = 0; i < packet->next_steps; ++i) {
    if (packet->next[i].kernel < 0 || packet->next[i].kernel >= int(next_.size()))
      return Status(Code::kInternal, "launch step " + std::to_string(i) + " names kernel " +
                                         std::to_string(packet->next[i].kernel) + "; this kernel has " +
                                         std::to_string(next_.size()) + " further kernels")
          .WithVariant(name_);
    if (packet->next[i].smem_bytes > smem_bytes_)
      return Status(Code::kInvalidArgument, "launch step " + std::to_string(i) + " asks for " +
                                                std::to_string(packet->next[i].smem_bytes) +
                                                " bytes of dynamic shared memory; the kernel was loaded with " +
                                                std::to_string(smem_bytes_))
          .WithVariant(name_);
  }
  Status encoded = EncodeTensorMaps(function_.driver(), packet);
  if (!encoded.ok()) return encoded.WithVariant(name_);
  if (packet->zero_bytes > 0) {
    const Driver& driver = function_.driver();
    Status zeroed = driver.Check(driver.api().cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(packet->zero), 0,
                                                              packet->zero_bytes, stream),
                                 "cuMemsetD8Async (the kernel's work counter)");
    if (!zeroed.ok()) return zeroed.WithVariant(name_);
  }
  void* kernel_args[] = {packet->args};
  Status status = LaunchOne(function_, packet->grid, packet->block, packet->smem_bytes, packet->overlap, stream,
                            kernel_args);
  if (!status.ok()) return status.WithVariant(name_);
  for (int i = 0; i < packet->next_steps; ++i) {
    const LaunchStep& step = packet->next[i];
    const Function& next = next_[size_t(step.kernel)];
    status = LaunchOne(next, step.grid, step.block, step.smem_bytes, step.overlap, stream, kernel_args);
    // The variant is the module's; the message says which of its kernels the driver refused
    // (the kernels before it on the stream were launched).
    if (!status.ok())
      return Status(status.code(), "launching " + next.name() + " (after " + std::to_string(i + 1) +
                                       " launched kernel(s) of this call): " + status.message())
          .WithVariant(name_);
  }
  return status;
}

}  // namespace flashtune
