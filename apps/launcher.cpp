// The command a user runs: build/bin/xl-train (bin/xl-train once installed) is this launcher,
// which bounds the spinning of LibTorch's OpenMP threads and runs the program itself,
// ../libexec/xl/xl-train from its own folder, in its place (exec: the same process, with its
// name, arguments and environment).
//
// libgomp reads GOMP_SPINCOUNT once, in its own initialiser, and waits up to 300,000 spins for
// work by default, which on cores shared with another busy process burns the time slices that
// process needs: two 2-thread runs on 2 cores fell to a third of their speed
// (docs/benchmarks/cpu-speed.md, "Threads on shared cores"). Unless the user sets
// OMP_WAIT_POLICY or GOMP_SPINCOUNT, the launcher sets GOMP_SPINCOUNT=10000 before the program
// (and LibTorch with it) is loaded: LibTorch loads once, and the process keeps its name (`ps -o
// comm`, `pgrep xl-train`), where a program re-executing itself loaded it twice. The launcher
// links no xl or LibTorch code: it starts in about a millisecond.
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

// Where the programs sit, from the launchers' folder.
constexpr const char* kPrograms = "/../libexec/xl/";

} // namespace

int main(int /*argc*/, char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") == nullptr && std::getenv("GOMP_SPINCOUNT") == nullptr) {
    setenv("GOMP_SPINCOUNT", "10000", 1);
  }
  // SIGUSR1, which batch schedulers send every process of a job ahead of its time limit, would
  // end the program while LibTorch loads; ignored through the exec, until xl-train asks for it.
  std::signal(SIGUSR1, SIG_IGN);
  // The launcher's own file (through any link to it) names the program.
  char self[PATH_MAX];
  const ssize_t length = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (length <= 0) {
    std::fprintf(
        stderr, "error: %s: cannot find its own file: %s\n", argv[0], std::strerror(errno));
    return 127;
  }
  const std::string launcher(self, static_cast<size_t>(length));
  const size_t slash = launcher.rfind('/');
  const std::string program = launcher.substr(0, slash) + kPrograms + launcher.substr(slash + 1);
  execv(program.c_str(), argv);
  std::fprintf(
      stderr,
      "error: cannot run %s: %s (the program this launcher, %s, runs: build it, or install "
      "both)\n",
      program.c_str(),
      std::strerror(errno),
      launcher.c_str());
  return 127;
}
