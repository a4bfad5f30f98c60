// Scaling of Compiler::CompileMany with threads: wall and process CPU for N sources.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include "flashtune/compiler.h"
using namespace flashtune;
static double Cpu() { timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(int argc, char** argv) {
  int threads = std::atoi(argv[1]);
  std::vector<CompileRequest> reqs;
  for (int i = 2; i < argc; ++i) {
    std::ifstream f(argv[i]); std::stringstream ss; ss << f.rdbuf();
    reqs.push_back(GeneratedSourceRequest(argv[i], ss.str(), "sm_90a"));
  }
  Compiler c(Compiler::Options{"-", threads});
  c.Compile(reqs[0]);  // warm NVRTC's one-time init
  double c0 = Cpu(); auto w0 = std::chrono::steady_clock::now();
  auto rs = c.CompileMany(reqs);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  int ok = 0; for (auto& r : rs) ok += r.ok();
  std::printf("threads %d: %zu sources (%d ok), wall %.2f s, cpu %.2f s\n", threads, reqs.size(), ok, wall, Cpu() - c0);
}
