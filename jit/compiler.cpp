#include "flashtune/compiler.h"

#include <nvrtc.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <regex>
#include <system_error>
#include <thread>

#include "jit/cubin_cache.h"

namespace flashtune {
namespace {

std::atomic<uint64_t> g_nvrtc_calls{0};

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) {
    if (!out.empty()) out += ' ';
    out += p;
  }
  return out;
}

std::string NvrtcError(const char* call, nvrtcResult r) {
  return std::string(call) + " failed: " + nvrtcGetErrorString(r);
}

bool HasStdOption(const std::vector<std::string>& options) {
  return std::any_of(options.begin(), options.end(), [](const std::string& o) {
    return o.rfind("-std", 0) == 0 || o.rfind("--std", 0) == 0;
  });
}

// Every option NVRTC sees, in order: the arch, a C++ standard unless the caller chose
// one, ptxas's verbose report (our resource numbers come from it), then the caller's.
std::vector<std::string> AllOptions(const CompileRequest& request) {
  std::vector<std::string> all = {"--gpu-architecture=" + request.arch};
  if (!HasStdOption(request.options)) all.push_back("--std=c++17");
  all.push_back("--ptxas-options=--verbose");
  all.insert(all.end(), request.options.begin(), request.options.end());
  return all;
}

std::string GetEnv(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

}  // namespace

CompileRequest GeneratedSourceRequest(std::string name, std::string source, std::string arch) {
  return CompileRequest{std::move(name), std::move(source), std::move(arch), {"--minimal"}};
}

ResourceUsage ParsePtxasReport(const std::string& log) {
  // ptxas prints, per entry function:
  //   ptxas  .  256 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
  //   ptxas info : Used 32 registers, used 1 barriers, ..., 1024 bytes smem, 360 bytes cmem[0]
  static const std::regex kStack(R"((\d+) bytes stack frame)");
  static const std::regex kStores(R"((\d+) bytes spill stores)");
  static const std::regex kLoads(R"((\d+) bytes spill loads)");
  static const std::regex kRegs(R"(Used (\d+) registers)");
  static const std::regex kSmem(R"((\d+) bytes smem)");
  static const std::regex kCmem(R"((\d+) bytes cmem\[0\])");
  ResourceUsage u;
  auto take_max = [&](const std::regex& re, int& field) {
    for (auto it = std::sregex_iterator(log.begin(), log.end(), re); it != std::sregex_iterator(); ++it)
      field = std::max(field, std::atoi((*it)[1].str().c_str()));
  };
  take_max(kRegs, u.registers);
  take_max(kSmem, u.static_smem_bytes);
  take_max(kStores, u.spill_store_bytes);
  take_max(kLoads, u.spill_load_bytes);
  take_max(kStack, u.stack_frame_bytes);
  take_max(kCmem, u.const_bytes);
  return u;
}

Compiler::Compiler(Options options) : threads_(options.threads) {
  if (options.cache_dir == "-") return;  // cache disabled
  cache_dir_ = options.cache_dir.empty() ? DefaultCacheDir() : options.cache_dir;
}

std::string Compiler::DefaultCacheDir() {
  if (std::string d = GetEnv("FLASHTUNE_CACHE_DIR"); !d.empty()) return d;
  if (std::string d = GetEnv("XDG_CACHE_HOME"); !d.empty()) return d + "/flashtune";
  if (std::string d = GetEnv("HOME"); !d.empty()) return d + "/.cache/flashtune";
  return ".flashtune-cache";
}

std::string Compiler::NvrtcVersion() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

std::vector<std::string> Compiler::SupportedArchs() {
  int count = 0;
  if (nvrtcGetNumSupportedArchs(&count) != NVRTC_SUCCESS || count <= 0) return {};
  std::vector<int> numbers(static_cast<size_t>(count));
  if (nvrtcGetSupportedArchs(numbers.data()) != NVRTC_SUCCESS) return {};
  std::sort(numbers.begin(), numbers.end());
  std::vector<std::string> archs;
  for (int n : numbers) {
    const std::string base = "sm_" + std::to_string(n);
    archs.push_back(base);
    // Arch-specific ("a", Hopper on) and family ("f", Blackwell on) targets; checked
    // against NVRTC 13.0, which rejects them below these.
    if (n >= 90) archs.push_back(base + "a");
    if (n >= 100) archs.push_back(base + "f");
  }
  return archs;
}

Status Compiler::ValidateArch(const std::string& arch) {
  const std::vector<std::string> archs = SupportedArchs();
  if (std::find(archs.begin(), archs.end(), arch) != archs.end()) return Status::Ok();
  return Status(Code::kInvalidArgument,
                "arch '" + arch + "' is not supported by NVRTC " + NvrtcVersion() +
                    "; allowed: " + Join(archs));
}

uint64_t Compiler::NvrtcCallCount() { return g_nvrtc_calls.load(); }

Result<Cubin> Compiler::Compile(const CompileRequest& request) const {
  if (Status s = ValidateArch(request.arch); !s.ok()) return s.WithVariant(request.name);
  const std::vector<std::string> all_options = AllOptions(request);
  const std::string key =
      detail::CubinCacheKey(request.name, request.source, all_options, NvrtcVersion(), request.arch);

  if (!cache_dir_.empty()) {
    Result<Cubin> cached = detail::ReadCubinCacheEntry(cache_dir_, key);
    // Absent or corrupt: fall through, recompile and overwrite.
    if (cached.ok()) {
      cached->name = request.name;
      return cached;
    }
  }
  Result<Cubin> compiled = CompileUncached(request, all_options);
  if (!compiled.ok()) return compiled;
  compiled->key = key;
  if (!cache_dir_.empty()) {
    // Best effort: a read-only or full disk costs a recompile next time, not this result.
    (void)detail::WriteCubinCacheEntry(cache_dir_, *compiled);
  }
  return compiled;
}

Result<Cubin> Compiler::CompileUncached(const CompileRequest& request,
                                        const std::vector<std::string>& all_options) const {
  const std::string joined = Join(all_options);
  auto fail = [&](Code code, std::string message, std::string log = {}) {
    Status s(code, std::move(message));
    s.WithVariant(request.name).WithOptions(joined).WithLog(std::move(log));
    return s;
  };

  nvrtcProgram program = nullptr;
  nvrtcResult r = nvrtcCreateProgram(&program, request.source.c_str(),
                                     request.name.empty() ? "program.cu" : request.name.c_str(), 0,
                                     nullptr, nullptr);
  if (r != NVRTC_SUCCESS) return fail(Code::kInternal, NvrtcError("nvrtcCreateProgram", r));
  // Destroys the program on every path out.
  struct Guard {
    nvrtcProgram& p;
    ~Guard() { nvrtcDestroyProgram(&p); }
  } guard{program};

  std::vector<const char*> argv;
  for (const std::string& o : all_options) argv.push_back(o.c_str());
  g_nvrtc_calls.fetch_add(1);
  const nvrtcResult compile_result =
      nvrtcCompileProgram(program, static_cast<int>(argv.size()), argv.data());

  std::string log;
  size_t log_size = 0;
  if (nvrtcGetProgramLogSize(program, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    log.resize(log_size);
    if (nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS) log.clear();
    while (!log.empty() && log.back() == '\0') log.pop_back();
  }
  if (compile_result != NVRTC_SUCCESS) {
    return fail(Code::kCompileError,
                "NVRTC could not compile '" + request.name + "' for " + request.arch + ": " +
                    nvrtcGetErrorString(compile_result),
                log);
  }

  size_t cubin_size = 0;
  if ((r = nvrtcGetCUBINSize(program, &cubin_size)) != NVRTC_SUCCESS || cubin_size == 0)
    return fail(Code::kCompileError, NvrtcError("nvrtcGetCUBINSize", r), log);
  Cubin cubin;
  cubin.image.resize(cubin_size);
  if ((r = nvrtcGetCUBIN(program, cubin.image.data())) != NVRTC_SUCCESS)
    return fail(Code::kCompileError, NvrtcError("nvrtcGetCUBIN", r), log);
  cubin.name = request.name;
  cubin.arch = request.arch;
  cubin.options = joined;
  cubin.resources = ParsePtxasReport(log);
  cubin.log = std::move(log);
  return cubin;
}

std::vector<Result<Cubin>> Compiler::CompileMany(const std::vector<CompileRequest>& requests) const {
  std::vector<Result<Cubin>> results(requests.size(), Result<Cubin>(Status(Code::kInternal, "not run")));
  int threads = threads_ > 0 ? threads_ : static_cast<int>(std::thread::hardware_concurrency());
  threads = std::max(1, std::min<int>(threads, static_cast<int>(requests.size())));
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next.fetch_add(1); i < requests.size(); i = next.fetch_add(1))
      results[i] = Compile(requests[i]);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(worker);
    } catch (const std::system_error&) {
      break;  // the threads already started (and this one) finish the work
    }
  }
  worker();
  for (std::thread& t : pool) t.join();
  return results;
}

}  // namespace flashtune
