// Shared by compile_test.cpp (a deterministic sample, label cpu) and compile_full_test.cpp
// (every variant, label full): compile generated sources with NVRTC and check the results.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "flashtune/compiler.h"
#include "flashtune/source.h"
#include "flashtune/space.h"

namespace flashtune::testing_sweep {

struct Job {
  Variant variant;
  std::string arch;
};

// Every variant of the default space of each class in `head_dims` x {f16, bf16} x {full,
// causal}, for each arch (with that arch's shared-memory limit). With `sample_mod` > 0 only
// every sample_mod-th variant of each class is kept, starting at an offset that rotates with
// the class so that the sample still touches every position of the space.
inline std::vector<Job> Jobs(const std::vector<int>& head_dims, const std::vector<std::string>& archs,
                             int sample_mod) {
  std::vector<Job> jobs;
  int class_index = 0;
  for (const std::string& arch : archs) {
    SpaceOptions options;
    options.arch = arch;  // families exist per arch (hopper_fwd on sm_90a only)
    options.max_smem_bytes = MaxSharedMemoryForArch(arch);
    for (int d : head_dims) {
      for (DType dt : {DType::kF16, DType::kBF16}) {
        for (bool causal : {false, true}) {
          auto space = EnumerateSpace({dt, d, causal}, options);
          EXPECT_TRUE(space.ok()) << space.status().ToString();
          if (!space.ok()) continue;
          for (size_t i = 0; i < space->size(); ++i) {
            if (sample_mod <= 0 || int(i % size_t(sample_mod)) == class_index % sample_mod) {
              jobs.push_back({(*space)[i], arch});
            }
          }
          ++class_index;
        }
      }
    }
  }
  return jobs;
}

// Compiles every job with the on-disk cache off (so NVRTC really runs) and checks that each
// yields a CUBIN holding the variant's extern "C" entry point, within 255 registers.
inline void CompileAll(const std::vector<Job>& jobs) {
  std::vector<CompileRequest> requests;
  for (const Job& job : jobs) {
    auto source = GenerateSource(job.variant);
    ASSERT_TRUE(source.ok()) << source.status().ToString();
    requests.push_back(GeneratedSourceRequest(source->uri, source->text, job.arch));
  }
  Compiler compiler(Compiler::Options{"-", 0});
  std::vector<Result<Cubin>> results = compiler.CompileMany(requests);
  ASSERT_EQ(results.size(), jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    const std::string what = jobs[i].variant.Uri() + " for " + jobs[i].arch;
    ASSERT_TRUE(results[i].ok()) << what << ": " << results[i].status().ToString();
    const Cubin& cubin = *results[i];
    ASSERT_FALSE(cubin.image.empty()) << what;
    EXPECT_FALSE(cubin.from_cache) << what;
    const std::string image(cubin.image.begin(), cubin.image.end());
    EXPECT_NE(image.find(jobs[i].variant.Uri()), std::string::npos)
        << what << ": the CUBIN does not name the entry point";
    EXPECT_GT(cubin.resources.registers, 0) << what;
    EXPECT_LE(cubin.resources.registers, 255) << what;
  }
}

}  // namespace flashtune::testing_sweep
