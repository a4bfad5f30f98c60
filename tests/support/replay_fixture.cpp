#include "tests/support/replay_fixture.h"
#include "flashtune/replay_measurer.h"

#include "cache/csv.h"
#include "flashtune/space.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

namespace flashtune::testing {

std::vector<RecordedRow> SyntheticRows(const Problem& p, uint32_t seed) {
  std::mt19937 rng(seed);
  // Optimum: block_m 128, block_n 128 or 64, warps 8 or 4, stages 3 or 2 depending on the seed.
  const int bm = 128, bn = (seed % 2) ? 128 : 64, w = (seed % 3) ? 8 : 4, s = (seed % 5) ? 3 : 2;
  std::uniform_real_distribution<double> noise(-0.005, 0.005);
  const double base = p.Flops() / (300e12) * 1e6;  // 300 TFLOP/s at the optimum
  std::vector<RecordedRow> rows;
  // The landscape is over fa2_fwd's parameters; other families are not part of it.
  SpaceOptions fa2;
  fa2.families = {"fa2_fwd"};
  const auto space = EnumerateSpace(ClassOf(p), fa2);  // held: the loop must not iterate a temporary
  for (const Variant& v : *space) {
    double penalty = 1 + 0.15 * std::abs(std::log2(double(v.Param("br")) / bm)) +
                     0.12 * std::abs(std::log2(double(v.Param("bc")) / bn)) + 0.10 * std::abs(std::log2(double(v.Param("w")) / w)) +
                     0.04 * std::abs(v.Param("s") - s);
    RecordedRow r;
    r.problem = p;
    r.variant = v;
    r.median_us = base * penalty * (1 + noise(rng));
    r.iqr_us = r.median_us * 0.003;
    rows.push_back(r);
  }
  return rows;
}

std::string ReplayCsv(const std::vector<RecordedRow>& rows) {
  std::string out =
      "dtype,head_dim,causal,batch,seqlen_q,seqlen_k,heads_q,heads_kv,layout,variant,status,median_us,iqr_us,phase,"
      "message\n";
  char buf[512];
  for (const auto& r : rows) {
    std::snprintf(buf, sizeof buf, "%s,%d,%d,%lld,%lld,%lld,%lld,%lld,%s,%s,%s,%.6f,%.6f,%s,",
                  std::string(DTypeName(r.problem.dtype)).c_str(), r.problem.head_dim, r.problem.causal ? 1 : 0,
                  (long long)r.problem.batch, (long long)r.problem.seqlen_q, (long long)r.problem.seqlen_k,
                  (long long)r.problem.heads_q, (long long)r.problem.heads_kv,
                  std::string(LayoutName(r.problem.layout)).c_str(), r.variant.Uri().c_str(),
                  r.status.c_str(), r.median_us, r.iqr_us, r.phase.c_str());
    out += buf + detail::CsvField(r.message) + "\n";
  }
  return out;
}

std::string TempDir(const std::string& name) {
  // ctest runs tests in parallel, one process each: the pid keeps same-named folders apart.
  auto dir = std::filesystem::path(FLASHTUNE_BINARY_DIR) / "test_tmp" / (name + "." + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

std::string WriteTempFile(const std::string& name, const std::string& text) {
  auto dir = std::filesystem::path(FLASHTUNE_BINARY_DIR) / "test_tmp";
  std::filesystem::create_directories(dir);
  auto path = (dir / name).string();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::vector<Problem> SmallProblemSet() {
  ProblemSetOptions o;
  o.head_dims = {64, 128};
  o.seqlens = {512, 2048};
  return *MakeProblemSet(o);
}

std::string ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text;
}

int RunShell(const std::string& command) {
  int rc = std::system(command.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TuneOptions ReplayTuneOptions(const std::string& db, std::vector<Problem> problems, ReplayMeasurer* space) {
  TuneOptions o;
  o.db_path = db;
  o.problems = std::move(problems);
  o.enumerate = [space](const Problem& p, const DeviceRecord&) -> Result<std::vector<Variant>> { return space->Variants(p); };
  return o;
}

}  // namespace flashtune::testing
