// flashtune/compiler.h — NVRTC: a CUDA source string to a CUBIN for one exact GPU arch.
//
// A Compiler turns a CompileRequest into a Cubin (the ELF image plus the ptxas resource
// report) and keeps an on-disk cache of results keyed by
// sha256(program name, source, options, NVRTC version, arch). The cache is written
// atomically (temp file + rename) and every entry carries a checksum of its payload, so a
// truncated or corrupted entry is recompiled and overwritten, never loaded.
//
// Thread safety: a Compiler is immutable after construction; Compile and CompileMany may
// be called from any number of threads at once (NVRTC is thread-safe).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "flashtune/status.h"

namespace flashtune {

// ptxas's report for the kernel(s) in one program. With several entry functions, each
// field is the maximum over them (the tightest constraint a launch must meet).
struct ResourceUsage {
  int registers = 0;          // per thread
  int static_smem_bytes = 0;  // __shared__ arrays; dynamic shared memory is extra
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
  int stack_frame_bytes = 0;
  int const_bytes = 0;        // cmem[0] where ptxas reports it
};

struct CompileRequest {
  std::string name;    // program name, e.g. the variant URI (used in errors)
  std::string source;  // the whole translation unit; may include no toolkit header
  std::string arch;    // "sm_90a", "sm_80", ... (see Compiler::SupportedArchs)
  std::vector<std::string> options;  // extra NVRTC options, e.g. "-DFOO=1", "--use_fast_math"
};

// The request for one of the library's generated kernels (GenerateSource's text): NVRTC with
// --minimal, which leaves out the texture and surface functions and device-runtime declarations
// that no template uses. Same cubin bytes, about 15% less NVRTC time per variant (a d128 hopper_fwd
// variant: 2.7 -> 2.3 CPU s on the loaded 2-core machine). Every compile of a generated source
// goes through here, so cache keys and recompiled cubins agree.
CompileRequest GeneratedSourceRequest(std::string name, std::string source, std::string arch);

struct Cubin {
  std::string name;     // the request's program name
  std::string arch;     // as requested
  std::string options;  // every option NVRTC saw, space-separated
  std::vector<char> image;  // the ELF image, ready for cuModuleLoadData
  ResourceUsage resources;
  std::string log;      // NVRTC's log (warnings and the ptxas report)
  bool from_cache = false;  // true when this came from the on-disk cache (no NVRTC call)
  std::string key;      // the cache key (64 hex digits)
};

class Compiler {
 public:
  struct Options {
    // Cache folder. "" = the default (see DefaultCacheDir), "-" = no on-disk cache.
    std::string cache_dir;
    // Worker threads for CompileMany; 0 = std::thread::hardware_concurrency().
    int threads = 0;
  };

  explicit Compiler(Options options);

  // Compiles `request` for request.arch. On success returns the Cubin (from the cache when
  // an intact entry exists). On failure returns kInvalidArgument for a bad arch (naming the
  // allowed values) or kCompileError carrying NVRTC's log (Status::log), the options
  // (Status::options) and the program name (Status::variant_uri). A cache that cannot be
  // written does not fail the compile.
  Result<Cubin> Compile(const CompileRequest& request) const;

  // Compiles every request on up to Options::threads threads. Returns one Result per
  // request, in request order, each identical to what Compile would return.
  std::vector<Result<Cubin>> CompileMany(const std::vector<CompileRequest>& requests) const;

  // The resolved cache folder, or "" when the cache is disabled.
  const std::string& cache_dir() const { return cache_dir_; }

  // "13.0": the NVRTC this process uses.
  static std::string NvrtcVersion();
  // The arch names NVRTC accepts here, ascending: "sm_75", "sm_80", ..., "sm_90", "sm_90a", ...
  static std::vector<std::string> SupportedArchs();
  // OK when `arch` is one of SupportedArchs(); else kInvalidArgument naming the allowed values.
  static Status ValidateArch(const std::string& arch);
  // $FLASHTUNE_CACHE_DIR, else $XDG_CACHE_HOME/flashtune, else $HOME/.cache/flashtune
  // (else ./.flashtune-cache when even HOME is unset).
  static std::string DefaultCacheDir();
  // How many times this process has called nvrtcCompileProgram (a cache hit does not).
  static uint64_t NvrtcCallCount();

 private:
  Result<Cubin> CompileUncached(const CompileRequest& request,
                                const std::vector<std::string>& all_options) const;

  std::string cache_dir_;
  int threads_;
};

// Parses ptxas's verbose report (as found in an NVRTC log). Fields ptxas did not report
// stay 0. Exposed for tests and for the CLI.
ResourceUsage ParsePtxasReport(const std::string& log);

}  // namespace flashtune
