#include "e2e_util.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "xl/prep/prepare.h"
#include "xl/run/checkpoint.h"

namespace xl::test {

const fs::path& corpus_dir() {
  // Shared by the program's tests, removed when it ends.
  static const TempDir folder("xl-e2e-corpus-");
  static const fs::path dir = [] {
    const fs::path& d = folder.path();
    prep::PrepOptions options;
    options.splits["train"] = testdata("wikitext-2/wiki.valid.tokens");
    options.splits["valid"] = testdata("wikitext-2/wiki.test.tokens");
    options.splits["test"] = testdata("wikitext-2/wiki.test.tokens");
    options.out = d;
    prep::prepare_corpus(options);
    return d;
  }();
  return dir;
}

std::string train_command(const fs::path& run, const std::string& extra) {
  return std::string(kBinDir) + "/xl-train --config " + kSourceDir +
      "/configs/txl/tiny.yaml --set data.dir=" + corpus_dir().string() +
      " --set run.dir=" + run.string() + " " + extra;
}

int64_t checkpoint_step(const fs::path& run) {
  torch::serialize::InputArchive archive;
  return run::load_checkpoint(run / "checkpoints/last.pt", archive).step;
}

pid_t spawn(const std::string& command, const fs::path& cwd) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    if (::chdir(cwd.c_str()) != 0) {
      ::_exit(127);
    }
    const std::string quiet = "exec " + command + " >/dev/null 2>&1";
    ::execl("/bin/sh", "sh", "-c", quiet.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

int signal_after_step(pid_t pid, const fs::path& run, int64_t step, int sig) {
  for (int i = 0; i < 6000; ++i) {
    std::error_code ec;
    if (fs::exists(run / "metrics.jsonl", ec)) {
      const auto losses = train_losses(run);
      if (!losses.empty() && losses.rbegin()->first >= step) {
        break;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid, sig);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

std::string app(const std::string& name) {
  return std::string(kBinDir) + "/" + name;
}

std::string config_file(const std::string& relative) {
  return std::string(kSourceDir) + "/" + relative;
}

} // namespace xl::test
