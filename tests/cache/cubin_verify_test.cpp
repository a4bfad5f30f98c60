// A tampered cubin in a tuning database is caught: by CubinVerifier, by `db check
// --verify-cubins`, and by `db merge`, which then merges nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "flashtune/cubin_store.h"
#include "flashtune/cubin_verify.h"
#include "flashtune/database.h"
#include "flashtune/space.h"
#include "tests/support/replay_fixture.h"

namespace flashtune {
namespace {

using namespace flashtune::testing;

// A database holding one genuine cubin (the smallest variant, for sm_80) and one that claims
// another NVRTC; its path. `genuine` receives the real cubin.
std::string MakeDatabaseWithCubins(const std::string& dir, CubinRecord* genuine) {
  const std::string path = dir + "/genuine.db";
  auto db = Database::Open(path);
  EXPECT_TRUE(db.ok()) << db.status().ToString();
  Compiler compiler(Compiler::Options{dir + "/cache", 1});
  auto space = EnumerateSpaceFor(Problem{DType::kBF16, 32, false, 1, 512, 512, 8, 8});  // prefill: fa2_fwd first
  EXPECT_TRUE(space.ok());
  auto record = LoadOrCompileCubin(**db, compiler, space->front(), "sm_80");
  EXPECT_TRUE(record.ok()) << record.status().ToString();
  *genuine = *record;
  CubinRecord other_nvrtc = *record;
  other_nvrtc.nvrtc_version = "0.1";
  EXPECT_TRUE((*db)->PutCubin(other_nvrtc).ok());
  return path;
}

// A copy of `path` whose genuine cubin has one byte flipped.
std::string Tampered(const std::string& path, const CubinRecord& genuine) {
  const std::string copy = std::filesystem::path(path).parent_path().string() + "/tampered.db";
  std::filesystem::copy_file(path, copy);
  auto db = Database::Open(copy);
  EXPECT_TRUE(db.ok()) << db.status().ToString();
  CubinRecord bad = genuine;
  bad.image[bad.image.size() / 2] ^= 0x01;
  EXPECT_TRUE((*db)->PutCubin(bad).ok());
  return copy;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(CubinVerify, VerifiesGenuineCatchesTamperedAndSaysWhatItCannotCheck) {
  const std::string dir = TempDir("cubin_verify");
  CubinRecord genuine;
  MakeDatabaseWithCubins(dir, &genuine);
  const CubinVerifier verifier;
  auto ok = verifier.Verify(genuine);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->verdict, CubinVerdict::kVerified) << ok->why;
  EXPECT_NE(ok->what.find("fa2_fwd_bf16_d32_"), std::string::npos) << ok->what;

  CubinRecord bad = genuine;
  bad.image[bad.image.size() / 2] ^= 0x01;
  auto caught = verifier.Verify(bad);
  ASSERT_TRUE(caught.ok()) << caught.status().ToString();
  EXPECT_EQ(caught->verdict, CubinVerdict::kMismatch);

  CubinRecord other = genuine;
  other.nvrtc_version = "0.1";
  auto unchecked = verifier.Verify(other);
  ASSERT_TRUE(unchecked.ok());
  EXPECT_EQ(unchecked->verdict, CubinVerdict::kNotLoadable);
  EXPECT_NE(unchecked->why.find("NVRTC 0.1"), std::string::npos) << unchecked->why;
  other = genuine;
  other.source_hash = std::string(64, 'f');
  EXPECT_EQ(verifier.Verify(other)->verdict, CubinVerdict::kNotLoadable);
}

TEST(CubinVerify, DbCheckAndMergeCatchATamperedCubin) {
  const std::string dir = TempDir("cubin_verify_cli");
  CubinRecord genuine;
  const std::string path = MakeDatabaseWithCubins(dir, &genuine);
  const std::string tampered = Tampered(path, genuine);
  const std::string out = dir + "/out.txt";
  auto run = [&](const std::string& args) {
    return RunShell("'" FLASHTUNE_CLI_PATH "' " + args + " > '" + out + "' 2>&1");
  };

  EXPECT_EQ(run("db check --verify-cubins --db " + path), 0) << ReadAll(out);
  EXPECT_NE(ReadAll(out).find("cubins: 1 verified, 0 MISMATCH, 1 not loadable by this build"), std::string::npos)
      << ReadAll(out);
  EXPECT_EQ(run("db check --verify-cubins --db " + tampered), 1) << ReadAll(out);
  EXPECT_NE(ReadAll(out).find("cubin MISMATCH: fa2_fwd_bf16_d32_"), std::string::npos) << ReadAll(out);
  EXPECT_NE(ReadAll(out).find("untrusted code"), std::string::npos) << ReadAll(out);

  // merge refuses the tampered file whole: the target is not even created.
  EXPECT_EQ(run("db merge " + tampered + " --db " + dir + "/from_tampered.db"), 1) << ReadAll(out);
  EXPECT_NE(ReadAll(out).find("not what its source compiles to"), std::string::npos) << ReadAll(out);
  EXPECT_FALSE(std::filesystem::exists(dir + "/from_tampered.db"));
  // The genuine file merges its verified cubin and leaves out the one it cannot check.
  const std::string merged = dir + "/merged.db";
  EXPECT_EQ(run("db merge " + path + " --db " + merged), 0) << ReadAll(out);
  EXPECT_NE(ReadAll(out).find("1 cubin(s) added, every one verified"), std::string::npos) << ReadAll(out);
  EXPECT_NE(ReadAll(out).find("left out 1 cubin(s)"), std::string::npos) << ReadAll(out);
  auto db = Database::Open(merged, Database::OpenOptions{true, 10000});
  ASSERT_TRUE(db.ok());
  auto cubins = (*db)->ListCubins();
  ASSERT_TRUE(cubins.ok());
  ASSERT_EQ(cubins->size(), 1u);
  EXPECT_EQ((*cubins)[0].image, genuine.image);
}

}  // namespace
}  // namespace flashtune
