#include "flashtune/gpu_measurer.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

#include "cache/gpu_model.h"
#include "flashtune/compiler.h"
#include "flashtune/hash.h"
#include "flashtune/source.h"
#include "flashtune/space.h"
#include "generator/family.h"
#include "tuner/compile_queue.h"
#include "tuner/gpu_protocol.h"
#include "tuner/prefetch.h"

namespace flashtune {
namespace {

using detail::WorkerProcess;

bool IsExecutable(const std::string& path) { return !path.empty() && ::access(path.c_str(), X_OK) == 0; }

// The CLI to exec for the worker, or "" for a plain fork (see GpuMeasurerOptions).
std::string WorkerExecutable(const std::string& configured) {
  if (!configured.empty()) return configured;  // an explicit choice: a bad path is an error later
  if (const char* env = std::getenv("FLASHTUNE_WORKER"); env != nullptr && *env) return env;
  for (const char* path : {FLASHTUNE_BUILD_CLI, FLASHTUNE_INSTALLED_CLI})
    if (IsExecutable(path)) return path;
  return "";
}

class GpuMeasurer final : public Measurer {
 public:
  GpuMeasurer(int ordinal, const GpuMeasurerOptions& options)
      : ordinal_(ordinal),
        options_(options),
        compiler_(Compiler::Options{options.cache_dir, options.compile_threads}),
        compile_queue_(compiler_, options.compile_threads) {}

  // Starts the worker and learns the device from it.
  Result<detail::HelloReply> Start() {
    const std::string exe = WorkerExecutable(options_.worker_executable);
    auto worker = exe.empty() ? WorkerProcess::Start([ordinal = ordinal_](int in, int out) {
      return detail::GpuWorkerMain(in, out, ordinal);
    })
                              : WorkerProcess::Exec({exe, kGpuWorkerCommand, std::to_string(ordinal_)});
    if (!worker.ok()) return worker.status();
    worker_ = std::move(*worker);
    auto frame = worker_->Call(detail::EncodeHelloRequest(), std::chrono::seconds(120));
    if (!frame.ok()) return frame.status();
    auto hello = detail::DecodeHelloReply(*frame);
    if (!hello.ok() && hello.status().code() == Code::kUnsupported)
      return Status(Code::kUnsupported, hello.status().message() + " (worker: " +
                                            (exe.empty() ? std::string("a fork of this process") : exe) +
                                            "); point FLASHTUNE_WORKER or GpuMeasurerOptions::worker_executable "
                                            "at the flashtune CLI of this build");
    if (!hello.ok()) return hello.status();
    if (!hello->status.ok()) return hello->status;
    device_ = hello->device;
    driver_version_ = hello->driver_version;
    return hello;
  }

  DeviceRecord Device() const override {
    return DeviceRecordOf(device_, driver_version_);
  }
  ToolchainInfo Toolchain() const override { return CurrentToolchain(); }

  Result<Measurement> Measure(const Problem& problem, const Variant& variant) override {
    return Run(problem, variant, /*verify=*/true, options_.warmup_ms);
  }

  Result<std::vector<Measurement>> Remeasure(const Problem& problem, const std::vector<Variant>& variants) override {
    // Finalists were verified when first measured. A problem's first re-timing warms the GPU
    // up to sustained load (retime_warmup_ms); its later rounds follow back to back.
    std::string key = problem.ToString();
    const bool first = key != last_retimed_;
    last_retimed_ = std::move(key);
    if (options_.interleave_retime && variants.size() >= 2) return Interleaved(problem, variants, first);
    return OneByOne(problem, variants, first);
  }

  void Prefetch(const Problem& problem) override {
    QueueSpaces(ClassOf(problem), detail::PrefetchFamilies(problem, device_.Arch()), problem.layout);
  }

  Result<int> CompiledRegisters(const Variant& variant) override {
    const Compiled& c = CompiledFor(variant);
    if (!c.cubin.ok()) return c.cubin.status();
    return c.cubin->resources.registers;
  }

 private:
  struct Compiled {
    Result<Cubin> cubin = Status(Code::kInternal, "not compiled");
    std::string source_hash;
    bool prepared = false;                  // the source was generated (or failed: cubin says why)
    std::optional<CompileRequest> request;  // set when the source was generated
    bool fetched = false;                   // cubin holds the compile's result
  };

  // The generated source, or the caller's override for this URI.
  Result<Source> SourceFor(const Variant& v) const {
    auto it = options_.source_overrides.find(v.Uri());
    if (it == options_.source_overrides.end()) return GenerateSource(v);
    return Source{v, v.Uri(), v.Uri(), it->second, Sha256Hex(it->second)};
  }

  // Queues, the first time each (class, family, layout) is seen, that family's space in `cls`
  // for `layout` for compilation on the background threads (the class's trusted variant
  // first), so NVRTC works while the GPU measures; a candidate needed before its turn is
  // compiled at once (CompileQueue::Get). Only the families the caller names: those that serve
  // the problem at hand (tuner/prefetch.h says why), or the one family of a variant asked for
  // by itself.
  void QueueSpaces(const ProblemClass& cls, const std::vector<std::string>& families, Layout layout) {
    // The operation too: a backward class shares dtype, head dim and mask with a forward one
    // but none of its variants.
    const std::string class_key = std::string(OperationName(cls.operation)) + std::string(DTypeName(cls.dtype)) +
                                  std::to_string(cls.head_dim) + (cls.causal ? "c" : "f") + " " +
                                  std::string(LayoutName(layout));
    std::vector<Variant> variants;
    for (const std::string& family : families) {
      if (!queued_spaces_.insert(class_key + " " + family).second) continue;
      std::vector<Variant> space =
          detail::FamilySpace(cls, family, device_.Arch(), device_.max_smem_per_block_optin, layout);
      variants.insert(variants.end(), space.begin(), space.end());
    }
    if (variants.empty()) return;
    variants.insert(variants.begin(), DefaultVariant(cls, device_.max_smem_per_block_optin, device_.Arch()));
    std::vector<CompileRequest> requests;
    for (const Variant& v : variants)
      if (const Compiled& c = Prepare(v); c.request) requests.push_back(*c.request);
    compile_queue_.Enqueue(requests);  // a name already queued, running or done is skipped
  }

  // The variant's source and compile request, generated once; a source error is final.
  Compiled& Prepare(const Variant& v) {
    Compiled& c = compiled_[v.Uri()];
    if (c.prepared) return c;
    c.prepared = true;
    auto source = SourceFor(v);
    if (!source.ok()) {
      c.cubin = source.status();
      return c;
    }
    c.source_hash = source->sha256;
    c.request = GeneratedSourceRequest(source->uri, source->text, device_.Arch());
    return c;
  }

  const Compiled& CompiledFor(const Variant& v) {
    QueueSpaces(ClassOf(v), {v.family}, detail::FirstLayoutRead(v));
    Compiled& c = Prepare(v);  // also a hand-picked variant outside the enumerated space
    if (c.request && !c.fetched) {
      c.cubin = compile_queue_.Get(*c.request);
      c.fetched = true;
    }
    return c;
  }

  // Each finalist timed alone, one after another: the first warmed up for retime_warmup_ms.
  Result<std::vector<Measurement>> OneByOne(const Problem& problem, const std::vector<Variant>& variants, bool first) {
    std::vector<Measurement> out;
    for (const Variant& v : variants) {
      const bool heat = first && out.empty();
      const double warmup_ms = heat ? std::max(options_.warmup_ms, options_.retime_warmup_ms) : options_.warmup_ms;
      auto m = Run(problem, v, /*verify=*/false, warmup_ms);
      if (!m.ok()) return m.status();
      out.push_back(*m);
    }
    return out;
  }

  // The finalists timed against each other in one worker request, their launch groups
  // interleaved (tuner/launch_timing.h). When the worker faults, hangs or fails a launch there,
  // they are timed one by one instead, which tells the failing finalist from the others.
  Result<std::vector<Measurement>> Interleaved(const Problem& problem, const std::vector<Variant>& variants,
                                               bool first) {
    std::vector<Measurement> out(variants.size());
    detail::RetimeRequest request;
    request.problem = problem;
    std::vector<size_t> sent;  // request.candidates[j] is variants[sent[j]]
    for (size_t i = 0; i < variants.size(); ++i) {
      const Cubin* cubin = Compile(problem, variants[i], out[i]);
      if (cubin == nullptr) continue;
      request.candidates.push_back(variants[i]);
      request.cubins.emplace_back(cubin->image.begin(), cubin->image.end());
      sent.push_back(i);
    }
    if (sent.empty()) return out;
    if (!worker_ || !worker_->alive()) {
      auto restarted = Start();
      if (!restarted.ok()) return restarted.status();
    }
    request.options = options_;
    request.options.warmup_ms = options_.warmup_ms * double(sent.size());  // as much for each as alone
    if (first) request.options.warmup_ms = std::max(request.options.warmup_ms, options_.retime_warmup_ms);
    const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(options_.timeout_s * 1000 * double(sent.size())));
    auto frame = worker_->Call(detail::EncodeRetimeRequest(request), timeout);
    if (!frame.ok()) {  // it faulted hard or hung: dead now
      worker_.reset();
      return OneByOne(problem, variants, first);
    }
    auto reply = detail::DecodeRetimeReply(*frame);
    if (!reply.ok()) return reply.status();  // a malformed frame: a broken worker, not a finalist
    if (!reply->status.ok()) {
      if (reply->status.code() == Code::kFault) worker_.reset();  // it exits after a fault
      return OneByOne(problem, variants, first);
    }
    if (reply->results.size() != sent.size())
      return Status(Code::kInternal, "the GPU worker re-timed " + std::to_string(reply->results.size()) + " of " +
                                         std::to_string(sent.size()) + " finalists");
    for (size_t j = 0; j < sent.size(); ++j) Take(reply->results[j], out[sent[j]]);
    return out;
  }

  // The worker's answer for one variant into its measurement (compile facts already there).
  // Registers: the most of ptxas's (every kernel of the module: a backward module's main
  // kernel, not the preprocess kernel its URI names) and the driver's (the URI's kernel; the
  // only figure when the compile gave none), as spill_bytes is ptxas's most.
  static void Take(const detail::MeasureReply& r, Measurement& m) {
    m.status = r.status;
    m.median_us = r.median_us;
    m.iqr_us = r.iqr_us;
    m.reps = r.reps;
    m.registers = std::max(m.registers, r.registers);
  }

  // The variant's cubin (compiled or from the cache), its resources and compile time in `m`;
  // nullptr with m.status set when it does not compile.
  const Cubin* Compile(const Problem& problem, const Variant& variant, Measurement& m) {
    const auto t0 = std::chrono::steady_clock::now();
    Prefetch(problem);  // the rest of this problem's candidates
    const Compiled& candidate = CompiledFor(variant);
    m.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    m.source_hash = candidate.source_hash;
    if (!candidate.cubin.ok()) {
      m.status = candidate.cubin.status();
      return nullptr;
    }
    const Cubin& cubin = *candidate.cubin;
    m.registers = cubin.resources.registers;
    m.spill_bytes = cubin.resources.spill_store_bytes + cubin.resources.spill_load_bytes;
    m.smem_bytes = static_cast<int>(SharedMemoryBytes(variant));
    return &cubin;
  }

  Result<Measurement> Run(const Problem& problem, const Variant& variant, bool verify, double warmup_ms) {
    Measurement m;
    const auto t0 = std::chrono::steady_clock::now();
    const Cubin* compiled = Compile(problem, variant, m);
    if (compiled == nullptr) return m;
    const Cubin& cubin = *compiled;

    // The class's default (a prefill kernel: another family than decode's candidates), unless
    // it cannot serve the problem's layout (paged K/V): then the problem's own default.
    Variant trusted_variant = DefaultVariant(ClassOf(problem), device_.max_smem_per_block_optin, device_.Arch());
    if (!VariantServes(trusted_variant, problem)) {
      auto own = DefaultVariantFor(problem, device_.max_smem_per_block_optin, device_.Arch());
      if (!own.ok()) return own.status();
      trusted_variant = *own;
    }
    const Compiled& trusted = CompiledFor(trusted_variant);
    if (!trusted.cubin.ok()) return Status(trusted.cubin.status()).WithVariant(trusted_variant.Uri());

    if (!worker_ || !worker_->alive()) {
      auto restarted = Start();
      if (!restarted.ok()) return restarted.status();
    }
    detail::MeasureRequest request;
    request.problem = problem;
    request.candidate = variant;
    request.candidate_cubin.assign(cubin.image.begin(), cubin.image.end());
    request.trusted = trusted_variant;
    request.trusted_cubin.assign(trusted.cubin->image.begin(), trusted.cubin->image.end());
    request.verify = verify;
    request.options = options_;
    request.options.warmup_ms = warmup_ms;
    const auto t1 = std::chrono::steady_clock::now();
    auto frame = worker_->Call(detail::EncodeMeasureRequest(request),
                               std::chrono::milliseconds(static_cast<int64_t>(options_.timeout_s * 1000)));
    if (trace_)
      std::fprintf(stderr, "trace tuner %s compile lookup %.1f ms, worker call %.1f ms\n", variant.Uri().c_str(),
                   std::chrono::duration<double, std::milli>(t1 - t0).count(),
                   std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count());
    if (!frame.ok()) {
      // The worker faulted hard or hung; it is dead now and restarts on the next candidate.
      m.status = Status(frame.status()).WithVariant(variant.Uri());
      return m;
    }
    auto reply = detail::DecodeMeasureReply(*frame);
    if (!reply.ok()) return reply.status();
    Take(*reply, m);
    if (m.status.code() == Code::kFault) worker_.reset();  // it exits after a fault; reap it now
    return m;
  }

  const bool trace_ = std::getenv("FLASHTUNE_TRACE") != nullptr;  // phase times on stderr
  int ordinal_;
  GpuMeasurerOptions options_;
  std::string last_retimed_;  // the problem the last Remeasure call re-timed (its GPU is loaded)
  Compiler compiler_;
  detail::CompileQueue compile_queue_;  // after compiler_: it compiles with it
  std::unique_ptr<WorkerProcess> worker_;
  DeviceInfo device_;
  std::string driver_version_;
  std::set<std::string> queued_spaces_;  // "<class> <family>" whose space is queued
  std::map<std::string, Compiled> compiled_;
};

}  // namespace

Result<std::vector<std::unique_ptr<Measurer>>> MakeGpuMeasurers(const std::vector<int>& devices,
                                                                const GpuMeasurerOptions& options) {
  std::vector<int> ordinals = devices;
  std::vector<std::unique_ptr<Measurer>> out;
  if (ordinals.empty()) {
    auto first = std::make_unique<GpuMeasurer>(0, options);
    auto hello = first->Start();
    if (!hello.ok()) return hello.status();
    out.push_back(std::move(first));
    for (int i = 1; i < hello->device_count; ++i) ordinals.push_back(i);
  }
  for (int ordinal : ordinals) {
    auto m = std::make_unique<GpuMeasurer>(ordinal, options);
    auto hello = m->Start();
    if (!hello.ok()) return hello.status();
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace flashtune
