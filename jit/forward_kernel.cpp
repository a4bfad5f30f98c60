// ForwardKernel: a loaded kernel bound to its variant; packing goes through the family seam.
#include "flashtune/kernel.h"
#include "flashtune/space.h"
#include "generator/family.h"

namespace flashtune {

Result<ForwardKernel> ForwardKernel::Load(const Context& context, const Cubin& cubin, const Variant& variant) {
  auto family = FamilyOf(variant);
  if (!family.ok()) return Status(family.status()).WithVariant(variant.Uri());
  std::vector<std::string> next;
  for (std::string_view suffix : (*family)->extra_kernels()) next.push_back(variant.Uri() + "_" + std::string(suffix));
  auto kernel = Kernel::Load(context, cubin, variant.Uri(), (*family)->SharedMemoryBytes(variant), next);
  if (!kernel.ok()) return kernel.status();
  auto device = context.driver().Device(context.ordinal());
  return ForwardKernel(variant, std::move(*kernel), device.ok() ? device->sm_count : 0,
                       device.ok() ? device->cc_major : 0);
}

Status ForwardKernel::Launch(const ForwardArgs& args, CUstream stream) const {
  FT_RETURN_IF_ERROR(ValidateForwardArgs(args));
  return LaunchValidated(args, stream);
}

Status ForwardKernel::LaunchValidated(const ForwardArgs& args, CUstream stream) const {
  LaunchPacket packet;
  packet.sm_count = sm_count_;
  packet.cc_major = cc_major_;
  FT_RETURN_IF_ERROR(PackValidatedForward(variant_, args, &packet));
  return kernel_.Launch(&packet, stream);
}

Status ForwardKernel::LaunchBackward(const BackwardArgs& args, CUstream stream) const {
  FT_RETURN_IF_ERROR(ValidateBackwardArgs(args));
  return LaunchBackwardValidated(args, stream);
}

Status ForwardKernel::LaunchBackwardValidated(const BackwardArgs& args, CUstream stream) const {
  LaunchPacket packet;
  packet.sm_count = sm_count_;
  packet.cc_major = cc_major_;
  FT_RETURN_IF_ERROR(PackValidatedBackward(variant_, args, &packet));
  return kernel_.Launch(&packet, stream);
}

}  // namespace flashtune
