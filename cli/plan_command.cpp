// `flashtune plan`: what the runtime would launch for one shape, and why.
//
// The device planned for: --device-uuid / --gpu-name pick a GPU recorded in the database (so a
// machine without a GPU can answer for the machine that tuned); else this machine's GPU 0;
// else, without a GPU, the database's only GPU model when there is exactly one; else none
// (the built-in heuristic for the sm_90 shared-memory limit).
// Exit codes: 0 answered, 1 the database could not be used, 2 bad usage (message names the option).
#include <boost/program_options.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

#include "cli/command.h"
#include "cli/json.h"
#include "cli/options.h"
#include "flashtune/driver.h"
#include "flashtune/runtime.h"
#include "flashtune/space.h"

namespace flashtune::cli {
namespace {

namespace po = boost::program_options;

int Usage(const std::string& message) {
  std::fprintf(stderr, "flashtune plan: %s\n", message.c_str());
  return kExitUsage;
}

std::string ListDevices(const std::vector<DeviceRow>& rows) {
  std::string out;
  for (const DeviceRow& r : rows) out += (out.empty() ? "" : ", ") + r.device.name + " " + r.device.uuid;
  return out.empty() ? "none" : out;
}

// The planned variant's latest measurement on the problem it was tuned on, on the planned GPU:
// what ptxas gave it (registers, shared memory, spills). nullopt for heuristic plans or when
// the database cannot say.
std::optional<TrialRecord> WinnerMeasurement(const std::string& db_path, const Plan& p) {
  if (!p.tuned_problem) return std::nullopt;
  Database::OpenOptions ro;
  ro.read_only = true;
  auto db = Database::Open(db_path, ro);
  if (!db.ok()) return std::nullopt;
  auto id = (*db)->FindProblem(*p.tuned_problem);
  if (!id.ok()) return std::nullopt;
  auto trials = (*db)->TrialsForProblem(*id);
  if (!trials.ok()) return std::nullopt;
  const TrialRow* latest = nullptr;
  for (const TrialRow& t : *trials)
    if (t.trial.status == Code::kOk && t.variant_uri == p.variant.Uri() &&
        (p.device_name.empty() || t.device_name == p.device_name) && (!latest || t.id > latest->id))
      latest = &t;
  return latest ? std::optional<TrialRecord>(latest->trial) : std::nullopt;
}

int RunPlan(const std::vector<std::string>& args) {
  std::string dtype_text, db_path, device_uuid, gpu_name, causal_text = "0", layout_text = "dense",
              operation_text = "fwd";
  int head_dim = 0;
  int64_t batch = 1, seqlen_q = 0, seqlen_k = 0, heads_q = 0, heads_kv = 0;
  po::options_description desc(
      "usage: flashtune plan --dtype bf16 --head-dim 128 [--causal 0|1] [--operation fwd|bwd] --batch B --seqlen-q N\n"
      "                      [--seqlen-k N] --heads-q H [--heads-kv H] [--layout dense|paged|varlen] [--db PATH]\n"
      "                      [--device-uuid U | --gpu-name NAME] [--json]\n\n"
      "options");
  desc.add_options()("help,h", "show this help")
      ("dtype", po::value(&dtype_text), "bf16 | f16 (required)")
      ("head-dim", po::value(&head_dim), "32, 64, 96, 128, 160, 192, 224, 256 (required)")
      ("causal", po::value(&causal_text)->implicit_value("1"), kCausalHelp)
      ("operation", po::value(&operation_text), "fwd (the forward pass, default) | bwd (the backward pass: dq, dk, dv)")
      ("batch", po::value(&batch), "B (default 1)")
      ("seqlen-q", po::value(&seqlen_q), "Nq (required)")
      ("seqlen-k", po::value(&seqlen_k), "Nk (default Nq)")
      ("heads-q", po::value(&heads_q), "Hq (required)")
      ("heads-kv", po::value(&heads_kv), "Hkv, a divisor of Hq (default Hq)")
      ("layout", po::value(&layout_text), "dense (default), paged (K/V cache pages; Nk = the longest sequence) or "
                                          "varlen (packed; Nq, Nk = the longest sequences)")
      ("db", po::value(&db_path), "database file (default $FLASHTUNE_DB or ./flashtune.db)")
      ("device-uuid", po::value(&device_uuid), "plan for this GPU of the database (by uuid)")
      ("gpu-name", po::value(&gpu_name), "plan for the database's GPU of this name (e.g. \"NVIDIA H200\")")
      ("json", "print one JSON object instead of text");
  po::variables_map vm;
  if (Status parsed = ParseCommandLine(args, desc, &vm); !parsed.ok()) {
    std::cerr << "flashtune plan: " << parsed.message() << "\n" << desc << "\n";
    return kExitUsage;
  }
  if (vm.count("help")) {
    std::cout << "flashtune plan: show which kernel the runtime would launch for a shape, and why\n"
                 "(exact tuned bucket, nearest tuned bucket, a neighbouring class's winner, or the built-in\n"
                 "heuristic), and the workspace bytes such a call must be given.\n\n"
                 "Device: --device-uuid/--gpu-name pick a GPU recorded in the database; otherwise this\n"
                 "machine's GPU 0; without a GPU, the database's only GPU model when there is exactly one;\n"
                 "otherwise the heuristic alone.\n\n"
              << desc << "\n";
    return kExitOk;
  }
  for (const char* required : {"dtype", "head-dim", "seqlen-q", "heads-q"})
    if (!vm.count(required)) return Usage(std::string("--") + required + " is required (see --help)");
  auto dtype = ParseDType(dtype_text, "--dtype");
  if (!dtype.ok()) return Usage(dtype.status().message());
  auto causal = ParseCausal(causal_text);
  if (!causal.ok()) return Usage(causal.status().message());
  if (!vm.count("seqlen-k")) seqlen_k = seqlen_q;
  if (!vm.count("heads-kv")) heads_kv = heads_q;
  auto operation = ParseOperation(operation_text, "--operation");
  if (!operation.ok()) return Usage(operation.status().message());
  auto layout = ParseLayout(layout_text, "--layout");
  if (!layout.ok()) return Usage(layout.status().message());
  Problem problem{*dtype, head_dim, *causal, batch, seqlen_q, seqlen_k, heads_q, heads_kv, *operation};
  problem.layout = *layout;
  // The runtime's own rule (ValidateProblem), checked before anything is opened.
  if (Status valid = ValidateProblem(problem); !valid.ok()) return Usage(WithOptionNames(valid.message()));
  if (!device_uuid.empty() && !gpu_name.empty()) return Usage("--device-uuid and --gpu-name exclude each other");

  if (vm.count("db") && db_path.empty())
    return Usage("--db '': give a file (without --db: $FLASHTUNE_DB, else ./flashtune.db)");
  RuntimeOptions options;
  options.db_path = db_path.empty() ? DefaultDatabasePath() : db_path;
  options.online_tuning = false;  // a one-shot answer: a background tune would die with it
  std::error_code ec;
  const bool db_exists = std::filesystem::exists(options.db_path, ec);
  // A database named on purpose (--db, $FLASHTUNE_DB) must exist, as for `db list`: a typo would
  // otherwise answer heuristically as if nothing had been tuned. Only the default may be absent.
  const char* env_db = std::getenv("FLASHTUNE_DB");
  if (!db_exists && (vm.count("db") || (env_db && *env_db))) {
    std::fprintf(stderr, "flashtune plan: not_found: database '%s' does not exist (named by %s)\n",
                 options.db_path.c_str(), vm.count("db") ? "--db" : "$FLASHTUNE_DB");
    return kExitFailure;
  }
  const char* db_state = db_exists ? "" : " (absent)";
  std::vector<DeviceRow> db_devices;
  if (db_exists) {
    Database::OpenOptions ro;
    ro.read_only = true;
    auto db = Database::Open(options.db_path, ro);
    if (!db.ok() && db.status().code() != Code::kNotFound) {
      std::fprintf(stderr, "flashtune plan: %s\n", db.status().ToString().c_str());
      return kExitFailure;
    }
    if (db.ok()) {
      auto rows = (*db)->ListDevices();
      if (!rows.ok()) {
        std::fprintf(stderr, "flashtune plan: %s\n", rows.status().ToString().c_str());
        return kExitFailure;
      }
      db_devices = std::move(*rows);
    } else {
      // Empty: a tuner is creating it; answer as the runtime does, heuristically.
      db_state = " (empty: no tuning results yet)";
    }
  }
  if (!device_uuid.empty() || !gpu_name.empty()) {
    const std::string& wanted = device_uuid.empty() ? gpu_name : device_uuid;
    const DeviceRow* found = nullptr;
    for (const DeviceRow& r : db_devices)  // the newest row wins (latest driver)
      if ((device_uuid.empty() ? r.device.name : r.device.uuid) == wanted) found = &r;
    if (found == nullptr)
      return Usage(std::string(device_uuid.empty() ? "--gpu-name" : "--device-uuid") + " '" + wanted + "' is not in " +
                   options.db_path + "; known GPUs: " + ListDevices(db_devices));
    options.device_override = found->device;
  } else if (auto driver = Driver::Load(); !(driver.ok() && (*driver)->device_count() > 0)) {
    // No GPU here: the database's GPU when it names exactly one model.
    std::vector<DeviceRecord> models;
    for (const DeviceRow& r : db_devices) {
      bool seen = false;
      for (const DeviceRecord& m : models) seen |= SameGpuModel(m, r.device);
      if (!seen) models.push_back(r.device);
    }
    if (models.size() == 1) options.device_override = models[0];
  }

  auto runtime = Runtime::Open(options);
  if (!runtime.ok()) {
    std::fprintf(stderr, "flashtune plan: %s\n", runtime.status().ToString().c_str());
    return kExitFailure;
  }
  auto plan = (*runtime)->plan(problem);
  if (!plan.ok()) {
    std::fprintf(stderr, "flashtune plan: %s\n", plan.status().ToString().c_str());
    return plan.status().code() == Code::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  const Plan& p = *plan;
  // What the call's caller-owned workspace must hold (decode's partials, the backward pass's
  // scratch, a packed or paged prefill's tile counter): the number forward() checks against.
  auto workspace = (*runtime)->workspace_size(problem);
  if (!workspace.ok()) {
    std::fprintf(stderr, "flashtune plan: %s\n", workspace.status().ToString().c_str());
    return kExitFailure;
  }
  // What it holds, part by part, for the same device's SMs (0 when none: 132, as workspace_size).
  const std::string use = WorkspaceUse(problem, (*runtime)->device().sm_count);
  const std::optional<TrialRecord> measured =
      db_exists ? WinnerMeasurement(options.db_path, p) : std::nullopt;
  if (vm.count("json")) {
    std::ostringstream o;
    o << "{\"problem\":" << ProblemJson(p.problem) << ",\"variant\":" << JsonString(p.variant.Uri())
      << ",\"source\":" << JsonString(PlanSourceName(p.source)) << ",\"bucket\":" << JsonString(p.bucket_name)
      << ",\"tuned_bucket\":" << (p.tuned_bucket.empty() ? "null" : JsonString(p.tuned_bucket))
      << ",\"tuned_problem\":" << (p.tuned_problem ? ProblemJson(*p.tuned_problem) : "null")
      << ",\"tuned_median_us\":" << (p.tuned_median_us > 0 ? std::to_string(p.tuned_median_us) : "null")
      << ",\"distance\":" << p.distance << ",\"device\":" << (p.device_name.empty() ? "null" : JsonString(p.device_name))
      << ",\"database\":" << JsonString(options.db_path) << ",\"why\":" << JsonString(p.why)
      << ",\"workspace_bytes\":" << *workspace
      << ",\"workspace_use\":" << (use.empty() ? "null" : JsonString(use)) << ",\"resources\":";
    if (measured)
      o << "{\"registers\":" << measured->registers << ",\"smem_bytes\":" << measured->smem_bytes
        << ",\"spill_bytes\":" << measured->spill_bytes << "}";
    else
      o << "null";
    o << "}";
    std::cout << o.str() << "\n";
    return kExitOk;
  }
  std::printf("problem:  %s\n", p.problem.ToString().c_str());
  std::printf("device:   %s\n", p.device_name.empty() ? "none (no GPU here, none chosen from the database)"
                                                      : p.device_name.c_str());
  std::printf("database: %s%s\n", options.db_path.c_str(), db_state);
  std::printf("bucket:   %s\n", p.bucket_name.c_str());
  std::printf("source:   %s\n", std::string(PlanSourceName(p.source)).c_str());
  std::printf("variant:  %s\n", p.variant.Uri().c_str());
  if (p.tuned_problem)
    std::printf("tuned on: %s (%s), %.1f us\n", p.tuned_problem->ToString().c_str(), p.tuned_bucket.c_str(),
                p.tuned_median_us);
  if (measured)
    std::printf("kernel:   %d registers per thread, %d B shared memory, %d B spill stores + loads\n",
                measured->registers, measured->smem_bytes, measured->spill_bytes);
  std::printf("why:      %s\n", p.why.c_str());
  if (*workspace > 0)
    std::printf("workspace: %lld bytes, caller-owned (Runtime::workspace_size, ft_workspace_size: sized for the planned "
                "GPU's SMs, 132 when none)\n"
                "           holds %s\n",
                static_cast<long long>(*workspace), use.c_str());
  else
    std::printf("workspace: none needed\n");
  return kExitOk;
}

}  // namespace

FT_CLI_COMMAND("plan", "show which kernel the runtime would launch for a shape, and why", RunPlan);

}  // namespace flashtune::cli
