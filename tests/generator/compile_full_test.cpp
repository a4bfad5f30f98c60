// Label `full`: every variant of the default space, every head dim, both dtypes and masks,
// compiled with NVRTC for sm_90a and sm_80. Minutes on a 2-core machine; the CPU suite runs a
// sample (compile_test.cpp).
#if __has_include("flashtune/compiler.h")  // the compiler lands on main from another branch

#include <gtest/gtest.h>

#include "tests/generator/compile_sweep.h"

namespace flashtune {
namespace {

TEST(GeneratedSourceFull, EveryVariantD64D128Compiles) {
  testing_sweep::CompileAll(testing_sweep::Jobs({64, 128}, {"sm_90a", "sm_80"}, 0));
}

TEST(GeneratedSourceFull, EveryVariantOtherHeadDimsCompiles) {
  testing_sweep::CompileAll(testing_sweep::Jobs({32, 96, 160, 192, 224, 256}, {"sm_90a", "sm_80"}, 0));
}

}  // namespace
}  // namespace flashtune

#endif  // __has_include("flashtune/compiler.h")
