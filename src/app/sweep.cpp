#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <iostream>

#include "xl/app/commands.h"
#include "xl/run/compare.h"
#include "xl/run/logging.h"
#include "xl/run/plot.h"
#include "xl/run/run_dir.h"
#include "xl/util/error.h"

namespace xl::app {

namespace {

namespace fs = std::filesystem;

// xl-train and xl-eval sit beside the running binary.
std::string sibling(const std::string& app) {
  return (fs::read_symlink("/proc/self/exe").parent_path() / app).string();
}

std::string shell_quoted(const std::string& word) {
  if (!word.empty() &&
      word.find_first_not_of(
          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/=,+:") ==
          std::string::npos) {
    return word;
  }
  std::string out = "'";
  for (const char c : word) {
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return out + "'";
}

std::string command_line(const std::vector<std::string>& argv) {
  std::vector<std::string> words;
  for (const auto& a : argv) {
    words.push_back(shell_quoted(a));
  }
  return fmt::format("{}", fmt::join(words, " "));
}

// Runs argv[0] with its arguments and returns its exit status (128 + the signal that ended
// it). The sweep ignores SIGINT and SIGTERM meanwhile: the child gets them from the terminal
// or the group, checkpoints and exits, and the sweep then stops.
int run_child(const std::vector<std::string>& argv) {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction old_int {};
  struct sigaction old_term {};
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGTERM, &ignore, &old_term);
  const pid_t pid = fork();
  if (pid == 0) {
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    dup2(
        STDERR_FILENO,
        STDOUT_FILENO); // the sweep's stdout holds its table alone
    std::vector<char*> args;
    for (const auto& a : argv) {
      args.push_back(const_cast<char*>(a.c_str()));
    }
    args.push_back(nullptr);
    execv(args[0], args.data());
    std::perror(args[0]);
    _exit(127);
  }
  int status = 0;
  while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  if (pid < 0) {
    throw UserError("cannot start " + argv[0]);
  }
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

std::vector<std::string> train_argv(
    const run::SweepSpec& spec,
    const run::SweepRun& run,
    bool enforce_memory) {
  std::vector<std::string> argv{sibling("xl-train"), "--config", spec.config};
  for (const auto& o : run.overrides) {
    argv.insert(argv.end(), {"--set", o});
  }
  argv.push_back("--auto-resume");
  if (!enforce_memory) {
    argv.push_back("--skip-memory-check");
  }
  return argv;
}

} // namespace

int run_sweep(const SweepRequest& request) {
  run::setup_logging("info");
  const auto runs = run::expand_sweep(request.spec);
  if (request.dry_run) {
    for (const auto& r : runs) {
      std::cout << command_line(
                       train_argv(request.spec, r, request.enforce_memory))
                << "\n";
    }
    return 0;
  }
  std::vector<std::string> failed;
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    const auto dir = run::run_directory(r.config);
    const auto state = run::run_state(r);
    const std::string where =
        fmt::format("[{}/{}] {}", i + 1, runs.size(), r.name);
    if (state == run::RunState::kFinished) {
      spdlog::info(
          "{}: finished at step {}, skipped", where, r.config.train.max_step);
    } else {
      spdlog::info(
          "{}: {} ({})",
          where,
          state == run::RunState::kNew ? "training" : "resuming",
          fmt::join(
              r.overrides.begin(),
              r.overrides.end() - 2, // all but run.name and run.dir
              " "));
      const int status =
          run_child(train_argv(request.spec, r, request.enforce_memory));
      if (status > 128) { // stopped by a signal: the run is checkpointed
        spdlog::warn(
            "{}: stopped by signal {}; the same command resumes the sweep",
            where,
            status - 128);
        return status;
      }
      if (status != 0) {
        spdlog::error("{}: xl-train failed (exit {}), going on", where, status);
        failed.push_back(r.name);
        continue;
      }
    }
    if (request.evaluate && run::summarize_run(dir).evaluations.empty()) {
      spdlog::info("{}: evaluating", where);
      const int status = run_child({sibling("xl-eval"), "--run", dir.string()});
      if (status > 128) {
        return status;
      }
      if (status != 0) {
        failed.push_back(r.name + " (xl-eval)");
      }
    }
  }

  std::vector<run::RunSummary> summaries;
  for (const auto& r : runs) {
    const auto dir = run::run_directory(r.config);
    if (fs::exists(dir / "metrics.jsonl")) {
      summaries.push_back(run::summarize_run(dir));
    }
  }
  if (!summaries.empty()) {
    const auto table = run::compare_runs(summaries);
    std::cout << run::to_markdown(table) << std::flush;
    const auto csv = request.spec.dir / "compare.csv";
    std::ofstream(csv) << run::to_csv(table);
    const auto png = request.spec.dir / "curves.png";
    run::plot_curves(summaries, png);
    spdlog::info(
        "the table is also in {}, the curves in {}",
        csv.string(),
        png.string());
  }
  if (!failed.empty()) {
    spdlog::error("failed: {}", fmt::join(failed, ", "));
    return 1;
  }
  return 0;
}

} // namespace xl::app
