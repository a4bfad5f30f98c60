// CurrentToolchain: the identity the tuner records and the runtime matches winners against.
#include "flashtune/toolchain.h"

#include <gtest/gtest.h>

#include "flashtune/compiler.h"
#include "flashtune/flashtune.h"
#include "flashtune/source.h"

namespace flashtune {
namespace {

TEST(Toolchain, IsNvrtcFlashtuneAndTheTemplateHash) {
  const ToolchainInfo t = CurrentToolchain();
  EXPECT_EQ(t.nvrtc_version, Compiler::NvrtcVersion());
  EXPECT_EQ(t.generator_version, ft_version());
  // One template hash: the one GenerateSource's callers see is the one the database stores.
  EXPECT_EQ(t.template_hash, TemplateHash());
  EXPECT_EQ(t, CurrentToolchain());
}

}  // namespace
}  // namespace flashtune
