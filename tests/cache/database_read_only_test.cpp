// A tuning database shipped read-only (file and directory not writable) is read by the
// library, the runtime and the CLI, as a user who cannot write it: root can write anything,
// so as root these tests drop to `nobody` (a forked child for the library, setpriv for the CLI).
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <optional>
#include <fstream>
#include <sstream>

#include "flashtune/database.h"
#include "flashtune/runtime.h"
#include "tests/runtime/tuned_db.h"
#include "tests/support/replay_fixture.h"

namespace flashtune {
namespace {

using namespace flashtune::testing;

constexpr uid_t kNobody = 65534;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A tuned database copied into `dir`/ro/t.db, then the file made 0444 and ro/ 0555 (or only the
// file, when `directory_too` is false). Returns the path.
std::string ShipReadOnly(const std::string& dir, bool directory_too) {
  const std::string tuned = MakeTunedDatabase(dir);
  const std::string ro = dir + "/ro";
  std::filesystem::create_directories(ro);
  std::filesystem::copy_file(tuned, ro + "/t.db");
  ::chmod((ro + "/t.db").c_str(), 0444);
  ::chmod(ro.c_str(), directory_too ? 0555 : 0777);
  return ro + "/t.db";
}

// Runs `body` in a child process that cannot write the database: as `nobody` when this test
// runs as root. The child's message (empty = passed) comes back through a pipe; nullopt when the
// child could not drop privileges.
std::optional<std::string> AsUnprivileged(const std::function<std::string()>& body) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    if (::geteuid() == 0 && (::setgid(kNobody) != 0 || ::setuid(kNobody) != 0)) ::_exit(77);
    const std::string message = body();
    if (!message.empty() && ::write(fds[1], message.data(), message.size()) < 0) ::_exit(2);
    ::_exit(message.empty() ? 0 : 1);
  }
  ::close(fds[1]);
  std::string message;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) message.append(buf, size_t(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) return std::nullopt;
  if (!WIFEXITED(status)) return "the child died";
  return message;
}

// The library and the runtime read it: problems, winners, and an exact plan.
std::string ReadsTheTunedDatabase(const std::string& path) {
  Database::OpenOptions ro;
  ro.read_only = true;
  auto db = Database::Open(path, ro);
  if (!db.ok()) return "Database::Open: " + db.status().ToString();
  auto problems = (*db)->ListProblems();
  if (!problems.ok() || problems->size() != TunedProblems().size())
    return "ListProblems: " + (problems.ok() ? std::to_string(problems->size()) + " rows" : problems.status().ToString());
  auto winners = (*db)->ListWinners();
  if (!winners.ok() || winners->size() != TunedProblems().size()) return "ListWinners failed";
  RuntimeOptions options;
  options.db_path = path;
  options.device_override = TunedDevice();
  auto runtime = Runtime::Open(options);
  if (!runtime.ok()) return "Runtime::Open: " + runtime.status().ToString();
  auto plan = (*runtime)->plan(TunedProblems()[0]);
  if (!plan.ok()) return "plan: " + plan.status().ToString();
  if (plan->source != PlanSource::kExact) return "plan: not exact: " + plan->why;
  return "";
}

TEST(DatabaseReadOnly, ReadersOfAReadOnlyDirectoryWork) {
  const std::string dir = TempDir("db_read_only_dir");
  const std::string path = ShipReadOnly(dir, /*directory_too=*/true);
  const std::string before = ReadAll(path);
  auto message = AsUnprivileged([&] { return ReadsTheTunedDatabase(path); });
  if (!message) GTEST_SKIP() << "cannot drop root privileges to user nobody (setuid failed)";
  EXPECT_EQ(*message, "");
  EXPECT_EQ(ReadAll(path), before);
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
}

TEST(DatabaseReadOnly, ReadersOfAReadOnlyFileLeaveNoFilesBehind) {
  const std::string dir = TempDir("db_read_only_file");
  const std::string path = ShipReadOnly(dir, /*directory_too=*/false);
  auto message = AsUnprivileged([&] { return ReadsTheTunedDatabase(path); });
  if (!message) GTEST_SKIP() << "cannot drop root privileges to user nobody (setuid failed)";
  EXPECT_EQ(*message, "");
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
  EXPECT_FALSE(std::filesystem::exists(path + "-shm"));
}

// The CLI's readers, as a process of a user who cannot write the database.
TEST(DatabaseReadOnly, CliReadersOfAReadOnlyDirectoryWork) {
  const std::string dir = TempDir("db_read_only_cli");
  const std::string path = ShipReadOnly(dir, /*directory_too=*/true);
  std::string as_user;
  if (::geteuid() == 0) {
    if (RunShell("command -v setpriv >/dev/null") != 0) GTEST_SKIP() << "running as root without setpriv";
    as_user = "setpriv --reuid=65534 --regid=65534 --clear-groups -- ";
  }
  const std::string out = dir + "/out.txt";
  auto run = [&](const std::string& args) {
    return RunShell(as_user + "'" FLASHTUNE_CLI_PATH "' " + args + " > '" + out + "' 2>&1");
  };
  EXPECT_EQ(run("db list --db '" + path + "'"), 0) << ReadAll(out);
  EXPECT_NE(ReadAll(out).find(std::to_string(TunedProblems().size()) + " problem(s)"), std::string::npos)
      << ReadAll(out);
  EXPECT_EQ(run("db check --db '" + path + "'"), 0) << ReadAll(out);
  const Problem p = TunedProblems()[0];
  EXPECT_EQ(run("plan --dtype bf16 --head-dim 128 --batch " + std::to_string(p.batch) + " --seqlen-q " +
                std::to_string(p.seqlen_q) + " --heads-q " + std::to_string(p.heads_q) + " --device-uuid " +
                TunedDevice().uuid + " --db '" + path + "'"),
            0)
      << ReadAll(out);
  EXPECT_NE(ReadAll(out).find("source:   exact"), std::string::npos) << ReadAll(out);
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
}

}  // namespace
}  // namespace flashtune
