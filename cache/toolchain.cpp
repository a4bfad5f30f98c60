// The toolchain identity of this build; see include/flashtune/toolchain.h.
#include "flashtune/toolchain.h"

#include "flashtune/compiler.h"
#include "flashtune/source.h"

namespace flashtune {

ToolchainInfo CurrentToolchain() {
  ToolchainInfo t;
  t.nvrtc_version = Compiler::NvrtcVersion();
  t.generator_version = FLASHTUNE_VERSION;
  t.template_hash = TemplateHash();
  return t;
}

}  // namespace flashtune
