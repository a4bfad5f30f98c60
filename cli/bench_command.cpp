// `flashtune bench`: verify and time one variant, or every variant of a class, on one shape,
// through the same GPU measurer the tuner uses (worker process, CUDA events, median of >= 20).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "cli/command.h"
#include "cli/json.h"
#include "flashtune/gpu_measurer.h"
#include "flashtune/problem_set.h"
#include "flashtune/space.h"

namespace flashtune::cli {
namespace {

namespace po = boost::program_options;

int Fail(const Status& s) {
  std::fprintf(stderr, "flashtune bench: %s\n", s.ToString().c_str());
  return s.code() == Code::kInvalidArgument ? kExitUsage : kExitFailure;
}

int RunBench(const std::vector<std::string>& args) {
  po::options_description desc("flashtune bench [options]");
  std::string dtype = "bf16", variant_uri = "all";
  int head_dim = 128, device = 0, reps = 20;
  int64_t batch = 1, seqlen_q = 0, seqlen_k = 0, heads_q = 0, heads_kv = 0;
  desc.add_options()
      ("help,h", "show this help")
      ("dtype", po::value(&dtype), "bf16 | f16 (default bf16)")
      ("head-dim", po::value(&head_dim), "32, 64, 96, 128, 160, 192, 224 or 256 (default 128)")
      ("causal", "causal mask, aligned bottom-right")
      ("batch", po::value(&batch), "B (default 1)")
      ("seqlen-q", po::value(&seqlen_q)->required(), "Nq")
      ("seqlen-k", po::value(&seqlen_k), "Nk (default Nq)")
      ("heads-q", po::value(&heads_q)->required(), "Hq")
      ("heads-kv", po::value(&heads_kv), "Hkv (default Hq)")
      ("variant", po::value(&variant_uri), "a variant URI, or all (default): the whole space of the class")
      ("device", po::value(&device), "GPU index (default 0)")
      ("reps", po::value(&reps), "timed launches, at least 20 (default 20)")
      ("json", "one JSON object per variant instead of a table");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(desc).run(), vm);
    if (vm.count("help")) {
      std::cout << desc << "\n";
      return kExitOk;
    }
    po::notify(vm);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flashtune bench: %s\n(see flashtune bench --help)\n", e.what());
    return kExitUsage;
  }
  auto parsed_dtype = ParseDType(dtype, "--dtype");
  if (!parsed_dtype.ok()) return Fail(parsed_dtype.status());
  if (reps < 20) return Fail(Status(Code::kInvalidArgument, "--reps must be at least 20"));
  Problem problem{*parsed_dtype, head_dim, vm.count("causal") > 0, batch, seqlen_q,
                  seqlen_k > 0 ? seqlen_k : seqlen_q, heads_q, heads_kv > 0 ? heads_kv : heads_q};
  Status valid = ValidateProblem(problem);
  if (!valid.ok()) return Fail(valid);

  std::vector<Variant> variants;
  if (variant_uri == "all") {
    auto space = EnumerateSpace(ClassOf(problem));
    if (!space.ok()) return Fail(space.status());
    variants = *space;
  } else {
    auto v = Variant::FromUri(variant_uri);
    if (!v.ok()) return Fail(Status(Code::kInvalidArgument, "--variant: " + v.status().message()));
    if (ClassOf(*v).ToString() != ClassOf(problem).ToString())
      return Fail(Status(Code::kInvalidArgument, "--variant " + variant_uri + " is not of the problem's class " +
                                                     ClassOf(problem).ToString()));
    variants.push_back(*v);
  }

  GpuMeasurerOptions options;
  options.worker_executable = SelfExecutable();  // this very CLI runs the GPU worker
  options.min_reps = reps;
  options.max_reps = std::max(reps, 100);
  auto measurers = MakeGpuMeasurers({device}, options);
  if (!measurers.ok()) return Fail(measurers.status());
  Measurer& measurer = *measurers->front();

  const bool json = vm.count("json") > 0;
  if (!json) {
    std::printf("%s on %s\n", problem.ToString().c_str(), measurer.Device().name.c_str());
    std::printf("%-46s %-16s %10s %9s %8s %5s %6s\n", "variant", "status", "median_us", "iqr_us", "TFLOP/s", "regs",
                "spill");
  }
  int failed = 0;
  double best_tflops = 0;
  std::string best;
  for (const Variant& v : variants) {
    auto m = measurer.Measure(problem, v);
    if (!m.ok()) return Fail(m.status());
    const bool ok = m->status.ok();
    const double tflops = ok && m->median_us > 0 ? problem.Flops() / (m->median_us * 1e-6) / 1e12 : 0;
    failed += !ok;
    if (tflops > best_tflops) best_tflops = tflops, best = v.Uri();
    if (json) {
      std::printf("{\"variant\":%s,\"status\":%s,\"median_us\":%.3f,\"iqr_us\":%.3f,\"tflops\":%.2f,\"reps\":%d,"
                  "\"registers\":%d,\"spill_bytes\":%d,\"message\":%s}\n",
                  JsonString(v.Uri()).c_str(), JsonString(CodeName(m->status.code())).c_str(), m->median_us,
                  m->iqr_us, tflops, m->reps, m->registers, m->spill_bytes, JsonString(m->status.message()).c_str());
    } else {
      std::printf("%-46s %-16s %10.1f %9.1f %8.1f %5d %6d\n", v.Uri().c_str(),
                  std::string(CodeName(m->status.code())).c_str(), m->median_us, m->iqr_us, tflops, m->registers,
                  m->spill_bytes);
      if (!ok) std::printf("    %s\n", m->status.message().c_str());
    }
    std::fflush(stdout);
  }
  if (!json && !best.empty()) std::printf("best: %s %.1f TFLOP/s\n", best.c_str(), best_tflops);
  return failed == int(variants.size()) ? kExitFailure : kExitOk;
}

}  // namespace

FT_CLI_COMMAND("bench", "verify and time variants of one shape on the GPU (TFLOP/s)", RunBench);

}  // namespace flashtune::cli
