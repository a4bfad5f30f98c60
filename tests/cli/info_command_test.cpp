// `flashtune info` on the recording fake driver (tests/fixtures/fake_gpu.h: an H200 and an
// A100): each GPU's line and JSON object, and the cache folder and database the environment
// chose. (Without a driver: tests/cli/cli_test.cpp.)
#include <gtest/gtest.h>

#include <string>

#include "tests/support/replay_fixture.h"

namespace flashtune {
namespace {

using testing::ReadTextFile;
using testing::RunShell;
using testing::TempDir;

std::string Info(const std::string& dir, const std::string& args, int* rc) {
  const std::string log = dir + "/info.txt";
  *rc = RunShell("FLASHTUNE_LIBCUDA='" FLASHTUNE_FAKE_GPU_LIBCUDA "' FLASHTUNE_DB='" + dir +
                 "/tuned.db' FLASHTUNE_CACHE_DIR='" + dir + "/cubins' '" FLASHTUNE_CLI_PATH "' info " + args + " > '" +
                 log + "' 2>&1");
  return ReadTextFile(log);
}

TEST(InfoCommand, ListsEachGpuWithItsArchAndWhereTheCacheAndDatabaseAre) {
  const std::string dir = TempDir("info_fake");
  int rc = -1;
  const std::string text = Info(dir, "", &rc);
  EXPECT_EQ(rc, 0) << text;
  EXPECT_NE(text.find("driver:   CUDA 13.0 (" FLASHTUNE_FAKE_GPU_LIBCUDA ")"), std::string::npos) << text;
  EXPECT_NE(text.find("gpu 0:    NVIDIA H200, GPU-f0f1f2f3-f4f5-f6f7-f8f9-fafbfcfdfeff, cc 9.0 (sm_90a), 132 SMs, "
                      "smem opt-in 232448 B/block"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("gpu 1:    NVIDIA A100-SXM4-80GB, GPU-00010203-0405-0607-0809-0a0b0c0d0e0f, cc 8.0 (sm_80), "
                      "108 SMs"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("gpus:     none"), std::string::npos) << text;
  EXPECT_NE(text.find("cache:    " + dir + "/cubins\n"), std::string::npos) << text;
  EXPECT_NE(text.find("database: " + dir + "/tuned.db\n"), std::string::npos) << text;

  const std::string json = Info(dir, "--json", &rc);
  EXPECT_EQ(rc, 0) << json;
  EXPECT_EQ(json.find('\n'), json.size() - 1) << "one line: " << json;
  EXPECT_NE(json.find("\"error\":null,\"gpus\":[{\"ordinal\":0,\"name\":\"NVIDIA H200\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"compute_capability\":\"9.0\",\"arch\":\"sm_90a\",\"sm_count\":132"), std::string::npos)
      << json;
  EXPECT_NE(json.find("{\"ordinal\":1,\"name\":\"NVIDIA A100-SXM4-80GB\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"arch\":\"sm_80\",\"sm_count\":108"), std::string::npos) << json;
  EXPECT_NE(json.find("\"cache_dir\":\"" + dir + "/cubins\",\"database\":\"" + dir + "/tuned.db\"}"),
            std::string::npos)
      << json;
}

}  // namespace
}  // namespace flashtune
