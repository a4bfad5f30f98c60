// `flashtune tune`: tune a problem set into the database. Without a GPU backend it runs on
// recorded timings (--replay FILE) or lists the work (--dry-run).
#include <unistd.h>

#include <algorithm>

#include <boost/program_options.hpp>
#include <charconv>
#include <cstdio>
#include <iostream>
#include <set>
#include <sstream>

#include "cache/gpu_model.h"
#include "cli/command.h"
#include "cli/options.h"
#include "flashtune/database.h"
#include "flashtune/model_config.h"
#include "flashtune/problem_set.h"
#include "flashtune/replay_measurer.h"
#include "flashtune/shard.h"
#include "flashtune/tuner.h"
#include "flashtune/compiler.h"
#include "flashtune/cubin_store.h"
#include "flashtune/driver.h"
#include "flashtune/gpu_measurer.h"
#include "flashtune/source.h"
#include "flashtune/space.h"
#include "tuner/device_space.h"

namespace po = boost::program_options;

namespace flashtune::cli {
namespace {

int Fail(const Status& s);

// The space of each problem's class on the GPU measuring it: every family serving the GPU's
// arch, within its shared memory (each GPU of a mixed machine searches its own). Without a GPU
// (dry run, compile only): `arch` and `max_smem_bytes`.
EnumerateFn DefaultEnumerate(const std::string& arch = "sm_90a", int64_t max_smem_bytes = kDefaultMaxSmemBytes) {
  return [arch, max_smem_bytes](const Problem& p, const DeviceRecord& device) -> Result<std::vector<Variant>> {
    SpaceOptions no_gpu;
    no_gpu.arch = arch;
    no_gpu.max_smem_bytes = max_smem_bytes;
    return EnumerateSpaceFor(p, SpaceOptionsOn(device, no_gpu));
  };
}

// The GPU a dry run plans for: the first of --devices (all: GPU 0), as its worker would report it
// (so winners it already has are skipped, and the space is its arch's); empty without a driver
// or that GPU.
DeviceRecord DryRunDevice(const std::vector<int>& device_list) {
  auto driver = Driver::Load();
  if (!driver.ok()) return {};
  auto info = (*driver)->Device(device_list.empty() ? 0 : device_list.front());
  if (!info.ok()) return {};
  return DeviceRecordOf(*info, (*driver)->VersionString());
}

// Without a GPU: compile every candidate of the problem set for `arch` and keep the cubins in
// the database, so a later run on a GPU of that arch starts warm. Nothing is timed.
int CompileOnly(const TuneOptions& options, const std::string& arch, const std::string& why) {
  auto db = Database::Open(options.db_path);
  if (!db.ok()) return Fail(db.status());
  Compiler compiler(Compiler::Options{});
  std::set<std::string> seen;
  std::vector<Variant> variants;
  for (const Problem& p : options.problems) {
    auto space = options.enumerate(p, DeviceRecord{});  // for `arch` (DefaultEnumerate's)
    if (!space.ok()) return Fail(space.status());
    for (const Variant& v : *space)
      if (seen.insert(v.Uri()).second) variants.push_back(v);
  }
  // Warm the on-disk cache in parallel, then store each cubin (cache hits) in the database.
  std::vector<CompileRequest> requests;
  for (const Variant& v : variants) {
    auto source = GenerateSource(v);
    if (source.ok()) requests.push_back(GeneratedSourceRequest(source->uri, source->text, arch));
  }
  compiler.CompileMany(requests);
  int stored = 0, failed = 0;
  for (const Variant& v : variants) {
    auto record = LoadOrCompileCubin(**db, compiler, v, arch);
    if (record.ok()) {
      ++stored;
    } else {
      ++failed;
      std::fprintf(stderr, "flashtune tune: %s\n", record.status().ToString().c_str());
    }
  }
  std::printf("flashtune: compiled %d variant(s) for %s into %s (%d failed); %s, so nothing was timed: "
              "timing needs a CUDA GPU.\n", stored, arch.c_str(), options.db_path.c_str(), failed, why.c_str());
  return failed > 0 ? kExitFailure : kExitOk;
}

template <typename T>
Result<std::vector<T>> SplitList(const std::string& text, const char* what, Result<T> (*parse)(std::string_view)) {
  std::vector<T> out;
  // getline drops a trailing empty item: "512," would silently be "512".
  if (!text.empty() && (text.front() == ',' || text.back() == ',' || text.find(",,") != std::string::npos))
    return Status(Code::kInvalidArgument, std::string(what) + " '" + text + "': an empty item; give a comma list like 1,2");
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto v = parse(item);
    if (!v.ok()) return Status(Code::kInvalidArgument, std::string(what) + ": " + v.status().message());
    out.push_back(*v);
  }
  if (out.empty()) return Status(Code::kInvalidArgument, std::string(what) + ": empty list");
  return out;
}

// Built with += : g++ 12 warns falsely (-Wrestrict) on "lit" + std::string(view) here.
std::string Quoted(std::string_view s, const char* rest) {
  std::string out = "'";
  out += s;
  out += "'";
  out += rest;
  return out;
}

Result<int64_t> ParseNonNegative(std::string_view s) {
  int64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || v < 0)
    return Status(Code::kInvalidArgument, Quoted(s, " is not a non-negative integer"));
  return v;
}
Result<int64_t> ParsePositive(std::string_view s) {
  auto v = ParseNonNegative(s);
  if (v.ok() && *v == 0) return Status(Code::kInvalidArgument, Quoted(s, " is not a positive integer"));
  return v;
}
Result<DType> ParseDTypeItem(std::string_view s) { return ParseDType(s); }
Result<bool> ParseCausalItem(std::string_view s) { return ParseCausal(s, "item"); }

int Fail(const Status& s) {
  std::fprintf(stderr, "flashtune tune: %s\n", s.ToString().c_str());
  return s.code() == Code::kInvalidArgument ? kExitUsage : kExitFailure;
}

int RunTune(const std::vector<std::string>& args) {
  po::options_description desc("flashtune tune [options]");
  std::string db_path, dtypes, head_dims, causal, seqlens, seqlens_k, set_file, strategy, per_problem, total,
      devices, replay, arch, model, shard, decode, operation, decode_batches, decode_layouts, retime_order;
  int64_t hidden = 2048, tokens = 16384, heads_kv = 0;
  int top_k = 3, retime_rounds = 0, delay_ms = 0;
  double retime_warmup_ms = GpuMeasurerOptions().retime_warmup_ms;
  desc.add_options()
      ("help,h", "show this help")
      ("db", po::value(&db_path), "database file (default $FLASHTUNE_DB or ./flashtune.db)")
      ("dtypes", po::value(&dtypes), "comma list of bf16,f16 (default both)")
      ("head-dims", po::value(&head_dims),
       "comma list (default 64,96,128,192,256); without --hidden a head dim that does not divide 2048 gets the "
       "nearest head count")
      ("causal", po::value(&causal)->implicit_value("1"), "comma list of 0, 1, true, false (default 0,1)")
      ("seqlens-q", po::value(&seqlens), "Nq values (default 512,1024,2048,4096,8192,16384)")
      ("seqlens-k", po::value(&seqlens_k), "Nk values crossed with every Nq (default Nk = Nq)")
      ("hidden", po::value(&hidden), "Hq * D (default 2048)")
      ("tokens", po::value(&tokens), "B * Nq (default 16384)")
      ("heads-kv", po::value(&heads_kv), "K/V heads for GQA/MQA (default Hq)")
      ("decode", po::value(&decode)->default_value("auto"),
       "decode buckets (problem_set.h's MakeDecodeSet: B 1, 8, 64 x keys 2k-128k, one query token, dense "
       "and paged K/V): auto (with no shape option, the default set's Llama-3-8B-shaped ones and the GQA-8 d128 "
       "causal buckets of DefaultGqaProblems; with --model, that model's, keys up to its context; with other "
       "shape options, none), only (just those; --causal, --seqlens-q (1 to 16 query tokens), --seqlens-k "
       "(keys), --dtypes, --head-dims, --hidden (Hq = hidden / D) and --heads-kv then change the default set's "
       "bf16, d128, Hq 32, Hkv 8), none")
      ("decode-batches", po::value(&decode_batches), "the decode problems' batch sizes (default 1,8,64)")
      ("decode-layouts", po::value(&decode_layouts),
       "the decode problems' K/V: dense, paged or both (default dense,paged; each its own bucket)")
      ("operation", po::value(&operation),
       "fwd (the forward pass), bwd (the backward pass: dq, dk, dv) or both: which pass each shape is tuned for "
       "(decode and GQA buckets are forward only). Default: fwd, and the default set (no shape option) adds "
       "the backward buckets of DefaultBackwardProblems")
      ("problem-set", po::value(&set_file), "problem-set file (one problem per line; see problem_set.h)")
      ("model", po::value(&model),
       "a Hugging Face config.json: tune that model's heads, K/V heads and head dim over the sequence "
       "lengths that fit its context (its torch_dtype unless --dtypes)")
      ("shard", po::value(&shard),
       "K/N: tune only the K-th of N deterministic parts of the problem set (join the databases with "
       "`flashtune db merge`)")
      ("strategy", po::value(&strategy)->default_value("auto"),
       "auto (exhaustive for d128 forward prefill without GQA, budgeted for the rest) | exhaustive | budgeted")
      ("budget-per-problem", po::value(&per_problem), "N measurements, P% of the space, or Ns/Nm")
      ("budget-total", po::value(&total), "N measurements or Ns/Nm over the whole run")
      ("devices", po::value(&devices)->default_value("all"), "all | comma list of device indices")
      ("retune", "re-measure problems that already have a winner, and recorded candidates")
      ("dry-run", "list what would be compiled and measured; measure nothing")
      ("compile-only", "compile every candidate into the cache and database; time nothing (no GPU needed)")
      ("arch", po::value(&arch), "target for --compile-only or when there is no GPU (default sm_90a)")
      ("replay", po::value(&replay), "measure from recorded timings (CSV/JSON as written by `db export`)")
      ("replay-delay-ms", po::value(&delay_ms), "sleep per replayed measurement (testing)")
      ("top-k", po::value(&top_k), "finalists re-timed in shuffled order (default 3)")
      ("retime-rounds", po::value(&retime_rounds),
       "most re-timing rounds, 1 to 10 (default: 3 for exhaustive, 1 for budgeted); a finalist's "
       "time is its median round, and rounds stop once the leader is 3% ahead")
      ("retime-warmup-ms", po::value(&retime_warmup_ms),
       "GPU load before each problem's re-timing, in ms, 0 to 5000 (default 25, as every "
       "measurement): longer times the finalists at the clock a sustained workload gets (a card at "
       "its power cap)")
      ("retime-order", po::value(&retime_order),
       "interleaved (default: a problem's finalists timed in alternating groups of launches, each at the "
       "same clock and temperature) or one-by-one (each warmed up and timed alone, in turn)");
  po::variables_map vm;
  // One vocabulary (singular for one shape, plural for lists): --seqlens-q, like --seqlens-k.
  if (Status parsed = ParseCommandLine(RenameDeprecated(args, {{"seqlens", "seqlens-q"}}, "flashtune tune"), desc, &vm);
      !parsed.ok()) {
    std::fprintf(stderr, "flashtune tune: %s\n", parsed.message().c_str());
    return kExitUsage;
  }
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return kExitOk;
  }
  if (vm.count("db") && db_path.empty())
    return Fail(Status(Code::kInvalidArgument, "--db '': give a file (without --db: $FLASHTUNE_DB, else ./flashtune.db)"));
  if (top_k < 1 || top_k > 100)
    return Fail(Status(Code::kInvalidArgument, "--top-k " + std::to_string(top_k) + ": allowed 1 to 100 (1: no re-timing)"));
  if (delay_ms < 0)
    return Fail(Status(Code::kInvalidArgument, "--replay-delay-ms " + std::to_string(delay_ms) + ": allowed 0 or more"));
  if (vm.count("replay-delay-ms") && replay.empty())
    return Fail(Status(Code::kInvalidArgument, "--replay-delay-ms is only for --replay"));
  if (vm.count("retime-warmup-ms")) {
    if (!(retime_warmup_ms >= 0 && retime_warmup_ms <= 5000)) {
      char given[32];
      std::snprintf(given, sizeof given, "%g", retime_warmup_ms);
      return Fail(Status(Code::kInvalidArgument, std::string("--retime-warmup-ms ") + given + ": allowed 0 to 5000 (ms)"));
    }
    if (!replay.empty())
      return Fail(Status(Code::kInvalidArgument, "--retime-warmup-ms is for GPU re-timing; --replay times nothing"));
    if (top_k == 1)
      return Fail(Status(Code::kInvalidArgument, "--retime-warmup-ms with --top-k 1: there is no re-timing"));
  }
  if (vm.count("retime-order")) {
    if (retime_order != "interleaved" && retime_order != "one-by-one")
      return Fail(Status(Code::kInvalidArgument,
                         "--retime-order '" + retime_order + "': allowed interleaved or one-by-one"));
    if (!replay.empty())
      return Fail(Status(Code::kInvalidArgument, "--retime-order is for GPU re-timing; --replay times nothing"));
    if (top_k == 1) return Fail(Status(Code::kInvalidArgument, "--retime-order with --top-k 1: there is no re-timing"));
  }
  TuneOptions options;
  options.db_path = db_path.empty() ? DefaultDatabasePath() : db_path;
  options.strategy = strategy;
  options.retune = vm.count("retune") > 0;
  options.retime_top_k = top_k;
  options.retime_rounds = retime_rounds;
  {
    Status valid = ValidateTuneOptions(options);  // before any GPU worker starts
    if (!valid.ok()) return Fail(valid);
    auto pp = ParseBudget(per_problem, "--budget-per-problem");
    if (!pp.ok()) return Fail(pp.status());
    options.per_problem = *pp;
    auto tt = ParseBudget(total, "--budget-total");
    if (!tt.ok()) return Fail(tt.status());
    if (tt->fraction >= 0) return Fail(Status(Code::kInvalidArgument, "--budget-total: a percentage is only allowed per problem"));
    options.total = *tt;
  }
  std::vector<int> device_list;
  if (devices != "all") {
    auto d = SplitList<int64_t>(devices, "--devices", ParseNonNegative);
    if (!d.ok()) return Fail(Status(Code::kInvalidArgument, d.status().message() + "; allowed: all or e.g. 0,1"));
    for (int64_t x : *d) {
      if (std::find(device_list.begin(), device_list.end(), int(x)) != device_list.end())
        return Fail(Status(Code::kInvalidArgument, "--devices " + devices + ": device " + std::to_string(x) + " twice"));
      device_list.push_back(int(x));
    }
    // Replayed devices are names only; real ones must exist, and without a GPU there are none.
    if (replay.empty()) {
      auto driver = Driver::Load();
      const int count = driver.ok() ? (*driver)->device_count() : 0;
      for (int x : device_list)
        if (x >= count)
          return Fail(Status(Code::kInvalidArgument,
                             "--devices " + devices + ": there is no GPU " + std::to_string(x) + " here; allowed: all" +
                                 (count > 0 ? ", or indices 0 to " + std::to_string(count - 1) : " (no CUDA GPU found)")));
    }
  }

  // Measurers: replay or GPU.
  std::vector<std::unique_ptr<Measurer>> measurers;
  std::unique_ptr<ReplayMeasurer> replay_space;
  if (!replay.empty()) {
    size_t n = device_list.empty() ? 1 : device_list.size();
    for (size_t i = 0; i < n; ++i) {
      ReplayMeasurer::Options ro;
      ro.device.uuid = "replay-" + std::to_string(device_list.empty() ? 0 : device_list[i]);
      ro.delay_ms = delay_ms;
      auto m = ReplayMeasurer::FromFile(replay, ro);
      if (!m.ok()) return Fail(m.status());
      measurers.push_back(std::move(*m));
    }
    auto m = ReplayMeasurer::FromFile(replay, {});
    if (!m.ok()) return Fail(m.status());
    replay_space = std::move(*m);
    options.enumerate = [space = replay_space.get()](const Problem& p, const DeviceRecord&) -> Result<std::vector<Variant>> {
      return space->Variants(p);
    };
  } else {
    options.enumerate = DefaultEnumerate();
  }

  if (decode != "auto" && decode != "only" && decode != "none")
    return Fail(Status(Code::kInvalidArgument, "--decode '" + decode + "' is not allowed; allowed: auto, only, none"));
  // The default set (no shape option, no --operation) carries its own backward buckets.
  const bool default_backward = !vm.count("operation");
  if (operation.empty()) operation = "fwd";
  if (operation != "fwd" && operation != "bwd" && operation != "both")
    return Fail(Status(Code::kInvalidArgument, "--operation '" + operation + "' is not allowed; allowed: fwd, bwd, both"));
  if (operation == "bwd" && decode == "only")
    return Fail(Status(Code::kInvalidArgument, "--decode only and --operation bwd exclude each other: decode is a forward "
                                               "call"));
  const bool decode_given = !vm["decode"].defaulted();
  const bool decode_shape_given = vm.count("decode-batches") || vm.count("decode-layouts");
  if (!set_file.empty() && (decode_given || decode_shape_given))
    return Fail(Status(Code::kInvalidArgument, "--problem-set FILE lists the problems, decode ones included (seqlen_q "
                                               "<= 16, layout=paged); drop --decode, --decode-batches, --decode-layouts"));
  if (decode_shape_given && (decode == "none" || operation == "bwd"))
    return Fail(Status(Code::kInvalidArgument, "--decode-batches and --decode-layouts shape decode problems; this run "
                                               "has none (--decode none or --operation bwd)"));
  if (decode == "only" && vm.count("tokens"))
    return Fail(Status(Code::kInvalidArgument, "--tokens sizes prefill batches (B = tokens / Nq); with --decode only "
                                               "give --decode-batches"));
  // The decode problems' options; `shape` (--decode only): the parsed shape options, whose
  // --causal, --seqlens-q and --seqlens-k then describe them instead of the prefill problems.
  auto DecodeOptions = [&](const ProblemSetOptions* shape) -> Result<DecodeSetOptions> {
    DecodeSetOptions d;
    if (shape != nullptr) {
      if (vm.count("causal")) d.causal = shape->causal;
      if (vm.count("seqlens-q")) d.seqlens_q = shape->seqlens;
      if (vm.count("seqlens-k")) d.keys = shape->seqlens_k;
    }
    if (vm.count("decode-batches")) {
      auto v = SplitList<int64_t>(decode_batches, "--decode-batches", ParsePositive);
      if (!v.ok()) return v.status();
      d.batches = *v;
    }
    if (vm.count("decode-layouts")) {
      auto v = SplitList<Layout>(decode_layouts, "--decode-layouts", ParseTunedLayout);
      if (!v.ok()) return v.status();
      d.layouts = *v;
    }
    return d;
  };
  auto Named = [](const Status& s, const char* what) {  // MakeDecodeSet's option names are the CLI's
    return Status(s.code(), std::string(what) + ": " + s.message());
  };
  // The shapes for the chosen pass(es): backward copies after (or instead of) the forward ones.
  auto ForOperation = [&](std::vector<Problem> shapes) {
    if (operation == "fwd") return shapes;
    std::vector<Problem> out = operation == "both" ? shapes : std::vector<Problem>{};
    for (Problem p : shapes) {
      p.operation = Operation::kBackward;
      out.push_back(p);
    }
    return out;
  };
  // The shape options given on the command line, over the defaults.
  auto ShapeOptions = [&]() -> Result<ProblemSetOptions> {
    ProblemSetOptions pso;
    if (vm.count("dtypes")) {
      auto v = SplitList<DType>(dtypes, "--dtypes", ParseDTypeItem);
      if (!v.ok()) return v.status();
      pso.dtypes = *v;
    }
    if (vm.count("head-dims")) {
      auto v = SplitList<int64_t>(head_dims, "--head-dims", ParsePositive);
      if (!v.ok()) return v.status();
      pso.head_dims.assign(v->begin(), v->end());
    }
    if (vm.count("causal")) {
      auto v = SplitList<bool>(causal, "--causal", ParseCausalItem);
      if (!v.ok()) return v.status();
      pso.causal = *v;
    }
    if (vm.count("seqlens-q")) {
      auto v = SplitList<int64_t>(seqlens, "--seqlens-q", ParsePositive);
      if (!v.ok()) return v.status();
      pso.seqlens = *v;
    }
    if (vm.count("seqlens-k")) {
      auto v = SplitList<int64_t>(seqlens_k, "--seqlens-k", ParsePositive);
      if (!v.ok()) return v.status();
      pso.seqlens_k = *v;
    }
    pso.hidden = hidden;
    pso.tokens = tokens;
    pso.heads_kv = heads_kv;
    pso.exact_hidden = vm.count("hidden") > 0;  // a hidden the user chose is kept, not fitted
    return pso;
  };
  // Problems: a file, else a model, else the options, else (replay without shape options) the
  // recorded ones.
  const bool shape_given = vm.count("dtypes") || vm.count("head-dims") || vm.count("causal") || vm.count("seqlens-q") ||
                           vm.count("seqlens-k") || vm.count("hidden") || vm.count("tokens") || vm.count("heads-kv");
  if (!set_file.empty() && (shape_given || !model.empty()))
    return Fail(Status(Code::kInvalidArgument, "--problem-set FILE lists the problems; drop --model, --dtypes, "
                                               "--head-dims, --causal, --seqlens-q, --seqlens-k, --hidden, --tokens, "
                                               "--heads-kv"));
  if (!model.empty() && (vm.count("head-dims") || vm.count("hidden") || vm.count("heads-kv")))
    return Fail(Status(Code::kInvalidArgument, "--model FILE gives the heads, K/V heads and head dim; drop --head-dims, "
                                               "--hidden, --heads-kv (--dtypes, --causal, --seqlens-q, --seqlens-k and "
                                               "--tokens still apply)"));
  if (!set_file.empty()) {
    std::vector<std::string> notices;
    auto ps = LoadProblemSetFile(set_file, &notices);
    if (!ps.ok()) return Fail(ps.status());
    for (const std::string& n : notices) std::fprintf(stderr, "flashtune tune: %s\n", n.c_str());
    options.problems = ForOperation(*ps);
  } else if (!model.empty()) {
    auto shape = LoadModelConfig(model);
    if (!shape.ok()) return Fail(shape.status());
    auto pso = ShapeOptions();
    if (!pso.ok()) return Fail(pso.status());
    auto ps = ModelProblemSet(*shape, *pso, /*use_model_dtype=*/!vm.count("dtypes"));
    if (!ps.ok()) return Fail(Status(Code::kInvalidArgument, "--model " + model + ": " + ps.status().message()));
    if (decode != "only") options.problems = ForOperation(*ps);
    if (operation != "bwd" && decode != "none") {  // a model is tuned for inference: its decode steps too
      auto dopts = DecodeOptions(decode == "only" ? &*pso : nullptr);
      if (!dopts.ok()) return Fail(dopts.status());
      auto d = ModelDecodeSet(*shape, pso->dtypes, *dopts, /*use_model_dtype=*/!vm.count("dtypes"));
      if (!d.ok()) return Fail(Named(d.status(), ("--model " + model).c_str()));
      options.problems.insert(options.problems.end(), d->begin(), d->end());
    }
  } else if (replay_space && !shape_given) {
    options.problems = replay_space->Problems();
  } else {
    if (decode == "auto" && shape_given && decode_shape_given)
      return Fail(Status(Code::kInvalidArgument, "--decode-batches and --decode-layouts shape decode problems, and shape "
                                                 "options alone make none: add --decode only"));
    auto pso = ShapeOptions();
    if (!pso.ok()) return Fail(pso.status());
    if (decode != "only") {  // the prefill problems (--decode only has none to check)
      auto ps = MakeProblemSet(*pso);
      if (!ps.ok()) return Fail(ps.status());
      options.problems = ForOperation(*ps);
    }
    if (operation != "bwd" && decode != "only" && !shape_given) {  // the default set's GQA buckets go with it
      const std::vector<Problem> g = DefaultGqaProblems();
      options.problems.insert(options.problems.end(), g.begin(), g.end());
    }
    if (operation != "bwd" && decode == "only" && shape_given) {
      // The default decode configuration (problem_set.h) with what the shape options change:
      // --dtypes, --head-dims, --hidden (Hq = hidden / D), --heads-kv.
      auto dopts = DecodeOptions(&*pso);
      if (!dopts.ok()) return Fail(dopts.status());
      const std::vector<DType> decode_dtypes = vm.count("dtypes") ? pso->dtypes : std::vector<DType>{kDefaultDecodeDType};
      const std::vector<int> decode_dims = vm.count("head-dims") ? pso->head_dims : std::vector<int>{kDefaultDecodeHeadDim};
      for (DType dtype : decode_dtypes)
        for (int d : decode_dims) {
          auto heads_q = vm.count("hidden") ? HeadsFor(*pso, d) : Result<int64_t>(kDefaultDecodeHeadsQ);
          if (!heads_q.ok()) return Fail(heads_q.status());
          auto set = MakeDecodeSet(dtype, d, *heads_q, heads_kv > 0 ? heads_kv : kDefaultDecodeHeadsKv, *dopts);
          if (!set.ok()) return Fail(Named(set.status(), "--decode only"));
          options.problems.insert(options.problems.end(), set->begin(), set->end());
        }
    } else if (operation != "bwd" && (decode == "only" || (decode == "auto" && !shape_given))) {
      // The default set's (Llama-3-8B's attention: DefaultDecodeProblems), as --decode-* shape them.
      auto dopts = DecodeOptions(nullptr);
      if (!dopts.ok()) return Fail(dopts.status());
      auto d = MakeDecodeSet(kDefaultDecodeDType, kDefaultDecodeHeadDim, kDefaultDecodeHeadsQ, kDefaultDecodeHeadsKv,
                             *dopts);
      if (!d.ok()) return Fail(Named(d.status(), "--decode"));
      options.problems.insert(options.problems.end(), d->begin(), d->end());
    }
    if (default_backward && decode != "only" && !shape_given) {
      const std::vector<Problem> b = DefaultBackwardProblems();
      options.problems.insert(options.problems.end(), b.begin(), b.end());
    }
  }

  if (!shard.empty()) {
    auto part = ParseShard(shard);
    if (!part.ok()) return Fail(part.status());
    auto mine = SelectShard(options.problems, *part, options.strategy);
    if (!mine.ok()) return Fail(mine.status());
    std::fprintf(stderr, "flashtune tune: shard %d/%d: %zu of %zu problem(s)\n", part->index, part->count, mine->size(),
                 options.problems.size());
    options.problems = std::move(*mine);
    if (options.problems.empty()) return kExitOk;  // more parts than units: this one has none
  }

  // --arch: the arch table's rule (arch.h), the one `generate` applies, before anything runs.
  // Without a GPU (dry run, compile only) the candidates are pruned with the target's shared
  // memory; a GPU run prunes with its GPUs' own below.
  if (!arch.empty()) {
    auto known = ParseGpuArch(arch);
    if (!known.ok()) return Fail(Status(Code::kInvalidArgument, "--arch: " + known.status().message()));
    if (replay.empty()) options.enumerate = DefaultEnumerate(arch, known->max_smem_per_block_optin);
  }
  auto compile_only = [&](const std::string& why) { return CompileOnly(options, arch.empty() ? "sm_90a" : arch, why); };

  if (vm.count("dry-run")) {
    // Replayed: the first replayed device. Else the first local GPU unless --arch names the target.
    DeviceRecord device = !measurers.empty() ? measurers[0]->Device()
                          : arch.empty()     ? DryRunDevice(device_list)
                                             : DeviceRecord{};
    if (measurers.empty() && !device.name.empty())
      std::fprintf(stderr, "flashtune tune: dry run for GPU %d, %s (%s)\n", device_list.empty() ? 0 : device_list.front(),
                   device.name.c_str(), SpaceOptionsOn(device).arch.c_str());
    ToolchainInfo toolchain = measurers.empty() ? CurrentToolchain() : measurers[0]->Toolchain();
    auto plan = PlanTuning(options, device, toolchain);
    if (!plan.ok()) return Fail(plan.status());
    size_t total_candidates = 0, skipped = 0;
    for (const auto& p : *plan) {
      std::printf("%s  [%s]  %s\n", p.problem.ToString().c_str(), p.bucket.c_str(),
                  p.skipped ? "skip (winner present)"
                            : (std::to_string(p.to_measure.size()) + " to compile and measure" +
                               (p.recorded ? ", " + std::to_string(p.recorded) + " already recorded" : ""))
                                  .c_str());
      for (const Variant& v : p.to_measure) std::printf("    %s\n", v.Uri().c_str());
      total_candidates += p.to_measure.size();
      skipped += p.skipped;
    }
    std::printf("%zu problem(s), %zu skipped, %zu candidate(s) to compile and measure (strategy %s may measure fewer)\n",
                plan->size(), skipped, total_candidates, strategy.c_str());
    return kExitOk;
  }

  // Everything below writes the database: one that cannot be written (read-only file or
  // directory) or is damaged is refused now, before a GPU worker starts or a header is printed.
  if (auto writable = Database::Open(options.db_path); !writable.ok()) return Fail(writable.status());
  if (vm.count("compile-only")) return compile_only("--compile-only was given");
  if (measurers.empty()) {
    GpuMeasurerOptions gpu_options;
    gpu_options.worker_executable = SelfExecutable();  // this very CLI runs the GPU worker
    gpu_options.retime_warmup_ms = retime_warmup_ms;
    gpu_options.interleave_retime = retime_order != "one-by-one";
    auto gpu = MakeGpuMeasurers(device_list, gpu_options);
    if (!gpu.ok()) {
      const Code code = gpu.status().code();
      if (code == Code::kNoDriver || code == Code::kNoDevice)
        return compile_only(gpu.status().message());
      return Fail(gpu.status());
    }
    measurers = std::move(*gpu);
  }
  // Each GPU searches the space of its own arch and shared memory (DefaultEnumerate): variants
  // it cannot compile or fit are pruned, not measured.
  std::vector<DeviceRecord> tuned_devices;
  if (replay.empty())
    for (const auto& m : measurers) tuned_devices.push_back(m->Device());
  auto progress = MakeConsoleProgress(stderr, isatty(fileno(stderr)) != 0);
  options.progress = progress.get();
  options.store_winner_cubins = !tuned_devices.empty();  // real GPUs, not a replay
  auto summary = Tune(options, std::move(measurers));
  if (!summary.ok()) return Fail(summary.status());
  return summary->errors > 0 ? kExitFailure : kExitOk;
}

}  // namespace

FT_CLI_COMMAND("tune", "tune a problem set on this machine's GPUs into the database", RunTune);

}  // namespace flashtune::cli
