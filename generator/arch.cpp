// The GPU-architecture table; see include/flashtune/arch.h.
#include "flashtune/arch.h"

#include <charconv>

namespace flashtune {

namespace {

// cc, opt-in smem per block, registers / smem / threads / CTAs per SM, cp.async, wgmma.
constexpr GpuArch kArchs[] = {
    {8, 0, 166912, 65536, 167936, 2048, 32, true, false},   // A100
    {8, 6, 101376, 65536, 102400, 1536, 16, true, false},   // RTX 30, A40
    {8, 7, 166912, 65536, 167936, 1536, 32, true, false},   // Jetson Orin
    {8, 9, 101376, 65536, 102400, 1536, 24, true, false},   // RTX 40, L40, L4
    {9, 0, 232448, 65536, 233472, 2048, 32, true, true},    // H100, H200
    {10, 0, 232448, 65536, 233472, 2048, 32, true, false},  // B200
    {10, 3, 232448, 65536, 233472, 2048, 32, true, false},  // B300
    {12, 0, 101376, 65536, 102400, 1536, 24, true, false},  // RTX 50
    {12, 1, 101376, 65536, 102400, 1536, 24, true, false},  // GB10
};

}  // namespace

std::string GpuArch::Name() const { return ArchFor(cc_major, cc_minor); }

std::span<const GpuArch> KnownGpuArchs() { return kArchs; }

const GpuArch* FindGpuArch(int cc_major, int cc_minor) {
  for (const GpuArch& a : kArchs)
    if (a.cc_major == cc_major && a.cc_minor == cc_minor) return &a;
  return nullptr;
}

std::string ArchFor(int cc_major, int cc_minor) {
  return "sm_" + std::to_string(cc_major * 10 + cc_minor) + (cc_major >= 9 ? "a" : "");
}

Result<GpuArch> ParseGpuArch(std::string_view arch) {
  auto unknown = [&] {
    return Status(Code::kInvalidArgument, "arch '" + std::string(arch) + "' is not known; allowed: " + KnownArchs());
  };
  if (!arch.starts_with("sm_")) return unknown();
  std::string_view digits = arch.substr(3);
  const bool specific = digits.ends_with('a');
  if (specific) digits.remove_suffix(1);
  int cc = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), cc);
  if (ec != std::errc() || end != digits.data() + digits.size() || digits.size() < 2) return unknown();
  const GpuArch* a = FindGpuArch(cc / 10, cc % 10);
  // The "a" targets exist from 9.0 on only.
  if (a == nullptr || (specific && a->cc_major < 9)) return unknown();
  return *a;
}

int64_t MaxSharedMemoryForArch(std::string_view arch) {
  auto a = ParseGpuArch(arch);
  return a.ok() ? a->max_smem_per_block_optin : 0;
}

std::string KnownArchs() {
  std::string s;
  for (const GpuArch& a : kArchs) {
    const std::string name = a.Name();
    s += (s.empty() ? "" : ", ") + name;
    if (name.ends_with('a')) s += ", " + name.substr(0, name.size() - 1);
  }
  return s;
}

}  // namespace flashtune
