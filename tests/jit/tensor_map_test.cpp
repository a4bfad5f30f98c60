// CPU tests of the tensor-map argument checks (CheckTensorMapSpec), which
// Driver::EncodeTensorMapTiled applies before it calls the driver.
#include <gtest/gtest.h>

#include <string>

#include "flashtune/driver.h"

namespace flashtune {
namespace {

// A valid rank-4 map: [B=2, N=100, H=4, D=128] bf16, box {64, 1, 128, 1}, 128-byte swizzle.
TensorMapSpec Valid() {
  TensorMapSpec s;
  s.name = "q";
  s.dtype = TensorMapDataType::kBFloat16;
  s.rank = 4;
  s.address = reinterpret_cast<const void*>(uintptr_t(0x10000));
  s.dims = {128, 4, 100, 2, 1};
  s.strides_bytes = {256, 1024, 102400, 0};
  s.box = {64, 1, 128, 1, 1};
  s.swizzle = TensorMapSwizzle::k128B;
  return s;
}

void ExpectRefused(const TensorMapSpec& s, const std::string& words) {
  Status st = CheckTensorMapSpec(s);
  ASSERT_FALSE(st.ok()) << words;
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_EQ(st.message().rfind("tensor map 'q': ", 0), 0u) << st.message();
  EXPECT_NE(st.message().find(words), std::string::npos) << st.message();
}

TEST(TensorMapSpec, ValidSpecPasses) { EXPECT_TRUE(CheckTensorMapSpec(Valid()).ok()); }

TEST(TensorMapSpec, EachRuleNamesTheArgument) {
  TensorMapSpec s = Valid();
  s.rank = 0;
  ExpectRefused(s, "rank 0");
  s = Valid();
  s.rank = 6;
  ExpectRefused(s, "rank 6");
  s = Valid();
  s.address = nullptr;
  ExpectRefused(s, "global address is null");
  s = Valid();
  s.address = reinterpret_cast<const void*>(uintptr_t(0x10008));
  ExpectRefused(s, "not 16-byte aligned");
  s = Valid();
  s.dims[2] = 0;
  ExpectRefused(s, "dims[2] = 0");
  s = Valid();
  s.strides_bytes[1] = 1000;  // not a multiple of 16
  ExpectRefused(s, "strides_bytes[1] (dimension 2) = 1000");
  s = Valid();
  s.strides_bytes[0] = 0;
  ExpectRefused(s, "strides_bytes[0]");
  s = Valid();
  s.strides_bytes[2] = uint64_t(1) << 40;
  ExpectRefused(s, "below 2^40");
  s = Valid();
  s.box[2] = 257;
  ExpectRefused(s, "box[2] = 257");
  s = Valid();
  s.box[0] = 4;  // 8 bytes
  s.swizzle = TensorMapSwizzle::kNone;
  ExpectRefused(s, "multiple of 16");
  s = Valid();
  s.box[0] = 128;  // 256 bytes under a 128-byte swizzle
  ExpectRefused(s, "more than the 128-byte swizzle allows");
  s = Valid();
  s.element_strides[1] = 9;
  ExpectRefused(s, "element_strides[1] = 9");
}

TEST(TensorMapSpec, UnusedTrailingDimensionsAreIgnored) {
  TensorMapSpec s = Valid();
  s.rank = 2;
  s.dims[2] = 0;  // beyond the rank
  s.strides_bytes[1] = 3;
  EXPECT_TRUE(CheckTensorMapSpec(s).ok());
}

}  // namespace
}  // namespace flashtune
