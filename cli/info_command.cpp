// `flashtune info`: what this machine offers flashtune — NVRTC, the driver, each GPU, and
// where the cache and database live. Exits 0 without a driver or GPU (it says why).
#include <boost/program_options.hpp>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "cli/command.h"
#include "cli/json.h"
#include "cli/options.h"
#include "flashtune/compiler.h"
#include "flashtune/database.h"
#include "flashtune/driver.h"

namespace flashtune::cli {
namespace {

namespace po = boost::program_options;

std::string JoinArchs(const std::vector<std::string>& archs, const char* separator) {
  std::string out;
  for (const std::string& a : archs) out += (out.empty() ? "" : separator) + a;
  return out;
}

int RunInfo(const std::vector<std::string>& args) {
  po::options_description desc("usage: flashtune info [--json]\n\noptions");
  desc.add_options()("help,h", "show this help")("json", "print one JSON object instead of text");
  po::variables_map vm;
  if (Status parsed = ParseCommandLine(args, desc, &vm); !parsed.ok()) {
    std::cerr << "flashtune info: " << parsed.message() << "\n" << desc << "\n";
    return kExitUsage;
  }
  if (vm.count("help")) {
    std::cout << "flashtune info: show the NVRTC version, the CUDA driver, each GPU's facts, the cache\n"
                 "folder and the database path.\n\n"
              << desc << "\n";
    return kExitOk;
  }

  const std::vector<std::string> archs = Compiler::SupportedArchs();
  const std::string cache = Compiler::DefaultCacheDir();
  const std::string database = DefaultDatabasePath();
  Result<Driver*> driver = Driver::Load();
  std::vector<DeviceInfo> devices;
  std::string problem;  // why there is no GPU to use
  if (!driver.ok()) {
    problem = driver.status().message();
  } else if (Result<std::vector<DeviceInfo>> d = (*driver)->Devices(); d.ok()) {
    devices = std::move(*d);
  } else {
    problem = d.status().message();
  }

  if (vm.count("json")) {
    std::ostringstream o;
    o << "{\"flashtune\":" << JsonString(FLASHTUNE_VERSION) << ",\"nvrtc\":" << JsonString(Compiler::NvrtcVersion())
      << ",\"archs\":[";
    for (size_t i = 0; i < archs.size(); ++i) o << (i ? "," : "") << JsonString(archs[i]);
    o << "],\"driver\":" << (driver.ok() ? JsonString((*driver)->VersionString()) : "null")
      << ",\"error\":" << (problem.empty() ? "null" : JsonString(problem)) << ",\"gpus\":[";
    for (size_t i = 0; i < devices.size(); ++i) {
      const DeviceInfo& d = devices[i];
      o << (i ? "," : "") << "{\"ordinal\":" << d.ordinal << ",\"name\":" << JsonString(d.name)
        << ",\"uuid\":" << JsonString(d.uuid) << ",\"compute_capability\":" << JsonString(d.ComputeCapability())
        << ",\"arch\":" << JsonString(d.Arch()) << ",\"sm_count\":" << d.sm_count
        << ",\"smem_per_block_optin\":" << d.max_smem_per_block_optin << ",\"l2_bytes\":" << d.l2_bytes
        << ",\"clock_khz\":" << d.clock_khz << ",\"memory_bytes\":" << d.total_memory_bytes << "}";
    }
    o << "],\"cache_dir\":" << JsonString(cache) << ",\"database\":" << JsonString(database) << "}";
    std::cout << o.str() << "\n";
    return kExitOk;
  }

  std::printf("flashtune %s\n", FLASHTUNE_VERSION);
  std::printf("nvrtc:    %s (archs: %s)\n", Compiler::NvrtcVersion().c_str(), JoinArchs(archs, " ").c_str());
  if (driver.ok())
    std::printf("driver:   CUDA %s (%s)\n", (*driver)->VersionString().c_str(), (*driver)->library().c_str());
  else
    std::printf("driver:   none\n");
  if (!problem.empty()) std::printf("gpus:     none: %s\n", problem.c_str());
  for (const DeviceInfo& d : devices) {
    std::printf("gpu %d:    %s, %s, cc %s (%s), %d SMs, smem opt-in %d B/block, L2 %d KiB, clock %d MHz, "
                "memory %.1f GiB\n",
                d.ordinal, d.name.c_str(), d.uuid.c_str(), d.ComputeCapability().c_str(), d.Arch().c_str(),
                d.sm_count, d.max_smem_per_block_optin, d.l2_bytes / 1024, d.clock_khz / 1000,
                static_cast<double>(d.total_memory_bytes) / (1024.0 * 1024.0 * 1024.0));
  }
  std::printf("cache:    %s\n", cache.c_str());
  std::printf("database: %s\n", database.c_str());
  return kExitOk;
}

}  // namespace

FT_CLI_COMMAND("info", "show NVRTC, the CUDA driver, GPUs, cache folder and database path",
               RunInfo);

}  // namespace flashtune::cli
