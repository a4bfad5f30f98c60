#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

#include "flashtune/compiler.h"
#include "jit/cubin_cache.h"
#include "tests/support/temp_dir.h"

namespace flashtune {
namespace {

namespace fs = std::filesystem;

const char* kSource = "extern \"C\" __global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }\n";

CompileRequest Request(std::vector<std::string> options = {}) {
  return {"twice", kSource, "sm_90a", std::move(options)};
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << data;
}

TEST(CubinCache, SecondCompileHitsWithoutCallingNvrtc) {
  testing::TempDir dir;
  Compiler compiler({.cache_dir = dir.path(), .threads = 0});
  const uint64_t before = Compiler::NvrtcCallCount();
  Result<Cubin> first = compiler.Compile(Request());
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(first->from_cache);
  EXPECT_EQ(Compiler::NvrtcCallCount(), before + 1);
  EXPECT_TRUE(fs::exists(detail::CubinCachePath(dir.path(), first->key)));

  Result<Cubin> second = compiler.Compile(Request());
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_TRUE(second->from_cache);
  EXPECT_EQ(Compiler::NvrtcCallCount(), before + 1) << "a cache hit must not call NVRTC";
  EXPECT_EQ(second->image, first->image);
  EXPECT_EQ(second->key, first->key);
  EXPECT_EQ(second->options, first->options);
  EXPECT_EQ(second->log, first->log);
  EXPECT_EQ(second->resources.registers, first->resources.registers);
  EXPECT_EQ(second->arch, "sm_90a");
}

TEST(CubinCache, ChangedOptionsOrArchMiss) {
  testing::TempDir dir;
  Compiler compiler({.cache_dir = dir.path(), .threads = 0});
  Result<Cubin> base = compiler.Compile(Request());
  ASSERT_TRUE(base.ok());
  const uint64_t before = Compiler::NvrtcCallCount();
  Result<Cubin> other = compiler.Compile(Request({"-DVARIANT=2"}));
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->from_cache);
  EXPECT_NE(other->key, base->key);
  CompileRequest ampere = Request();
  ampere.arch = "sm_80";
  Result<Cubin> sm80 = compiler.Compile(ampere);
  ASSERT_TRUE(sm80.ok());
  EXPECT_FALSE(sm80->from_cache);
  EXPECT_EQ(Compiler::NvrtcCallCount(), before + 2);
}

// Damages the entry for `request` with `damage`, then checks the next compile recompiles
// (one NVRTC call), and the one after hits the rewritten entry.
void ExpectRecompiledAfter(void (*damage)(const std::string& path)) {
  testing::TempDir dir;
  Compiler compiler({.cache_dir = dir.path(), .threads = 0});
  Result<Cubin> first = compiler.Compile(Request());
  ASSERT_TRUE(first.ok());
  const std::string path = detail::CubinCachePath(dir.path(), first->key);
  damage(path);
  EXPECT_EQ(detail::ReadCubinCacheEntry(dir.path(), first->key).status().code(), Code::kCorrupt);

  const uint64_t before = Compiler::NvrtcCallCount();
  Result<Cubin> again = compiler.Compile(Request());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_FALSE(again->from_cache) << "a damaged entry must never be loaded";
  EXPECT_EQ(again->image, first->image);
  EXPECT_EQ(Compiler::NvrtcCallCount(), before + 1);

  Result<Cubin> third = compiler.Compile(Request());
  ASSERT_TRUE(third.ok());
  EXPECT_TRUE(third->from_cache) << "the recompile should have overwritten the damaged entry";
}

TEST(CubinCache, CorruptedEntryIsRecompiled) {
  ExpectRecompiledAfter([](const std::string& path) {
    std::string data = ReadFile(path);
    ASSERT_GT(data.size(), 100u);
    data[data.size() - 50] ^= 0x5a;  // inside the image
    WriteFile(path, data);
  });
}

TEST(CubinCache, TruncatedEntryIsRecompiled) {
  ExpectRecompiledAfter([](const std::string& path) {
    const std::string data = ReadFile(path);
    WriteFile(path, data.substr(0, data.size() / 2));
  });
}

TEST(CubinCache, EmptyEntryIsRecompiled) {
  ExpectRecompiledAfter([](const std::string& path) { WriteFile(path, ""); });
}

TEST(CubinCache, EntryUnderTheWrongKeyIsCorrupt) {
  testing::TempDir dir;
  Compiler compiler({.cache_dir = dir.path(), .threads = 0});
  Result<Cubin> a = compiler.Compile(Request());
  Result<Cubin> b = compiler.Compile(Request({"-DOTHER"}));
  ASSERT_TRUE(a.ok() && b.ok());
  fs::copy_file(detail::CubinCachePath(dir.path(), a->key), detail::CubinCachePath(dir.path(), b->key),
                fs::copy_options::overwrite_existing);
  EXPECT_EQ(detail::ReadCubinCacheEntry(dir.path(), b->key).status().code(), Code::kCorrupt);
}

TEST(CubinCache, MissingEntryIsNotFound) {
  testing::TempDir dir;
  EXPECT_EQ(detail::ReadCubinCacheEntry(dir.path(), std::string(64, 'a')).status().code(), Code::kNotFound);
}

TEST(CubinCache, WriteLeavesNoTempFiles) {
  testing::TempDir dir;
  Compiler compiler({.cache_dir = dir.path() + "/nested/folder", .threads = 0});
  ASSERT_TRUE(compiler.Compile(Request()).ok());
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir.path() + "/nested/folder")) {
    ++files;
    EXPECT_EQ(entry.path().extension(), ".ftcubin") << entry.path();
  }
  EXPECT_EQ(files, 1);
}

TEST(CubinCache, UnwritableFolderStillCompiles) {
  Compiler compiler({.cache_dir = "/proc/flashtune-cannot-write-here", .threads = 0});
  Result<Cubin> cubin = compiler.Compile(Request());
  ASSERT_TRUE(cubin.ok()) << cubin.status().ToString();
  EXPECT_FALSE(cubin->from_cache);
}

TEST(CubinCache, KeyDependsOnEveryInput) {
  const std::string base = detail::CubinCacheKey("n", "src", {"-DA"}, "13.0", "sm_90a");
  EXPECT_EQ(base, detail::CubinCacheKey("n", "src", {"-DA"}, "13.0", "sm_90a"));
  EXPECT_NE(base, detail::CubinCacheKey("n", "src2", {"-DA"}, "13.0", "sm_90a"));
  EXPECT_NE(base, detail::CubinCacheKey("n", "src", {"-DB"}, "13.0", "sm_90a"));
  EXPECT_NE(base, detail::CubinCacheKey("n", "src", {"-DA"}, "13.1", "sm_90a"));
  EXPECT_NE(base, detail::CubinCacheKey("n", "src", {"-DA"}, "13.0", "sm_90"));
  // Field boundaries matter: ("-DA", "-DB") is not ("-DA -DB").
  EXPECT_NE(detail::CubinCacheKey("n", "s", {"-DA", "-DB"}, "v", "a"),
            detail::CubinCacheKey("n", "s", {"-DA -DB"}, "v", "a"));
}

// Sets an environment variable for one scope, restoring the old value after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) ::setenv(name, value, 1); else ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1); else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(CubinCache, DefaultFolderFollowsEnvironment) {
  ScopedEnv home("HOME", "/home/u");
  {
    ScopedEnv a("FLASHTUNE_CACHE_DIR", "/tmp/ftc");
    ScopedEnv b("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(Compiler::DefaultCacheDir(), "/tmp/ftc");
  }
  {
    ScopedEnv a("FLASHTUNE_CACHE_DIR", nullptr);
    ScopedEnv b("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(Compiler::DefaultCacheDir(), "/xdg/flashtune");
  }
  {
    ScopedEnv a("FLASHTUNE_CACHE_DIR", nullptr);
    ScopedEnv b("XDG_CACHE_HOME", nullptr);
    EXPECT_EQ(Compiler::DefaultCacheDir(), "/home/u/.cache/flashtune");
    EXPECT_EQ(Compiler({}).cache_dir(), "/home/u/.cache/flashtune");
  }
  EXPECT_EQ(Compiler({.cache_dir = "-", .threads = 0}).cache_dir(), "");
}

}  // namespace
}  // namespace flashtune
