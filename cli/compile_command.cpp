// `flashtune compile FILE --arch ARCH`: NVRTC-compiles a .cu file, prints ptxas's resource
// report and, with -o, writes the CUBIN. Uses (and fills) the on-disk cubin cache.
#include <boost/program_options.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/command.h"
#include "cli/options.h"
#include "flashtune/compiler.h"

namespace flashtune::cli {
namespace {

namespace po = boost::program_options;

int RunCompile(const std::vector<std::string>& args) {
  std::string file, arch, output;
  std::vector<std::string> options;
  po::options_description desc("usage: flashtune compile FILE --arch ARCH [-o OUT] [--option X]...\n\noptions");
  desc.add_options()("help,h", "show this help")("arch,a", po::value(&arch), "target, e.g. sm_90a, sm_80 (required)")(
      "output,o", po::value(&output), "write the CUBIN to this file")(
      "option", po::value(&options)->composing(), "extra NVRTC option, e.g. --option=-DFOO=1 (repeatable)")(
      "no-cache", "compile even when the cubin cache has the result, and do not write it");
  po::variables_map vm;
  std::vector<std::string> words;
  if (Status parsed = ParseCommandLine(args, desc, &vm, &words, 1); !parsed.ok()) {
    std::cerr << "flashtune compile: " << parsed.message() << "\n" << desc << "\n";
    return kExitUsage;
  }
  if (!words.empty()) file = words[0];
  if (vm.count("help")) {
    std::cout << "flashtune compile: compile a CUDA source file with NVRTC for one GPU arch and print\n"
                 "ptxas's resource report.\n\n"
              << desc << "\n";
    return kExitOk;
  }
  if (file.empty()) {
    std::cerr << "flashtune compile: missing FILE (the .cu source to compile)\n" << desc << "\n";
    return kExitUsage;
  }
  if (arch.empty()) {
    std::cerr << "flashtune compile: missing --arch; allowed:";
    for (const std::string& a : Compiler::SupportedArchs()) std::cerr << " " << a;
    std::cerr << "\n";
    return kExitUsage;
  }
  if (Status s = Compiler::ValidateArch(arch); !s.ok()) {
    std::cerr << "flashtune compile: --arch: " << s.message() << "\n";
    return kExitUsage;
  }

  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::cerr << "flashtune compile: cannot read FILE '" << file << "': no such readable file\n";
    return kExitFailure;
  }
  std::stringstream source;
  source << in.rdbuf();

  Compiler::Options compiler_options;
  if (vm.count("no-cache")) compiler_options.cache_dir = "-";
  Compiler compiler(compiler_options);
  Result<Cubin> cubin = compiler.Compile({file, source.str(), arch, options});
  if (!cubin.ok()) {
    std::cerr << "flashtune compile: " << cubin.status().ToString() << "\n";
    return kExitFailure;
  }
  const ResourceUsage& r = cubin->resources;
  std::printf("%s: %s, %zu bytes%s\n", file.c_str(), arch.c_str(), cubin->image.size(),
              cubin->from_cache ? " (from cache)" : "");
  std::printf("  registers:       %d per thread\n", r.registers);
  std::printf("  static smem:     %d bytes\n", r.static_smem_bytes);
  std::printf("  spill stores:    %d bytes\n", r.spill_store_bytes);
  std::printf("  spill loads:     %d bytes\n", r.spill_load_bytes);
  std::printf("  stack frame:     %d bytes\n", r.stack_frame_bytes);
  // ptxas reports cmem only on some arches (not sm_90); print it only when it did.
  if (r.const_bytes > 0) std::printf("  constant bank 0: %d bytes\n", r.const_bytes);
  std::printf("  options:         %s\n", cubin->options.c_str());
  if (!output.empty()) {
    std::ofstream out(output, std::ios::binary | std::ios::trunc);
    out.write(cubin->image.data(), static_cast<std::streamsize>(cubin->image.size()));
    out.close();
    if (!out) {
      std::cerr << "flashtune compile: cannot write -o '" << output << "'\n";
      return kExitFailure;
    }
    std::printf("  wrote:           %s\n", output.c_str());
  }
  return kExitOk;
}

}  // namespace

FT_CLI_COMMAND("compile", "compile a .cu file with NVRTC for an arch; print registers, smem, spills",
               RunCompile);

}  // namespace flashtune::cli
