// flashtune: the command-line entry point. Dispatches to the registered subcommands.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/command.h"
#include "tuner/gpu_protocol.h"

namespace flashtune::cli {

static std::vector<Command>& Registry() {
  static std::vector<Command> commands;
  return commands;
}

bool RegisterCommand(Command command) {
  auto& commands = Registry();
  commands.push_back(command);
  std::sort(commands.begin(), commands.end(),
            [](const Command& a, const Command& b) { return std::string(a.name) < b.name; });
  return true;
}

const std::vector<Command>& Commands() { return Registry(); }

std::string SelfExecutable() {
  std::error_code ec;
  auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : path.string();
}

static void PrintUsage(std::FILE* out) {
  std::fprintf(out,
               "flashtune %s — attention kernels (forward, backward, decode) generated, compiled and tuned for this GPU\n\n"
               "usage: flashtune <command> [options]   (flashtune <command> --help for its options)\n\n"
               "commands:\n",
               FLASHTUNE_VERSION);
  for (const Command& c : Commands()) std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
}

}  // namespace flashtune::cli

int main(int argc, char** argv) {
  using namespace flashtune::cli;
  if (argc < 2) {
    PrintUsage(stderr);
    return kExitUsage;
  }
  const std::string name = argv[1];
  // Not a user command: the tuner execs `flashtune __gpu-worker ORDINAL REQUEST_FD REPLY_FD` to
  // get a GPU worker process with fresh CUDA state (see tuner/worker_process.h).
  if (name == flashtune::kGpuWorkerCommand) {
    if (argc != 5) return kExitUsage;
    return flashtune::detail::GpuWorkerMain(std::atoi(argv[3]), std::atoi(argv[4]), std::atoi(argv[2]));
  }
  if (name == "--help" || name == "-h" || name == "help") {
    PrintUsage(stdout);
    return kExitOk;
  }
  if (name == "--version") {
    std::printf("flashtune %s\n", FLASHTUNE_VERSION);
    return kExitOk;
  }
  for (const Command& c : Commands()) {
    if (name == c.name) return c.run(std::vector<std::string>(argv + 2, argv + argc));
  }
  std::fprintf(stderr, "flashtune: unknown command '%s'; allowed:", name.c_str());
  for (const Command& c : Commands()) std::fprintf(stderr, " %s", c.name);
  std::fprintf(stderr, "\n");
  return kExitUsage;
}
