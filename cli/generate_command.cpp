// `flashtune generate`: list a problem class's variant space, or print one variant's source.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "cli/command.h"
#include "cli/json.h"
#include "cli/options.h"
#include "generator/family.h"
#include "flashtune/source.h"
#include "flashtune/space.h"
#include "flashtune/variant.h"

namespace flashtune::cli {
namespace {

namespace po = boost::program_options;

int UsageError(const std::string& message) {
  std::fprintf(stderr, "flashtune generate: %s\n(see flashtune generate --help)\n", message.c_str());
  return kExitUsage;
}


std::string HeadDimList() {
  std::string s;
  for (int d : kSupportedHeadDims) s += (s.empty() ? "" : ", ") + std::to_string(d);
  return s;
}

// Writes `text` to `path`, or to stdout when path is empty. False (message printed) on failure.
bool Emit(const std::string& text, const std::string& path) {
  if (path.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return true;
  }
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(text.data(), std::streamsize(text.size()));
  f.close();
  if (!f) {
    std::fprintf(stderr, "flashtune generate: cannot write -o '%s'\n", path.c_str());
    return false;
  }
  return true;
}

int PrintSource(const std::string& uri, const std::string& arch, bool arch_given, bool json,
                const std::string& output) {
  Result<Variant> variant = Variant::FromUri(uri);
  if (!variant.ok()) return UsageError("--variant: " + variant.status().message());
  const int64_t max_smem = arch_given ? MaxSharedMemoryForArch(arch) : INT64_MAX;
  Status valid = CheckVariant(*variant, max_smem);
  if (!valid.ok()) {
    return UsageError("--variant " + uri + " is not valid" +
                      (arch_given ? " for " + arch : std::string()) + ": " + valid.message());
  }
  Result<Source> source = GenerateSource(*variant);
  if (!source.ok()) {
    std::fprintf(stderr, "flashtune generate: %s\n", source.status().ToString().c_str());
    return kExitFailure;
  }
  std::string text = source->text;
  if (json) {
    text = "{\"uri\": \"" + source->uri + "\", \"kernel_name\": \"" + source->kernel_name +
           "\", \"sha256\": \"" + source->sha256 + "\", \"smem_bytes\": " +
           std::to_string(SharedMemoryBytes(*variant)) + ", \"threads\": " +
           std::to_string(ThreadsPerBlock(*variant)) + ", \"text\": " + JsonString(source->text) +
           "}\n";
  }
  return Emit(text, output) ? kExitOk : kExitFailure;
}

int ListSpace(const po::variables_map& vm, const std::string& arch, bool json,
              const std::string& output) {
  if (!vm.count("dtype")) return UsageError("--dtype is required (allowed: f16, bf16), or give --variant URI");
  if (!vm.count("head-dim")) {
    return UsageError("--head-dim is required (allowed: " + HeadDimList() + "), or give --variant URI");
  }
  Result<DType> dtype = ParseDType(vm["dtype"].as<std::string>(), "--dtype");
  if (!dtype.ok()) return UsageError(dtype.status().message());
  auto causal = ParseCausal(vm.count("causal") ? vm["causal"].as<std::string>() : "0");
  if (!causal.ok()) return UsageError(causal.status().message());
  auto operation = ParseOperation(vm.count("operation") ? vm["operation"].as<std::string>() : "fwd", "--operation");
  if (!operation.ok()) return UsageError(operation.status().message());
  ProblemClass pc{*dtype, vm["head-dim"].as<int>(), *causal, *operation};
  SpaceOptions options;
  options.arch = arch;
  options.max_smem_bytes = MaxSharedMemoryForArch(arch);
  Result<std::vector<Variant>> space = EnumerateSpace(pc, options);
  if (!space.ok()) {
    std::string message = space.status().message();
    if (message.rfind("head_dim", 0) == 0) message = "--head-dim: " + message;
    return UsageError(message);
  }
  std::ostringstream out;
  if (json) {
    out << "{\"dtype\": \"" << DTypeName(pc.dtype) << "\", \"head_dim\": " << pc.head_dim
        << ", \"causal\": " << (pc.causal ? "true" : "false") << ", \"arch\": \"" << arch
        << "\", \"max_smem_bytes\": " << options.max_smem_bytes << ", \"count\": " << space->size()
        << ", \"variants\": [";
    for (size_t i = 0; i < space->size(); ++i) {
      const Variant& v = (*space)[i];
      out << (i ? ",\n  " : "\n  ") << "{\"uri\": \"" << v.Uri() << "\", \"family\": \"" << v.family
          << "\", \"params\": {";
      for (size_t k = 0; k < v.params.size(); ++k)
        out << (k ? ", " : "") << "\"" << v.params[k].name << "\": " << v.params[k].value;
      out << "}, \"threads\": " << ThreadsPerBlock(v) << ", \"smem_bytes\": " << SharedMemoryBytes(v) << "}";
    }
    out << "\n]}\n";
  } else {
    for (const Variant& v : *space) out << v.Uri() << "\n";
  }
  if (!Emit(out.str(), output)) return kExitFailure;
  // The count goes to stderr so stdout stays one URI per line for scripts.
  if (!json) {
    std::fprintf(stderr, "%zu variants of %s for %s (shared memory <= %lld bytes)\n", space->size(),
                 pc.ToString().c_str(), arch.c_str(), static_cast<long long>(options.max_smem_bytes));
  }
  return kExitOk;
}

int RunGenerate(const std::vector<std::string>& args) {
  po::options_description desc(
      "usage: flashtune generate --dtype bf16 --head-dim 128 [--causal 0|1] [--operation fwd|bwd] [--arch sm_90a]\n"
      "                          [--json]\n"
      "       flashtune generate --variant URI [-o FILE] [--json]\n\n"
      "Lists the valid kernel variants of a problem class (one URI per line; the count goes to\n"
      "stderr), or prints the full CUDA source of one variant.\n\noptions");
  desc.add_options()
      ("help,h", "show this help")
      ("dtype", po::value<std::string>(), "f16 or bf16")
      ("head-dim", po::value<int>(), ("head dim: one of " + HeadDimList()).c_str())
      ("causal", po::value<std::string>()->implicit_value("1"), kCausalHelp)
      ("operation", po::value<std::string>(), "fwd (the forward pass, default) or bwd (the backward pass)")
      ("arch", po::value<std::string>()->default_value("sm_90a"),
       ("target, sets the shared-memory limit: one of " + KnownArchs()).c_str())
      ("variant", po::value<std::string>(),
       "print the source of this variant, e.g. fa2_fwd_bf16_d128_br128_bc64_w4_s2_causal")
      ("output,o", po::value<std::string>()->default_value(""), "write to FILE instead of stdout")
      ("json", "machine-readable output");
  po::variables_map vm;
  if (Status parsed = ParseCommandLine(args, desc, &vm); !parsed.ok()) return UsageError(parsed.message());
  if (vm.count("help")) {
    std::ostringstream help;
    help << desc;
    std::fputs(help.str().c_str(), stdout);
    return kExitOk;
  }
  const std::string arch = vm["arch"].as<std::string>();
  if (MaxSharedMemoryForArch(arch) == 0) {
    return UsageError("--arch '" + arch + "' is not known; allowed: " + KnownArchs());
  }
  const bool json = vm.count("json") > 0;
  const std::string output = vm["output"].as<std::string>();
  if (vm.count("variant")) {
    if (vm.count("dtype") || vm.count("head-dim") || vm.count("causal")) {
      return UsageError("--variant already names dtype, head dim and mask; drop --dtype/--head-dim/--causal");
    }
    return PrintSource(vm["variant"].as<std::string>(), arch, !vm["arch"].defaulted(), json, output);
  }
  return ListSpace(vm, arch, json, output);
}

}  // namespace

FT_CLI_COMMAND("generate", "list a problem class's kernel variants, or print one variant's source",
               RunGenerate);

}  // namespace flashtune::cli
