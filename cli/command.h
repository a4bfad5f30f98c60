// The `flashtune` CLI's subcommand registry. Each subcommand lives in its own
// cli/<name>_command.cpp and registers itself with FT_CLI_COMMAND; main.cpp dispatches.
// Exit codes: 0 success, 1 the operation failed (message on stderr), 2 bad usage.
#pragma once

#include <string>
#include <vector>

namespace flashtune::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

struct Command {
  const char* name;
  const char* summary;  // one line, shown by `flashtune --help`
  // args excludes the program and subcommand names.
  int (*run)(const std::vector<std::string>& args);
};

// Adds a command at static-initialisation time; returns true so it can initialise a static.
bool RegisterCommand(Command command);
// All registered commands, sorted by name.
const std::vector<Command>& Commands();
// The path of the running flashtune binary ("" when /proc/self/exe cannot be read).
std::string SelfExecutable();

}  // namespace flashtune::cli

#define FT_CLI_COMMAND(name, summary, fn) \
  static const bool ft_cli_registered_##fn = ::flashtune::cli::RegisterCommand({name, summary, fn})
