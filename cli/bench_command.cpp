// `flashtune bench`: verify and time one variant, several, or every variant of a class, on one
// shape, through the same GPU measurer the tuner uses (worker process, CUDA events, median of
// >= 20). With --rounds R every variant is timed R times, the order reversed each round so that
// drift of the machine (clocks, temperature) hits all variants alike: an A/B of two variants.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "cli/command.h"
#include "cli/json.h"
#include "cli/options.h"
#include "flashtune/gpu_measurer.h"
#include "flashtune/problem_set.h"
#include "flashtune/replay_measurer.h"
#include "flashtune/space.h"
#include "tuner/device_space.h"
#include "generator/family.h"

namespace flashtune::cli {
namespace {

namespace po = boost::program_options;

int Fail(const Status& s) {
  std::fprintf(stderr, "flashtune bench: %s\n", s.ToString().c_str());
  return s.code() == Code::kInvalidArgument ? kExitUsage : kExitFailure;
}

// One variant's measurements over the rounds.
struct Timed {
  Variant variant;
  Measurement first;                 // round 0: verified and timed
  std::vector<double> round_medians; // µs, one per round that succeeded
  Status failed;                     // the first failure in any round (OK when none)
};

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The variants a comma list of URIs in --variant names, checked against the problem (before any
// GPU work starts; "all" is resolved on the measuring GPU, VariantsOn).
Result<std::vector<Variant>> ParseVariants(const std::string& arg, const Problem& problem) {
  std::vector<Variant> out;
  std::stringstream list(arg);
  std::string uri;
  while (std::getline(list, uri, ',')) {
    auto v = Variant::FromUri(uri);
    if (!v.ok()) return Status(Code::kInvalidArgument, "--variant: " + v.status().message());
    if (ClassOf(*v).ToString() != ClassOf(problem).ToString())
      return Status(Code::kInvalidArgument,
                    "--variant " + uri + " is not of the problem's class " + ClassOf(problem).ToString());
    const Family* family = FindFamily(v->family);
    if (family != nullptr && family->PreferenceFor(problem) < 0)
      return Status(Code::kInvalidArgument, "--variant " + uri + ": " + v->family + " does not serve " +
                                                std::string(LayoutName(problem.layout)) + " problems like " +
                                                problem.ToString());
    if (family != nullptr && !family->ReadsLayout(*v, problem.layout))
      return Status(Code::kInvalidArgument, "--variant " + uri + " is compiled for another K/V layout than this " +
                                                std::string(LayoutName(problem.layout)) + " problem's (" +
                                                v->family + " has a variant per layout)");
    for (const Variant& seen : out)
      if (seen.Uri() == v->Uri()) return Status(Code::kInvalidArgument, "--variant names " + uri + " twice");
    out.push_back(*v);
  }
  if (out.empty()) return Status(Code::kInvalidArgument, "--variant: give a variant URI, a comma list of them, or all");
  return out;
}

// What runs on `device`: for "all", the space the tuner searches for this shape on that GPU (its
// arch's families, its shared memory); a named variant of a family that does not exist there
// is refused with the family's reason, not sent to NVRTC to fail.
Result<std::vector<Variant>> VariantsOn(const std::string& arg, const Problem& problem, std::vector<Variant> named,
                                        const DeviceRecord& device) {
  const SpaceOptions space = SpaceOptionsOn(device);
  if (arg == "all") return EnumerateSpaceFor(problem, space);
  for (const Variant& v : named)
    if (const Family* family = FindFamily(v.family); family != nullptr)
      if (std::string why = family->Unserved(ClassOf(problem), Target{space.arch, space.max_smem_bytes}); !why.empty())
        return Status(Code::kInvalidArgument, "--variant " + v.Uri() + " cannot run on " + device.name + ": " +
                                                  v.family + " " + why);
  return named;
}

// Round 0 verifies and times every variant; later rounds re-time those that passed, in
// alternating order. An error Result means the measurer cannot go on.
Result<std::vector<Timed>> TimeInRounds(Measurer& measurer, const Problem& problem,
                                        const std::vector<Variant>& variants, int rounds,
                                        const std::function<void(const Timed&)>& on_first) {
  std::vector<Timed> timed;
  for (const Variant& v : variants) {
    auto m = measurer.Measure(problem, v);
    if (!m.ok()) return m.status();
    Timed t{v, *m, {}, m->status};
    if (m->status.ok()) t.round_medians.push_back(m->median_us);
    timed.push_back(std::move(t));
    on_first(timed.back());
  }
  for (int round = 1; round < rounds; ++round) {
    std::vector<Timed*> passing;
    for (Timed& t : timed)
      if (t.failed.ok()) passing.push_back(&t);
    if (round % 2 == 1) std::reverse(passing.begin(), passing.end());
    if (passing.empty()) break;
    std::vector<Variant> order;
    for (Timed* t : passing) order.push_back(t->variant);
    auto again = measurer.Remeasure(problem, order);
    if (!again.ok()) return again.status();
    for (size_t i = 0; i < passing.size() && i < again->size(); ++i) {
      if ((*again)[i].status.ok())
        passing[i]->round_medians.push_back((*again)[i].median_us);
      else
        passing[i]->failed = (*again)[i].status;
    }
  }
  return timed;
}

int RunBench(const std::vector<std::string>& args) {
  po::options_description desc("flashtune bench [options]");
  std::string dtype = "bf16", variant_arg = "all", replay, causal_text = "0", layout_text = "dense",
              operation_text = "fwd";
  int head_dim = 128, device = 0, reps = 20, rounds = 1;
  int64_t batch = 1, seqlen_q = 0, seqlen_k = 0, heads_q = 0, heads_kv = 0;
  desc.add_options()
      ("help,h", "show this help")
      ("dtype", po::value(&dtype), "bf16 | f16 (default bf16)")
      ("head-dim", po::value(&head_dim), "32, 64, 96, 128, 160, 192, 224 or 256 (default 128)")
      ("causal", po::value(&causal_text)->implicit_value("1"), kCausalHelp)
      ("batch", po::value(&batch), "B (default 1)")
      ("seqlen-q", po::value(&seqlen_q)->required(), "Nq")
      ("seqlen-k", po::value(&seqlen_k), "Nk (default Nq)")
      ("heads-q", po::value(&heads_q)->required(), "Hq")
      ("heads-kv", po::value(&heads_kv), "Hkv (default Hq)")
      ("layout", po::value(&layout_text), "dense (default), paged or varlen: `all` is then the families serving "
                                          "that layout. Paged is timed on a pool of 16-key pages in shuffled order, "
                                          "as the tuner times it; varlen on dense tensors of the same shape (B "
                                          "sequences of Nq/Nk rows each; bench/varlen_bench.py times ragged batches)")
      ("operation", po::value(&operation_text), "fwd (the forward pass, default) | bwd (the backward pass: "
                                                "dq, dk, dv, checked against the float64 reference too)")
      ("variant", po::value(&variant_arg),
       "a variant URI, a comma list of URIs, or all (default): the space the tuner searches for the "
       "shape (a decode shape's prefill variants are named by URI)")
      ("rounds", po::value(&rounds), "time every variant this many times, alternating the order (default 1); "
                                     "the reported median is the median of the rounds' medians")
      ("device", po::value(&device), "GPU index (default 0)")
      ("reps", po::value(&reps), "timed launches per round, at least 20 (default 20)")
      ("replay", po::value(&replay), "answer from recorded timings (CSV/JSON as written by `db export`), no GPU")
      ("json", "one JSON object per variant instead of a table");
  po::variables_map vm;
  if (Status parsed = ParseCommandLine(args, desc, &vm); !parsed.ok()) {
    std::fprintf(stderr, "flashtune bench: %s\n(see flashtune bench --help)\n", parsed.message().c_str());
    return kExitUsage;
  }
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return kExitOk;
  }
  auto parsed_dtype = ParseDType(dtype, "--dtype");
  if (!parsed_dtype.ok()) return Fail(parsed_dtype.status());
  auto causal = ParseCausal(causal_text);
  if (!causal.ok()) return Fail(causal.status());
  if (reps < 20) return Fail(Status(Code::kInvalidArgument, "--reps must be at least 20"));
  if (rounds < 1 || rounds > 100) return Fail(Status(Code::kInvalidArgument, "--rounds must be 1 to 100"));
  Problem problem{*parsed_dtype, head_dim, *causal, batch, seqlen_q,
                  seqlen_k > 0 ? seqlen_k : seqlen_q, heads_q, heads_kv > 0 ? heads_kv : heads_q};
  Status valid = ValidateProblem(problem);
  if (!valid.ok()) return Fail(Status(valid.code(), WithOptionNames(valid.message())));
  auto layout = ParseLayout(layout_text, "--layout");
  if (!layout.ok()) return Fail(layout.status());
  problem.layout = *layout;
  auto operation = ParseOperation(operation_text, "--operation");
  if (!operation.ok()) return Fail(operation.status());
  problem.operation = *operation;
  if (problem.operation == Operation::kBackward && problem.layout != Layout::kDense)
    return Fail(Status(Code::kInvalidArgument, "--operation bwd: the backward pass serves the dense layout only"));
  Result<std::vector<Variant>> named =
      variant_arg == "all" ? Result<std::vector<Variant>>(std::vector<Variant>{}) : ParseVariants(variant_arg, problem);
  if (!named.ok()) return Fail(named.status());
  const Problem asked = problem;  // the variants' problem (varlen is timed as dense below)
  if (problem.layout == Layout::kVarlen) {
    // The measurer times dense and paged inputs; varlen's variants are the same kernels, which
    // read cu_seqlens through one branch (bench/varlen_bench.py times ragged batches).
    std::fprintf(stderr, "flashtune bench: timing the varlen problem's variants on dense tensors of the same shape\n");
    problem.layout = Layout::kDense;
  }

  std::unique_ptr<Measurer> owned;
  if (!replay.empty()) {
    auto m = ReplayMeasurer::FromFile(replay, {});
    if (!m.ok()) return Fail(m.status());
    owned = std::move(*m);
  } else {
    GpuMeasurerOptions options;
    options.worker_executable = SelfExecutable();  // this very CLI runs the GPU worker
    options.min_reps = reps;
    options.max_reps = std::max(reps, 100);
    auto measurers = MakeGpuMeasurers({device}, options);
    if (!measurers.ok()) return Fail(measurers.status());
    owned = std::move(measurers->front());
  }
  Measurer& measurer = *owned;
  auto variants = VariantsOn(variant_arg, asked, std::move(*named), measurer.Device());
  if (!variants.ok()) return Fail(variants.status());

  const bool json = vm.count("json") > 0;
  if (!json) {
    std::string header = problem.ToString() + " on " + measurer.Device().name;
    if (rounds > 1) header += ", " + std::to_string(rounds) + " rounds";
    std::printf("%s\n", header.c_str());
    std::printf("%-46s %-16s %10s %9s %8s %5s %6s\n", "variant", "status", "median_us",
                rounds > 1 ? "spread_%" : "iqr_us", "TFLOP/s", "regs", "spill");
  }
  auto tflops_of = [&](double us) { return us > 0 ? problem.Flops() / (us * 1e-6) / 1e12 : 0.0; };
  auto print = [&](const Timed& t) {
    const double median = Median(t.round_medians);
    const bool ok = t.failed.ok();
    const double tflops = ok ? tflops_of(median) : 0;
    const auto [lo, hi] = std::minmax_element(t.round_medians.begin(), t.round_medians.end());
    const double spread_pct = ok && median > 0 ? 100 * (*hi - *lo) / median : 0;
    if (json) {
      std::string medians;
      for (double m : t.round_medians) {
        if (!medians.empty()) medians += ',';
        medians += std::to_string(m);
      }
      std::printf("{\"variant\":%s,\"status\":%s,\"median_us\":%.3f,\"iqr_us\":%.3f,\"tflops\":%.2f,\"reps\":%d,"
                  "\"rounds\":%d,\"round_medians_us\":[%s],\"registers\":%d,\"spill_bytes\":%d,\"message\":%s}\n",
                  JsonString(t.variant.Uri()).c_str(), JsonString(CodeName(t.failed.code())).c_str(), median,
                  t.first.iqr_us, tflops, t.first.reps, int(t.round_medians.size()), medians.c_str(),
                  t.first.registers, t.first.spill_bytes, JsonString(t.failed.message()).c_str());
    } else {
      std::printf("%-46s %-16s %10.1f %9.1f %8.1f %5d %6d\n", t.variant.Uri().c_str(),
                  std::string(CodeName(t.failed.code())).c_str(), median, rounds > 1 ? spread_pct : t.first.iqr_us,
                  tflops, t.first.registers, t.first.spill_bytes);
      if (!ok) std::printf("    %s\n", t.failed.message().c_str());
    }
    std::fflush(stdout);
  };
  // One round: print each variant as it is measured (a whole space takes a while).
  auto timed = TimeInRounds(measurer, problem, *variants, rounds,
                            [&](const Timed& t) { if (rounds == 1) print(t); });
  if (!timed.ok()) return Fail(timed.status());
  if (rounds > 1)
    for (const Timed& t : *timed) print(t);

  int failed = 0;
  double best_us = 0;
  std::string best;
  for (const Timed& t : *timed) {
    if (!t.failed.ok()) {
      ++failed;
      continue;
    }
    const double us = Median(t.round_medians);
    if (best.empty() || us < best_us) best_us = us, best = t.variant.Uri();
  }
  if (!json && !best.empty()) std::printf("best: %s %.1f TFLOP/s\n", best.c_str(), tflops_of(best_us));
  return failed == int(timed->size()) ? kExitFailure : kExitOk;
}

}  // namespace

FT_CLI_COMMAND("bench", "verify and time variants of one shape on the GPU (TFLOP/s)", RunBench);

}  // namespace flashtune::cli
