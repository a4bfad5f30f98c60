// The Runtime: plan lookup (exact → nearest → heuristic), per-context kernel cache, launch.
#include "flashtune/runtime.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "flashtune/compiler.h"
#include "flashtune/cubin_store.h"
#include "flashtune/driver.h"
#include "flashtune/kernel.h"
#include "generator/family.h"
#include "flashtune/source.h"
#include "flashtune/space.h"
#include "flashtune/toolchain.h"

namespace flashtune {

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarning: return "warning";
    case LogLevel::kError: return "error";
  }
  return "unknown";
}

std::string_view PlanSourceName(PlanSource source) {
  switch (source) {
    case PlanSource::kExact: return "exact";
    case PlanSource::kNearest: return "nearest";
    case PlanSource::kHeuristic: return "heuristic";
  }
  return "unknown";
}

namespace {

// A bucket and a layout packed into one integer: the plan and launch caches' hash key (a
// paged call of a dense bucket's shape may need another family).
uint64_t BucketCode(const BucketKey& b, Layout layout) {
  return static_cast<uint64_t>(b.dtype == DType::kBF16) | (static_cast<uint64_t>(b.causal) << 1) |
         (static_cast<uint64_t>(b.head_dim & 0x3ff) << 2) | (static_cast<uint64_t>(b.seqlen_q_bucket & 0xff) << 12) |
         (static_cast<uint64_t>(b.seqlen_k_bucket & 0xff) << 20) |
         (static_cast<uint64_t>(b.batch_heads_bucket & 0xff) << 28) | (static_cast<uint64_t>(layout) << 36);
}

std::string ArchOf(const DeviceRecord& d) { return ArchFor(d.cc_major, d.cc_minor); }

std::string DescribeDevice(const DeviceRecord& d) {
  return d.name + " (cc " + std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor) + ", " +
         std::to_string(d.sm_count) + " SMs, driver " + d.driver_version + ")";
}

std::string FormatUs(double us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", us);
  return buf;
}

struct PairHash {
  size_t operator()(const std::pair<CUcontext, uint64_t>& k) const {
    return std::hash<const void*>()(k.first) ^ (std::hash<uint64_t>()(k.second) * 0x9e3779b97f4a7c15ull);
  }
};

}  // namespace

// What the runtime knows about one GPU it plans for.
struct DeviceState {
  DeviceRecord record;        // name "" when no GPU is known
  std::string arch;           // NVRTC target, "" when none
  int64_t max_smem_bytes = kDefaultMaxSmemBytes;
  std::string absent_reason;  // why there is no GPU, when record.name is ""
  bool untuned_checked = false;
  std::unordered_map<uint64_t, Plan> plans;  // by BucketCode; guarded by Impl::plan_mutex
};

struct Runtime::Impl {
  RuntimeOptions options;
  std::string path;
  ToolchainInfo toolchain;
  std::string nvrtc_version;
  Compiler compiler;

  std::mutex db_mutex;  // guards the two connections (a Database is single-threaded)
  std::unique_ptr<Database> read_db;
  std::unique_ptr<Database> write_db;
  bool reported_db_error = false;

  std::shared_mutex plan_mutex;  // guards every DeviceState's plan map and untuned flag
  std::unique_ptr<DeviceState> planning;             // plan()'s device
  std::map<int, std::unique_ptr<DeviceState>> by_ordinal;  // forward()'s devices

  // forward(): contexts first so they outlive the kernels loaded into them.
  std::mutex load_mutex;  // one cold path at a time
  struct ContextState {
    std::unique_ptr<Context> retained;  // the primary context, retained for the runtime's life
    DeviceState* device = nullptr;
  };
  std::map<CUcontext, ContextState> contexts;
  std::map<std::pair<CUcontext, std::string>, std::unique_ptr<ForwardKernel>> kernels;
  std::atomic<Driver*> driver{nullptr};  // cached after the first successful Driver::Load
  std::shared_mutex launch_mutex;
  std::unordered_map<std::pair<CUcontext, uint64_t>, const ForwardKernel*, PairHash> launch_cache;

  explicit Impl(const RuntimeOptions& o)
      : options(o), compiler(Compiler::Options{o.cache_dir, 1}) {}

  void Log(LogLevel level, const std::string& message) const {
    if (options.log) {
      options.log(level, message);
    } else if (level >= LogLevel::kWarning) {
      std::fprintf(stderr, "flashtune: %s\n", message.c_str());
    }
  }

  // Opens the read-only connection when the file has appeared. Caller holds db_mutex.
  Database* ReadDb(std::vector<std::pair<LogLevel, std::string>>* logs) {
    if (read_db) return read_db.get();
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return nullptr;
    Database::OpenOptions ro;
    ro.read_only = true;
    auto db = Database::Open(path, ro);
    if (!db.ok()) {
      if (db.status().code() == Code::kNotFound) return nullptr;  // being created: try again later
      if (!reported_db_error) {
        reported_db_error = true;
        logs->push_back({LogLevel::kError, "cannot read the tuning database: " + db.status().ToString() +
                                               "; plans are heuristic"});
      }
      return nullptr;
    }
    read_db = std::move(*db);
    return read_db.get();
  }

  std::unique_ptr<DeviceState> StateFor(const DeviceInfo& info, const Driver& driver) {
    auto s = std::make_unique<DeviceState>();
    s->record = DeviceRecord{info.name, info.uuid, info.cc_major, info.cc_minor, info.sm_count, driver.VersionString()};
    s->arch = info.Arch();
    s->max_smem_bytes = info.max_smem_per_block_optin > 0 ? info.max_smem_per_block_optin : kDefaultMaxSmemBytes;
    return s;
  }

  // Whether any winner exists for this GPU model + driver and this toolchain.
  Result<bool> HasWinners(Database& db, const DeviceRecord& device) {
    auto devices = db.ListDevices();
    if (!devices.ok()) return devices.status();
    auto toolchains = db.ListToolchains();
    if (!toolchains.ok()) return toolchains.status();
    auto winners = db.ListWinners();
    if (!winners.ok()) return winners.status();
    std::map<int64_t, bool> device_ok, toolchain_ok;
    for (const DeviceRow& d : *devices) device_ok[d.id] = SameGpuModel(d.device, device);
    for (const ToolchainRow& t : *toolchains) toolchain_ok[t.id] = t.toolchain == toolchain;
    for (const WinnerRow& w : *winners)
      if (device_ok[w.device_id] && toolchain_ok[w.toolchain_id]) return true;
    return false;
  }

  // The plan of `problem` on `device`, from the cache or computed. Emits logs unlocked.
  Result<Plan> PlanOn(DeviceState& device, const Problem& problem) {
    const BucketKey bucket = BucketOf(problem);
    const uint64_t code = BucketCode(bucket, problem.layout);
    {
      std::shared_lock lock(plan_mutex);
      auto it = device.plans.find(code);
      if (it != device.plans.end()) {
        Plan plan = it->second;
        plan.problem = problem;
        return plan;
      }
    }
    std::vector<std::pair<LogLevel, std::string>> logs;
    Result<Plan> computed = ComputePlan(device, problem, bucket, &logs);
    for (const auto& [level, message] : logs) Log(level, message);
    if (!computed.ok()) return computed;
    std::unique_lock lock(plan_mutex);
    device.plans.emplace(code, *computed);
    return computed;
  }

  Result<Plan> ComputePlan(DeviceState& device, const Problem& problem, const BucketKey& bucket,
                           std::vector<std::pair<LogLevel, std::string>>* logs) {
    Plan plan;
    plan.problem = problem;
    plan.bucket = bucket;
    plan.bucket_name = BucketString(bucket);
    plan.device_name = device.record.name;
    const bool have_device = !device.record.name.empty();
    std::optional<WinnerRow> winner;
    bool exact = false;
    bool check_untuned = false;
    {
      std::lock_guard lock(db_mutex);
      Database* db = ReadDb(logs);
      if (db != nullptr && have_device) {
        auto w = db->FindWinner(device.record, toolchain, bucket);
        if (!w.ok()) return w.status();
        if (w->has_value()) {
          winner = std::move(*w);
          exact = true;
        } else {
          auto n = db->FindNearestWinner(device.record, toolchain, bucket);
          if (!n.ok()) return n.status();
          winner = std::move(*n);
        }
      }
      {
        std::unique_lock plan_lock(plan_mutex);
        check_untuned = !device.untuned_checked;
        device.untuned_checked = true;
      }
      if (check_untuned) {
        std::string gap;
        if (!have_device) {
          gap = "no CUDA GPU to plan for (" + device.absent_reason + ")";
        } else if (db == nullptr) {
          gap = DescribeDevice(device.record) + " is not tuned: no tuning database at " + path;
        } else if (auto has = HasWinners(*db, device.record); has.ok() && !*has) {
          gap = DescribeDevice(device.record) + " is not tuned with this toolchain (nvrtc " + toolchain.nvrtc_version +
                ", flashtune " + toolchain.generator_version + ") in " + path;
        } else if (!has.ok()) {
          return has.status();
        }
        if (!gap.empty())
          logs->push_back({LogLevel::kWarning, gap + "; using built-in default kernels (run `flashtune tune`)"});
      }
    }
    const std::string who = have_device ? device.record.name : std::string("no GPU");
    std::string unfit;  // why a tuned winner cannot serve this problem's layout
    if (winner) {
      const Family* f = FindFamily(winner->variant.family);
      if (f == nullptr || f->PreferenceFor(problem) < 0) {
        unfit = "the tuned winner " + winner->variant.Uri() + " of bucket " + BucketString(winner->bucket) +
                " cannot serve " + std::string(LayoutName(problem.layout)) + " calls; ";
        winner.reset();
      }
    }
    if (winner) {
      plan.variant = winner->variant;
      plan.source = exact ? PlanSource::kExact : PlanSource::kNearest;
      plan.tuned_problem = winner->problem;
      plan.tuned_bucket = BucketString(winner->bucket);
      plan.tuned_median_us = winner->median_us;
      plan.tuned_tflops = winner->tflops;
      plan.distance = exact ? 0 : winner->distance;
      if (exact) {
        plan.why = "tuned winner of bucket " + plan.bucket_name + " on " + who + " (tuned on " +
                   winner->problem.ToString() + ": " + FormatUs(winner->median_us) + " us)";
      } else {
        plan.why = "bucket " + plan.bucket_name + " is not tuned on " + who + "; nearest tuned bucket " +
                   plan.tuned_bucket + " (distance " + std::to_string(plan.distance) + ", tuned on " +
                   winner->problem.ToString() + ": " + FormatUs(winner->median_us) + " us)";
      }
      return plan;
    }
    const ProblemClass cls = ClassOf(problem);
    const std::string arch = device.arch.empty() ? std::string("sm_90a") : device.arch;
    auto chosen = DefaultVariantFor(problem, device.max_smem_bytes, arch);
    if (!chosen.ok()) return chosen.status();
    plan.variant = *chosen;
    plan.source = PlanSource::kHeuristic;
    FT_RETURN_IF_ERROR(CheckVariant(plan.variant, device.max_smem_bytes));
    auto family = FamilyOf(plan.variant);
    plan.why = unfit + "no tuned bucket of class " + cls.ToString() + " on " + who + " with this toolchain" +
               (have_device ? "" : " (no device to match tuned rows)") + "; " + plan.variant.family +
               "'s default tile " + (family.ok() ? (*family)->Describe(plan.variant) : std::string()) + " for " + arch +
               ", fitted to " + std::to_string(device.max_smem_bytes) + " bytes of shared memory";
    return plan;
  }

  // The cubin of `variant` for `arch`: database first, else compiled (and stored when the
  // database file exists).
  Result<Cubin> CubinFor(const Variant& variant, const std::string& arch) {
    auto source = GenerateSource(variant);
    if (!source.ok()) return source.status();
    std::vector<std::pair<LogLevel, std::string>> logs;
    Result<Cubin> out = Status(Code::kInternal, "unset");
    {
      std::lock_guard lock(db_mutex);
      if (Database* db = ReadDb(&logs)) {
        auto stored = db->GetCubin(source->sha256, arch, "", nvrtc_version);
        if (stored.ok()) {
          out = CubinFromRecord(*stored, source->uri);
        } else if (stored.status().code() != Code::kNotFound) {
          logs.push_back({LogLevel::kWarning, "reading a cubin from the database failed: " + stored.status().ToString()});
        }
      }
      if (!out.ok()) {
        logs.push_back({LogLevel::kInfo, "compiling " + source->uri + " for " + arch +
                                             " on first use (no cubin for it in the database)"});
        std::error_code ec;
        if (!write_db && std::filesystem::exists(path, ec)) {
          auto db = Database::Open(path);
          if (db.ok()) {
            write_db = std::move(*db);
          } else {
            logs.push_back({LogLevel::kWarning, "cannot store compiled kernels in " + path + ": " +
                                                    db.status().ToString()});
          }
        }
        if (write_db) {
          auto record = LoadOrCompileCubin(*write_db, compiler, variant, arch);
          if (record.ok()) out = CubinFromRecord(*record, source->uri);
          else out = record.status();
        } else {
          out = compiler.Compile(CompileRequest{source->uri, source->text, arch, {}});
        }
      }
    }
    for (const auto& [level, message] : logs) Log(level, message);
    return out;
  }

  // Cold path of forward(): context, plan, kernel. Caller holds load_mutex.
  Result<const ForwardKernel*> Prepare(const Driver& driver, CUcontext current, const ForwardArgs& args) {
    CUcontext context = current;
    if (context == nullptr) {
      // No current context: use device 0's primary context (and leave it current).
      auto primary = Context::Primary(driver, 0);
      if (!primary.ok()) return primary.status();
      context = primary->get();
      if (!contexts.count(context)) {
        ContextState state;
        state.retained = std::make_unique<Context>(std::move(*primary));
        contexts.emplace(context, std::move(state));
      }
    }
    auto cs = contexts.find(context);
    if (cs == contexts.end()) {
      auto found = driver.CurrentDeviceOrdinal();
      if (!found.ok()) return Status(found.status().code(), "forward: " + found.status().message());
      const int ordinal = *found;
      auto primary = Context::Primary(driver, ordinal);  // makes the primary current
      if (!primary.ok()) return primary.status();
      if (primary->get() != context) {
        (void)driver.SetCurrentContext(context);  // give the caller back its context
        return Status(Code::kUnsupported,
                      "forward: the current CUDA context is not the primary context of device " +
                          std::to_string(ordinal) +
                          "; flashtune launches in primary contexts (those the CUDA runtime and PyTorch use)");
      }
      ContextState state;
      state.retained = std::make_unique<Context>(std::move(*primary));
      cs = contexts.emplace(context, std::move(state)).first;
    }
    if (cs->second.device == nullptr) {
      const int ordinal = cs->second.retained->ordinal();
      auto& slot = by_ordinal[ordinal];
      if (!slot) {
        auto info = driver.Device(ordinal);
        if (!info.ok()) return info.status();
        slot = StateFor(*info, driver);
      }
      cs->second.device = slot.get();
    }
    DeviceState& device = *cs->second.device;
    auto plan = PlanOn(device, args.problem);
    if (!plan.ok()) return plan.status();
    auto key = std::make_pair(context, plan->variant.Uri());
    auto k = kernels.find(key);
    if (k == kernels.end()) {
      auto cubin = CubinFor(plan->variant, device.arch);
      if (!cubin.ok()) return cubin.status();
      auto kernel = ForwardKernel::Load(*cs->second.retained, *cubin, plan->variant);
      if (!kernel.ok()) return kernel.status();
      k = kernels.emplace(key, std::make_unique<ForwardKernel>(std::move(*kernel))).first;
    }
    const ForwardKernel* kernel = k->second.get();
    std::unique_lock lock(launch_mutex);
    launch_cache[{context, BucketCode(plan->bucket, args.problem.layout)}] = kernel;
    return kernel;
  }

  // A kernel for a call the planned variant's family cannot run (`why`, e.g. strides TMA cannot
  // describe): the default of the most preferred family that serves the class on this device
  // and can run the call. Cached per (context, variant); said once per variant. Caller holds
  // load_mutex; Prepare has run for `context`.
  Result<const ForwardKernel*> Fallback(CUcontext context, const ForwardArgs& args, const Status& why) {
    auto cs = contexts.find(context);
    if (cs == contexts.end() || cs->second.device == nullptr) return why;
    DeviceState& device = *cs->second.device;
    const ProblemClass cls = ClassOf(args.problem);
    const Target target{device.arch.empty() ? std::string("sm_90a") : device.arch, device.max_smem_bytes};
    for (const Family* family : FamiliesFor(args.problem)) {
      if (!family->Serves(cls, target)) continue;
      const Variant v = family->Default(cls, target);
      LaunchPacket trial;  // packing checks layout, seqlens_k, workspace and CanRun; launches nothing
      trial.sm_count = cs->second.device->record.sm_count;
      if (!family->Check(v, target.max_smem_bytes).ok() || !PackValidatedForward(v, args, &trial).ok()) continue;
      auto key = std::make_pair(context, v.Uri());
      auto k = kernels.find(key);
      if (k == kernels.end()) {
        Log(LogLevel::kWarning, "falling back to " + v.Uri() + " for " + args.problem.ToString() + ": " +
                                    why.message());
        auto cubin = CubinFor(v, target.arch);
        if (!cubin.ok()) return cubin.status();
        auto kernel = ForwardKernel::Load(*cs->second.retained, *cubin, v);
        if (!kernel.ok()) return kernel.status();
        k = kernels.emplace(key, std::make_unique<ForwardKernel>(std::move(*kernel))).first;
      }
      return k->second.get();
    }
    return why;
  }
};

Runtime::Runtime(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Runtime::~Runtime() = default;

Result<std::unique_ptr<Runtime>> Runtime::Open(const RuntimeOptions& options) {
  auto impl = std::make_unique<Impl>(options);
  impl->path = options.db_path.empty() ? DefaultDatabasePath() : options.db_path;
  impl->toolchain = CurrentToolchain();
  impl->nvrtc_version = Compiler::NvrtcVersion();
  std::error_code ec;
  if (std::filesystem::exists(impl->path, ec)) {
    Database::OpenOptions ro;
    ro.read_only = true;
    auto db = Database::Open(impl->path, ro);
    if (db.ok()) {
      impl->read_db = std::move(*db);
    } else if (db.status().code() != Code::kNotFound) {  // empty (being created): read it later
      return db.status();
    }
  }
  if (options.device_override) {
    auto s = std::make_unique<DeviceState>();
    s->record = *options.device_override;
    if (!s->record.name.empty()) s->arch = ArchOf(s->record);
    int64_t smem = options.max_smem_bytes;
    if (smem <= 0 && !s->arch.empty()) smem = MaxSharedMemoryForArch(s->arch);
    s->max_smem_bytes = smem > 0 ? smem : kDefaultMaxSmemBytes;
    if (s->record.name.empty()) s->absent_reason = "an empty device was given";
    impl->planning = std::move(s);
  } else if (auto driver = Driver::Load(); driver.ok()) {
    auto info = (*driver)->Device(0);
    if (info.ok()) {
      impl->planning = impl->StateFor(*info, **driver);
    } else {
      impl->planning = std::make_unique<DeviceState>();
      impl->planning->absent_reason = info.status().message();
    }
  } else {
    impl->planning = std::make_unique<DeviceState>();
    impl->planning->absent_reason = driver.status().message();
  }
  return std::unique_ptr<Runtime>(new Runtime(std::move(impl)));
}

Result<Plan> Runtime::plan(const Problem& problem) {
  FT_RETURN_IF_ERROR(ValidateProblem(problem));
  return impl_->PlanOn(*impl_->planning, problem);
}

Status Runtime::forward(const ForwardArgs& args, CUstream stream) {
  FT_RETURN_IF_ERROR(ValidateForwardArgs(args));
  Driver* driver = impl_->driver.load(std::memory_order_acquire);
  if (driver == nullptr) {
    auto loaded = Driver::Load();
    if (!loaded.ok()) return loaded.status();
    driver = *loaded;
    impl_->driver.store(driver, std::memory_order_release);
  }
  auto current = driver->CurrentContext();
  if (!current.ok()) return current.status();
  CUcontext context = *current;
  const ForwardKernel* kernel = nullptr;
  if (context != nullptr) {
    std::shared_lock lock(impl_->launch_mutex);
    auto it = impl_->launch_cache.find({context, BucketCode(BucketOf(args.problem), args.problem.layout)});
    if (it != impl_->launch_cache.end()) kernel = it->second;
  }
  if (kernel == nullptr) {
    std::lock_guard lock(impl_->load_mutex);
    auto prepared = impl_->Prepare(*driver, context, args);
    if (!prepared.ok()) return prepared.status();
    kernel = *prepared;
  }
  Status launched = kernel->LaunchValidated(args, stream);  // validated above
  if (launched.code() != Code::kUnsupported) return launched;
  // The planned family cannot run this call (its CanRun said why; nothing was launched).
  if (context == nullptr) {  // Prepare made the primary current
    auto made = driver->CurrentContext();
    if (made.ok()) context = *made;
  }
  const ForwardKernel* fallback = nullptr;
  {
    std::lock_guard lock(impl_->load_mutex);
    auto found = impl_->Fallback(context, args, launched);
    if (!found.ok()) return found.status();
    fallback = *found;
  }
  return fallback->LaunchValidated(args, stream);
}

Result<int64_t> Runtime::workspace_size(const Problem& problem) const {
  FT_RETURN_IF_ERROR(ValidateProblem(problem));
  return WorkspaceBytes(problem, impl_->planning->record.sm_count);
}

const std::string& Runtime::db_path() const { return impl_->path; }

bool Runtime::has_database() const {
  std::lock_guard lock(impl_->db_mutex);
  return impl_->read_db != nullptr;
}

const DeviceRecord& Runtime::device() const { return impl_->planning->record; }

}  // namespace flashtune
