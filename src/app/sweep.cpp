#include "xl/app/sweep.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <iostream>

#include "xl/app/cli.h"
#include "xl/lab/compare.h"
#include "xl/lab/plot.h"
#include "xl/run/logging.h"
#include "xl/run/outputs.h"
#include "xl/run/run_dir.h"
#include "xl/util/error.h"
#include "xl/util/log.h"

namespace xl::app {

namespace {

namespace fs = std::filesystem;

std::string command_line(const std::vector<std::string>& argv) {
  std::vector<std::string> words;
  for (const auto& a : argv) {
    words.push_back(shell_quote(a));
  }
  return fmt::format("{}", fmt::join(words, " "));
}

// The running child, and the first SIGINT/SIGTERM/SIGHUP the sweep received (0: none).
volatile sig_atomic_t running_child = 0;
volatile sig_atomic_t stop_signal = 0;

// The sweep passes a signal on to the run it waits for, which checkpoints and exits; the sweep
// then stops with 128 + the signal (run_sweep) instead of starting the next run.
void forward_signal(int sig) {
  if (stop_signal == 0 && sig != SIGUSR1) { // SIGUSR1: a checkpoint, and the sweep goes on
    stop_signal = sig;
  }
  if (running_child > 0) {
    ::kill(static_cast<pid_t>(running_child), sig);
  }
}

// Runs argv[0] with its arguments and returns its exit status (128 + the signal that ended
// it), or 128 + the signal that stopped the sweep before it could start. The child has a
// process group of its own, so that a terminal's Ctrl-C reaches it once (through the sweep),
// not twice (a second signal makes xl-train exit without finishing its step); and it gets
// SIGTERM when the sweep dies, even by SIGKILL, so that no run trains on as an orphan.
int run_child(const std::vector<std::string>& argv) {
  if (stop_signal != 0) {
    return 128 + stop_signal;
  }
  const pid_t parent = ::getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    if (::prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || ::getppid() != parent) {
      _exit(128 + SIGTERM); // the sweep is already gone
    }
    for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGUSR1}) {
      signal(sig, SIG_DFL);
    }
    dup2(STDERR_FILENO,
         STDOUT_FILENO); // the sweep's stdout holds its table alone
    std::vector<char*> args;
    for (const auto& a : argv) {
      args.push_back(const_cast<char*>(a.c_str()));
    }
    args.push_back(nullptr);
    execvp(args[0], args.data()); // a bare name: found on the PATH, as the sweep was
    std::perror(args[0]);
    _exit(127);
  }
  if (pid < 0) {
    throw UserError("cannot start " + argv[0]);
  }
  running_child = pid;
  if (stop_signal != 0) { // arrived between the check above and now
    ::kill(pid, stop_signal);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  running_child = 0;
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

std::vector<std::string> train_argv(
    const lab::SweepSpec& spec,
    const lab::SweepRun& run,
    bool enforce_memory) {
  std::vector<std::string> argv{app_path("xl-train"), "--config", spec.config};
  for (const auto& o : run.overrides) {
    argv.insert(argv.end(), {"--set", o});
  }
  argv.push_back("--auto-resume");
  if (!enforce_memory) {
    argv.push_back("--skip-memory-check");
  }
  return argv;
}

// What one run of the sweep came to.
struct RunOutcome {
  int signal_status = 0; // > 128: stopped by a signal, the sweep stops too
  std::vector<std::string> failed;
};

// Trains (or resumes, or skips a finished) run `r`, then evaluates it where asked and not done.
RunOutcome sweep_run(
    const SweepRequest& request,
    const lab::SweepRun& r,
    const std::string& where) {
  RunOutcome outcome;
  const auto state = lab::run_state(r);
  if (state == lab::RunState::kFinished) {
    logger().info("{}: finished at step {}, skipped", where, r.config.train.max_step);
  } else {
    logger().info(
        "{}: {} ({})",
        where,
        state == lab::RunState::kNew ? "training" : "resuming",
        fmt::join(
            r.overrides.begin(),
            r.overrides.end() - 2, // all but run.name and run.dir
            " "));
    const int status = run_child(train_argv(request.spec, r, request.enforce_memory));
    if (status > 128) { // stopped by a signal: the run is checkpointed
      logger().warn(
          "{}: stopped by signal {}; the same command resumes the sweep", where, status - 128);
      outcome.signal_status = status;
      return outcome;
    }
    if (status != 0) {
      logger().error("{}: xl-train failed (exit {}), going on", where, status);
      outcome.failed.push_back(r.name);
      return outcome;
    }
  }
  const auto dir = run::directory_of(r.config);
  if (request.evaluate && lab::summarize_run(dir).evaluations.empty()) {
    logger().info("{}: evaluating", where);
    const int status = run_child({app_path("xl-eval"), "--run", dir.string()});
    if (status > 128) {
      outcome.signal_status = status;
    } else if (status != 0) {
      outcome.failed.push_back(r.name + " (xl-eval)");
    }
  }
  return outcome;
}

// A compare.csv or curves.png in the folder is the sweep's own (its mark beside them) or replaced
// only with --force.
void check_own_table(const SweepRequest& request) {
  const auto& dir = request.spec.dir;
  std::error_code ec;
  if (request.force || fs::exists(dir / kSweepMark, ec)) {
    return;
  }
  for (const char* name : {lab::kSweepTable, lab::kSweepCurves}) {
    if (fs::exists(dir / name, ec)) {
      throw UserError(fmt::format(
          "--dir {}: {} is there, and no sweep wrote it; pass --force to replace it, or choose "
          "another --dir",
          dir.string(),
          name));
    }
  }
}

// The table and curves of the runs that wrote metrics, on stdout and in the sweep's folder.
void write_sweep_table(const SweepRequest& request, const std::vector<lab::SweepRun>& runs) {
  std::vector<lab::RunSummary> summaries;
  for (const auto& r : runs) {
    const auto dir = run::directory_of(r.config);
    if (fs::exists(dir / "metrics.jsonl")) {
      summaries.push_back(lab::summarize_run(dir));
    }
  }
  if (summaries.empty()) {
    return;
  }
  const auto table = lab::compare_runs(summaries);
  std::cout << lab::to_markdown(table) << std::flush;
  run::write_output_file("--dir", request.spec.dir / kSweepMark, "written by xl-sweep\n");
  const auto csv = request.spec.dir / lab::kSweepTable;
  run::write_output_file("--dir", csv, lab::to_csv(table));
  const auto png = request.spec.dir / lab::kSweepCurves;
  run::write_output_file("--dir", png, lab::plot_curves(summaries));
  logger().info("the table is also in {}, the curves in {}", csv.string(), png.string());
}

} // namespace

int run_sweep(const SweepRequest& request) {
  run::setup_logging("info");
  struct sigaction forward {};
  forward.sa_handler = forward_signal;
  sigemptyset(&forward.sa_mask);
  for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGUSR1}) {
    sigaction(sig, &forward, nullptr);
  }
  // A sweep continues in its folder (no --force): only a run's own folder is refused, and a
  // table or plot of the user's there.
  run::check_output_folder("--dir", request.spec.dir.string(), true);
  check_own_table(request);
  const auto runs = lab::expand_sweep(request.spec);
  if (request.dry_run) {
    for (const auto& r : runs) {
      std::cout << command_line(train_argv(request.spec, r, request.enforce_memory)) << "\n";
    }
    return 0;
  }
  std::vector<std::string> failed;
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::string where = fmt::format("[{}/{}] {}", i + 1, runs.size(), runs[i].name);
    const RunOutcome outcome = sweep_run(request, runs[i], where);
    if (outcome.signal_status > 128) {
      return outcome.signal_status;
    }
    failed.insert(failed.end(), outcome.failed.begin(), outcome.failed.end());
  }
  if (stop_signal != 0) { // after the last run ended: no table of a sweep asked to stop
    return 128 + stop_signal;
  }
  write_sweep_table(request, runs);
  if (!failed.empty()) {
    throw UserError(fmt::format(
        "{} of {} runs failed: {} (each one's error is above); the same command resumes the "
        "sweep once they are fixed",
        failed.size(),
        runs.size(),
        fmt::join(failed, ", ")));
  }
  return 0;
}

} // namespace xl::app
