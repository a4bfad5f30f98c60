// tests/support/variant_checks.h — the loop the kernel tests against the float64 reference
// share: every loaded variant on every case, one EXPECT per run, then a "[ checked  ]" line.
//
// Contract: `kernels` is CompileAndLoad's answer for `variants` (same order); a variant whose
// kernel does not fit this GPU (kOutOfResources) is left out, any other load error fails the
// test. `run(kernel, case)` returns "" on a match, else why not. AssertValid checks hand-built
// variants before a test asks for the GPU, so a tile that stops fitting fails on any machine
// (CPU CI too), not only on the GPU one. Header-only (gtest).
// Thread safety: none needed (one test thread).
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "flashtune/kernel.h"
#include "flashtune/space.h"
#include "flashtune/status.h"
#include "flashtune/variant.h"

namespace flashtune::testing {

// Every variant passes CheckVariant (the largest opt-in shared memory); call it as
// ASSERT_NO_FATAL_FAILURE(AssertValid(...)) so a failure ends the caller too.
inline void AssertValid(const std::vector<Variant>& variants) {
  for (const Variant& v : variants) {
    const Status valid = CheckVariant(v);
    ASSERT_TRUE(valid.ok()) << valid.ToString();
  }
}

template <typename Cases, typename Run>
void CheckEveryVariant(const std::string& what, const std::vector<Variant>& variants,
                       const std::vector<Result<ForwardKernel>>& kernels, Cases& cases, Run run) {
  int runs = 0, checked = 0;
  for (size_t i = 0; i < variants.size(); ++i) {
    const Result<ForwardKernel>& kernel = kernels[i];
    if (!kernel.ok() && kernel.status().code() == Code::kOutOfResources) continue;  // not for this GPU
    ASSERT_TRUE(kernel.ok()) << variants[i].Uri() << ": " << kernel.status().ToString();
    ++checked;
    for (auto& c : cases) {
      EXPECT_EQ(run(*kernel, c), "") << variants[i].Uri();
      ++runs;
    }
  }
  std::printf("[ checked  ] %s: %d variants x %zu cases (%d runs)\n", what.c_str(), checked, cases.size(), runs);
}

}  // namespace flashtune::testing
