// Training runs as a user starts them: exact resume after a clean stop, after
// SIGKILL and after SIGTERM; evaluation of the result; data-parallel runs.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "test_util.h"
#include "xl/config/config.h"
#include "xl/data/corpus.h"
#include "xl/data/dataset.h"
#include "xl/io/archive.h"
#include "xl/models/factory.h"
#include "xl/run/checkpoint.h"
#include "xl/run/run_dir.h"
#include "xl/run/tensorboard.h"

namespace xl::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A small WikiText-2 corpus (valid split as training data), prepared once.
const fs::path& corpus_dir() {
  static const fs::path dir = [] {
    const fs::path d = fs::temp_directory_path() /
        ("xl-e2e-corpus-" + std::to_string(::getpid()));
    data::PrepOptions options;
    options.splits["train"] = testdata("wikitext-2/wiki.valid.tokens");
    options.splits["valid"] = testdata("wikitext-2/wiki.test.tokens");
    options.splits["test"] = testdata("wikitext-2/wiki.test.tokens");
    options.out = d;
    data::prepare_corpus(options);
    return d;
  }();
  return dir;
}

std::string train_command(const fs::path& run, const std::string& extra = "") {
  return std::string(kBinDir) + "/xl-train --config " + kSourceDir +
      "/configs/txl/tiny.yaml --set data.dir=" + corpus_dir().string() +
      " --set run.dir=" + run.string() + " " + extra;
}

int64_t checkpoint_step(const fs::path& run) {
  torch::serialize::InputArchive archive;
  return run::load_checkpoint(run / "checkpoints/last.pt", archive).step;
}

// A run "r" in `dir`, stopped (with a checkpoint) at step 10.
void train_ten_steps(const TempDir& dir) {
  const auto r =
      run_command(train_command(dir / "r", "--stop-at-step 10"), dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
}

void expect_same_losses_after(
    const std::map<int64_t, double>& reference,
    const std::map<int64_t, double>& resumed,
    int64_t from,
    int64_t to) {
  for (int64_t step = from + 1; step <= to; ++step) {
    ASSERT_TRUE(reference.count(step) && resumed.count(step))
        << "step " << step;
    EXPECT_EQ(reference.at(step), resumed.at(step)) << "step " << step;
  }
}

// Starts `command` in the background (its own process group) and returns its
// pid.
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

// Waits until the run has logged `step`, then sends `sig`; returns the exit
// status word.
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

TEST(Training, StopAndResumeGivesTheUninterruptedLossSequence) {
  TempDir dir;
  const auto full = run_command(train_command(dir / "full"), dir.path());
  ASSERT_EQ(full.status, 0) << full.output;
  const auto first = run_command(
      train_command(dir / "split", "--stop-at-step 17"), dir.path());
  ASSERT_EQ(first.status, 0) << first.output;
  EXPECT_EQ(checkpoint_step(dir / "split"), 17);
  const auto again = run_command(train_command(dir / "split"), dir.path());
  EXPECT_EQ(again.status, 2);
  EXPECT_THAT(
      again.output, HasSubstr("already holds checkpoints; pass --resume"));
  const auto second =
      run_command(train_command(dir / "split", "--resume"), dir.path());
  ASSERT_EQ(second.status, 0) << second.output;
  EXPECT_THAT(second.output, HasSubstr("resumed"));
  EXPECT_THAT(
      read_text(dir / "split/metrics.jsonl"),
      HasSubstr(
          "{\"changes\":[],\"event\":\"resumed\",\"logged_until\":17,\"step\":17,"));
  expect_same_losses_after(
      train_losses(dir / "full"), train_losses(dir / "split"), 17, 40);
}

// An interrupted run, resumed, continues the reference run's loss sequence
// exactly from its last checkpoint. Both use a constant learning rate, so that
// the interrupted run can be started with a huge max_step (it never ends by
// itself) and still follow the reference. Returns the checkpointed step the
// resumed run started from.
int64_t interrupt_and_resume(
    const TempDir& dir,
    int sig,
    int64_t after_step,
    int* status) {
  const std::string constant = "--set train.scheduler=constant";
  const auto reference =
      run_command(train_command(dir / "ref", constant), dir.path());
  EXPECT_EQ(reference.status, 0) << reference.output;
  const pid_t pid = spawn(
      train_command(dir / "cut", constant + " --set train.max_step=1000000"),
      dir.path());
  *status = signal_after_step(pid, dir / "cut", after_step, sig);
  const int64_t saved = checkpoint_step(dir / "cut");
  const auto resumed = run_command(
      train_command(dir / "cut", constant + " --resume"), dir.path());
  EXPECT_EQ(resumed.status, 0) << resumed.output;
  expect_same_losses_after(
      train_losses(dir / "ref"), train_losses(dir / "cut"), saved, 40);
  return saved;
}

TEST(Training, SigkillMidRunLosesNothingBeforeTheLastCheckpoint) {
  TempDir dir;
  int status = 0;
  const int64_t saved = interrupt_and_resume(dir, SIGKILL, 25, &status);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_GE(saved, 20);
  EXPECT_EQ(saved % 10, 0); // only the periodic checkpoints were written
}

TEST(Training, SigtermCheckpointsThenExits) {
  TempDir dir;
  int status = 0;
  const int64_t saved = interrupt_and_resume(dir, SIGTERM, 13, &status);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM);
  EXPECT_GE(
      saved, 13); // the step the signal arrived in, not an earlier periodic one
  EXPECT_LT(saved, 40);
}

// Another model, or settings the saved state depends on, are refused before anything in the
// run changes; other settings are applied and listed.
TEST(Training, ResumeRefusesAnotherModelOrBatchesAndAppliesTheRest) {
  TempDir dir;
  train_ten_steps(dir);
  const auto config = read_text(dir / "r/config.yaml");
  auto r = run_command(
      train_command(dir / "r", "--resume --set model.d_inner=48"), dir.path());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.output, HasSubstr("was made with a different config"));
  EXPECT_THAT(r.output, HasSubstr("model.d_inner: checkpoint 64, config 48"));
  EXPECT_EQ(read_text(dir / "r/config.yaml"), config);
  r = run_command(
      train_command(
          dir / "r",
          "--resume --set train.batch_size=8 --set train.optim=sgd --set train.lr=0.01"),
      dir.path());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.output, HasSubstr("train.batch_size: 4 -> 8"));
  EXPECT_THAT(r.output, HasSubstr("train.optim: adam -> sgd"));
  EXPECT_THAT(r.output, Not(HasSubstr("train.lr")));
  EXPECT_EQ(read_text(dir / "r/config.yaml"), config);
  EXPECT_EQ(checkpoint_step(dir / "r"), 10);
  r = run_command(
      train_command(
          dir / "r", "--resume --set train.lr=0.001 --set train.max_step=12"),
      dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("changed: train.lr: 0.002 -> 0.001"));
  EXPECT_THAT(
      read_text(dir / "r/metrics.jsonl"),
      HasSubstr(
          "{\"changes\":[\"train.lr: 0.002 -> 0.001\",\"train.max_step: 40 -> 12\"],"
          "\"event\":\"resumed\",\"logged_until\":10,\"step\":10,"));
  EXPECT_THAT(read_text(dir / "r/config.yaml"), HasSubstr("lr: 0.001"));
}

TEST(Evaluation, MemoryAndVanillaModesReportPerplexity) {
  TempDir dir;
  ASSERT_EQ(
      run_command(
          train_command(dir / "r", "--set train.max_step=20"), dir.path())
          .status,
      0);
  const std::string eval =
      std::string(kBinDir) + "/xl-eval --run " + (dir / "r").string();
  const auto memory = run_command(eval + " --max-steps 20", dir.path());
  ASSERT_EQ(memory.status, 0) << memory.output;
  EXPECT_THAT(memory.output, HasSubstr("tgt_len 16, batch 4, mem_len 32"));
  EXPECT_THAT(memory.output, HasSubstr("test | loss "));
  EXPECT_THAT(memory.output, HasSubstr(" | ppl "));
  const auto vanilla = run_command(
      eval + " --set eval.mode=vanilla --max-steps 5 --checkpoint last",
      dir.path());
  ASSERT_EQ(vanilla.status, 0) << vanilla.output;
  EXPECT_THAT(vanilla.output, HasSubstr("vanilla: window 16"));
  EXPECT_THAT(vanilla.output, HasSubstr("| 20 tokens |"));
  // A stride scores the last S positions of each window: labelled, never the paper's metric.
  const auto strided = run_command(
      eval + " --set eval.mode=vanilla --set eval.stride=4 --max-steps 5",
      dir.path());
  ASSERT_EQ(strided.status, 0) << strided.output;
  EXPECT_THAT(strided.output, HasSubstr("last 4 positions scored, slide 4"));
  EXPECT_THAT(strided.output, HasSubstr(" | ppl@stride=4 "));
  EXPECT_THAT(strided.output, HasSubstr("| 80 tokens |"));
  EXPECT_THAT(
      read_text(dir / "r/metrics.jsonl"), HasSubstr("\"ppl@stride=4\":"));
  const auto missing = run_command(
      std::string(kBinDir) + "/xl-eval --run " + (dir / "none").string(),
      dir.path());
  EXPECT_EQ(missing.status, 2);
  EXPECT_THAT(
      missing.output, HasSubstr("none: no such folder; name a run directory"));
  const auto file = run_command(
      std::string(kBinDir) + "/xl-eval --run " +
          (dir / "r/metrics.jsonl").string(),
      dir.path());
  EXPECT_EQ(file.status, 2);
  EXPECT_THAT(file.output, HasSubstr("metrics.jsonl: a file, not a folder"));
}

// xl-sweep: a run stopped early is resumed, the others trained, each evaluated once; the same
// command again skips them all; the table goes to stdout, a CSV and a plot beside the runs.
TEST(Sweep, ResumesInterruptedRunsSkipsFinishedOnesAndEndsWithTheComparison) {
  TempDir dir;
  const std::string common = std::string(kBinDir) + "/xl-sweep -c " +
      kSourceDir +
      "/configs/txl/tiny.yaml --set data.dir=" + corpus_dir().string() +
      " train.max_step=12 eval.batch_size=32 --dir sw";
  const std::string sweep = common +
      " --variant full --variant 'nomem model.transformer_xl.mem_len=0'"
      " --grid train.lr=0.002,0.001";
  // A dry run prints the commands a scheduler would run; one of them is started and stopped.
  const auto dry =
      run_command("{ " + sweep + " --dry-run 2>/dev/null; }", dir.path());
  ASSERT_EQ(dry.status, 0) << dry.output;
  std::istringstream lines(dry.output);
  std::vector<std::string> commands;
  for (std::string line; std::getline(lines, line);) {
    commands.push_back(line);
  }
  ASSERT_EQ(commands.size(), 4U) << dry.output;
  EXPECT_THAT(commands[3], HasSubstr("--set run.dir=sw/nomem,lr=0.001"));
  auto stopped = commands[1];
  stopped.replace(stopped.find("--auto-resume"), 13, "--stop-at-step 5");
  ASSERT_EQ(run_command(stopped, dir.path()).status, 0);
  EXPECT_EQ(checkpoint_step(dir / "sw/full,lr=0.001"), 5);

  const auto first = run_command("{ " + sweep + " 2>log.txt; }", dir.path());
  ASSERT_EQ(first.status, 0) << read_text(dir / "log.txt");
  const auto log = read_text(dir / "log.txt");
  EXPECT_THAT(log, HasSubstr("[1/4] full,lr=0.002: training"));
  EXPECT_THAT(log, HasSubstr("[2/4] full,lr=0.001: resuming"));
  EXPECT_THAT(log, HasSubstr("resumed"));
  EXPECT_THAT(log, HasSubstr("[4/4] nomem,lr=0.001: evaluating"));
  for (const auto* run :
       {"full,lr=0.002", "full,lr=0.001", "nomem,lr=0.002", "nomem,lr=0.001"}) {
    EXPECT_EQ(checkpoint_step(dir / "sw" / run), 12) << run;
  }
  // stdout: the table alone, one row per run and the keys that differ.
  EXPECT_EQ(first.output.rfind("| run ", 0), 0U) << first.output;
  EXPECT_THAT(
      first.output, HasSubstr("| model.transformer_xl.mem_len | train.lr |"));
  EXPECT_THAT(first.output, HasSubstr("| sw/nomem,lr=0.001 | 12 "));
  EXPECT_THAT(first.output, HasSubstr("test/memory ppl"));
  EXPECT_TRUE(fs::exists(dir / "sw/compare.csv"));
  EXPECT_TRUE(fs::exists(dir / "sw/curves.png"));

  const auto again = run_command("{ " + sweep + " 2>log.txt; }", dir.path());
  ASSERT_EQ(again.status, 0) << read_text(dir / "log.txt");
  EXPECT_THAT(
      read_text(dir / "log.txt"),
      HasSubstr("[2/4] full,lr=0.001: finished at step 12, skipped"));
  EXPECT_THAT(read_text(dir / "log.txt"), Not(HasSubstr("evaluating")));
  EXPECT_EQ(again.output, first.output);

  // A finished run is not silently reused for another config.
  const auto changed = run_command(
      common + " --set model.d_inner=48 --variant full --grid train.lr=0.002",
      dir.path());
  EXPECT_EQ(changed.status, 2);
  EXPECT_THAT(changed.output, HasSubstr("model.d_inner"));
}

// A scheduler's SIGTERM to xl-sweep reaches the run it trains, which checkpoints; the sweep
// stops with 143 instead of starting the next run, and the same command resumes. SIGKILL of the
// sweep leaves no orphan: its run gets SIGTERM, checkpoints and ends (its lock is released).
TEST(Sweep, ASignalStopsTheRunAndTheSweepAndAKilledSweepLeavesNoOrphan) {
  TempDir dir;
  const std::string sweep = std::string(kBinDir) + "/xl-sweep -c " +
      kSourceDir +
      "/configs/txl/tiny.yaml --set data.dir=" + corpus_dir().string() +
      " train.max_step=5000 --dir sw --variant a --variant 'b train.lr=0.001'";
  const auto run = dir / "sw/a";
  const int stopped =
      signal_after_step(spawn(sweep, dir.path()), run, 3, SIGTERM);
  ASSERT_TRUE(WIFEXITED(stopped)) << stopped;
  EXPECT_EQ(WEXITSTATUS(stopped), 128 + SIGTERM);
  const int64_t first = checkpoint_step(run);
  EXPECT_GE(first, 3);
  EXPECT_LT(first, 5000);
  EXPECT_FALSE(fs::exists(dir / "sw/b")); // the next run was not started

  const int killed =
      signal_after_step(spawn(sweep, dir.path()), run, first + 3, SIGKILL);
  ASSERT_TRUE(WIFSIGNALED(killed));
  // The orphaned run ends: its lock is free within seconds, after its checkpoint.
  bool released = false;
  for (int i = 0; i < 600 && !released; ++i) {
    const int fd = ::open((run / ".lock").c_str(), O_RDWR);
    released = fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    ::close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(released) << "the run trained on after its sweep was killed";
  EXPECT_GT(checkpoint_step(run), first);
}

// xl-sample: the prompt and the words drawn after it on stdout, the same for the same seed.
TEST(Sampling, ASeedGivesTheSameTextAndTheMemoryCarriesTheContext) {
  TempDir dir;
  ASSERT_EQ(
      run_command(
          train_command(dir / "r", "--set train.max_step=20"), dir.path())
          .status,
      0);
  const auto sample = [&](const std::string& flags) {
    return run_command(
        "{ " + std::string(kBinDir) + "/xl-sample --run " +
            (dir / "r").string() + " " + flags + " 2>err.log; }",
        dir.path());
  };
  const auto words = [](const std::string& text) {
    std::istringstream in(text);
    return std::vector<std::string>(std::istream_iterator<std::string>(in), {});
  };
  const auto a = sample("--prompt 'The game' --tokens 15 --seed 4 --top-k 50");
  ASSERT_EQ(a.status, 0) << read_text(dir / "err.log");
  EXPECT_EQ(a.output.rfind("The game ", 0), 0U) << a.output;
  // 15 tokens: words, and line breaks for <eos>.
  const auto n_words = static_cast<int64_t>(words(a.output).size());
  const auto n_breaks = std::count(a.output.begin(), a.output.end(), '\n');
  EXPECT_EQ(n_words - 2 + n_breaks - 1, 15) << a.output;
  EXPECT_THAT(
      read_text(dir / "err.log"),
      HasSubstr("one position per token over a memory of 32"));
  EXPECT_EQ(
      sample("--prompt 'The game' --tokens 15 --seed 4 --top-k 50").output,
      a.output);
  EXPECT_NE(
      sample("--prompt 'The game' --tokens 15 --seed 5 --top-k 50").output,
      a.output);

  write_file(dir / "prompt.txt", "The game");
  const auto from_file =
      sample("--prompt-file prompt.txt --tokens 15 --seed 4 --top-k 50");
  EXPECT_EQ(from_file.output, a.output);
  const auto no_memory = sample("--prompt 'The game' --tokens 5 --no-memory");
  ASSERT_EQ(no_memory.status, 0) << read_text(dir / "err.log");
  EXPECT_THAT(read_text(dir / "err.log"), HasSubstr("re-reading up to 32"));
  const auto two = sample("--tokens 4 --samples 2");
  ASSERT_EQ(two.status, 0) << read_text(dir / "err.log");
  EXPECT_THAT(two.output, HasSubstr("--- sample 2 ---"));

  EXPECT_EQ(sample("--top-p 0").status, 2);
  EXPECT_THAT(
      read_text(dir / "err.log"),
      HasSubstr("--top-p 0: expected a probability above 0"));
  // Words the vocabulary lacks are read as <unk>, and the user is told.
  ASSERT_EQ(sample("--prompt 'The zqxjvw game <unk>' --tokens 2").status, 0);
  EXPECT_THAT(
      read_text(dir / "err.log"),
      HasSubstr("1 of the prompt's words are not in the vocabulary"));
}

// The "no memory" ablation of a config with a long evaluation memory is evaluated as it was
// trained, without memory, unless the command line asks for one.
TEST(Evaluation, AModelTrainedWithoutMemoryIsEvaluatedWithoutOneUnlessAsked) {
  TempDir dir;
  const fs::path run = dir / "no_memory";
  ASSERT_EQ(
      run_command(
          train_command(
              run,
              "--set train.max_step=10 model.transformer_xl.mem_len=0 "
              "eval.same_length=true"),
          dir.path())
          .status,
      0);
  const std::string eval = std::string(kBinDir) + "/xl-eval --run " +
      run.string() + " --max-steps 3";
  const auto plain = run_command(eval, dir.path());
  ASSERT_EQ(plain.status, 0) << plain.output;
  EXPECT_THAT(plain.output, HasSubstr("tgt_len 16, batch 4, mem_len 0,"));
  EXPECT_THAT(plain.output, HasSubstr("same_length false"));
  EXPECT_THAT(plain.output, HasSubstr("--set eval.mem_len=32 asks for it"));
  const auto asked = run_command(eval + " --set eval.mem_len=32", dir.path());
  ASSERT_EQ(asked.status, 0) << asked.output;
  EXPECT_THAT(asked.output, HasSubstr("tgt_len 16, batch 4, mem_len 32,"));
  EXPECT_THAT(asked.output, HasSubstr("same_length true"));
}

std::vector<nlohmann::json> metrics_records(const fs::path& run) {
  std::vector<nlohmann::json> records;
  std::istringstream lines(read_text(run / "metrics.jsonl"));
  for (std::string line; std::getline(lines, line);) {
    records.push_back(nlohmann::json::parse(line));
  }
  return records;
}

// What a user reads: a progress line from the first step on, a summary on stdout (the logs go to
// stderr), and metrics records that say when, what ran them, and which steps a resumed run
// logs again.
TEST(Reporting, ProgressSummaryAndMetricsRecordsOfAResumedRun) {
  TempDir dir;
  const fs::path run = dir / "r";
  // run_command reads stdout and stderr together: the braces send stderr to a file first.
  const auto stopped = run_command(
      "{ " +
          train_command(
              run, "--set train.log_interval=5 --stop-at-step 10 2>err.log") +
          "; }",
      dir.path());
  ASSERT_EQ(stopped.status, 0) << read_text(dir / "err.log");
  EXPECT_THAT(
      stopped.output,
      ::testing::StartsWith(
          run.string() + ": stopped (--stop-at-step) at step 10 of 40"));
  EXPECT_THAT(
      stopped.output,
      HasSubstr(
          "continue: xl-train --config " + (run / "config.yaml").string() +
          " --resume"));
  const auto log = read_text(dir / "err.log");
  EXPECT_THAT(log, HasSubstr("info step 1/40 (2.5%) | "));
  EXPECT_THAT(log, HasSubstr(" elapsed | ETA "));
  EXPECT_THAT(log, Not(HasSubstr("last checkpoint:")));

  // A killed run may have logged a step after its last checkpoint.
  {
    std::ofstream out(run / "metrics.jsonl", std::ios::app);
    out << R"({"split":"train","step":15,"loss":99.0})" << '\n';
  }
  const auto resumed = run_command(
      "{ OMP_WAIT_POLICY=passive XL_ALLOCATOR=malloc " +
          train_command(run, "--set train.log_interval=5 --resume 2>>err.log") +
          "; }",
      dir.path());
  ASSERT_EQ(resumed.status, 0) << read_text(dir / "err.log");
  EXPECT_THAT(
      resumed.output,
      ::testing::StartsWith(
          run.string() + ": finished at step 40 of 40 (30 steps from step 10"));
  EXPECT_THAT(
      resumed.output, HasSubstr("evaluate: xl-eval --run " + run.string()));

  const auto records = metrics_records(run);
  ASSERT_FALSE(records.empty());
  EXPECT_EQ(records.front()["event"], "start");
  EXPECT_THAT(
      records.front()["command"].get<std::string>(),
      HasSubstr("--stop-at-step 10"));
  EXPECT_FALSE(records.front()["version"].get<std::string>().empty());
  EXPECT_EQ(records.front()["libtorch"], TORCH_VERSION);
  EXPECT_EQ(records.front()["device"], "cpu");
  EXPECT_GE(records.front()["threads"].get<int>(), 1);
  // Waiting threads spin a bounded time, unless the user's environment says otherwise.
  EXPECT_EQ(records.front()["thread_wait"], "GOMP_SPINCOUNT=10000");
  // Large blocks go to xl's cache unless XL_ALLOCATOR=malloc (the resumed run) says otherwise.
  EXPECT_EQ(records.front()["allocator"], "xl cache");
  int starts = 0;
  std::map<int64_t, bool> repeated; // the resumed run's training records
  bool after_resume = false;
  for (const auto& r : records) {
    if (r.contains("loss") && r["loss"] == 99.0) {
      continue; // the record written by hand above
    }
    ASSERT_TRUE(r.contains("time")) << r;
    EXPECT_THAT(
        r["time"].get<std::string>(),
        ::testing::MatchesRegex(
            "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z"));
    starts += r.value("event", "") == "start" ? 1 : 0;
    if (starts == 2 && r.value("event", "") == "start") {
      EXPECT_EQ(r["thread_wait"], "OMP_WAIT_POLICY=passive");
      EXPECT_EQ(r["allocator"], "malloc");
    }
    if (r.value("event", "") == "resumed") {
      EXPECT_EQ(r["logged_until"], 15);
      after_resume = true;
    }
    if (after_resume && r.value("split", "") == "train") {
      repeated[r["step"]] = r.value("repeat", false);
    }
  }
  EXPECT_EQ(starts, 2);
  EXPECT_TRUE(repeated.at(15));
  EXPECT_FALSE(repeated.at(20));
  EXPECT_NE(train_losses(run).at(15), 99.0);

  // A partial evaluation says so; a long one shows its progress.
  const auto partial = run_command(
      "{ " + std::string(kBinDir) + "/xl-eval --run " + run.string() +
          " --max-steps 2 --set run.progress_seconds=1e-9 2>eval.log; }",
      dir.path());
  ASSERT_EQ(partial.status, 0) << read_text(dir / "eval.log");
  EXPECT_THAT(partial.output, ::testing::StartsWith("test | loss "));
  EXPECT_THAT(partial.output, HasSubstr(" | PARTIAL: 2 of "));
  EXPECT_THAT(
      read_text(dir / "eval.log"), HasSubstr("info batch 1/2 (50.0%) | "));
  EXPECT_EQ(metrics_records(run).back()["partial"], true);
}

// TensorBoard shows what metrics.jsonl holds, read by its own reader, and a resumed run's steps
// replace those a killed run logged after its last checkpoint.
TEST(Reporting, TensorBoardReadsTheCurvesOfAResumedRun) {
  TempDir dir;
  const fs::path run = dir / "r";
  const std::string every5 = "--set train.log_interval=5 ";
  ASSERT_EQ(
      run_command(train_command(run, every5 + "--stop-at-step 10"), dir.path())
          .status,
      0);
  {
    // What a killed run could have left: a point after the checkpoint at step 10.
    run::EventWriter killed(run);
    killed.scalar("train/loss", 99.0, 15, run::wall_time_now());
  }
  // Event files are read in name order, and the name starts with the second it was made in.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  const auto resumed =
      run_command(train_command(run, every5 + "--resume"), dir.path());
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  ASSERT_EQ(
      run_command(
          std::string(kBinDir) + "/xl-eval --run " + run.string() +
              " --max-steps 2",
          dir.path())
          .status,
      0);

  const auto read = run_command(
      std::string(kPython) + " " + kSourceDir +
          "/tests/e2e/read_tensorboard.py " + run.string() + " 2>/dev/null",
      dir.path());
  ASSERT_EQ(read.status, 0) << read.output;
  const auto scalars = nlohmann::json::parse(read.output);
  std::map<int64_t, double> tb_train;
  for (const auto& point : scalars.at("train/loss")) {
    tb_train[point[0].get<int64_t>()] = point[1].get<double>();
  }
  const auto losses = train_losses(run);
  ASSERT_EQ(tb_train.size(), losses.size());
  for (const auto& [step, loss] : losses) {
    EXPECT_FLOAT_EQ(tb_train.at(step), loss) << "step " << step;
  }
  EXPECT_EQ(
      tb_train.size(), 8u); // steps 5, 10, ..., 40; the 99 at step 15 is gone
  for (const char* tag :
       {"train/ppl",
        "train/lr",
        "train/grad_norm",
        "train/tokens_per_s",
        "valid/loss",
        "valid/ppl",
        "test/memory/ppl"}) {
    EXPECT_TRUE(scalars.contains(tag)) << tag << " in " << read.output;
  }
  EXPECT_EQ(scalars.at("valid/loss").size(), 4u); // steps 10, 20, 30, 40
  EXPECT_FALSE(scalars.contains("train/epoch"));
}

// The model weights of a checkpoint, by name.
std::map<std::string, torch::Tensor> checkpoint_weights(const fs::path& path) {
  torch::serialize::InputArchive archive;
  run::load_checkpoint(path, archive);
  const auto config = config::load(
      std::string(kSourceDir) + "/configs/txl/tiny.yaml",
      {"data.dir=" + corpus_dir().string()});
  auto model =
      models::build_model(config, data::open_dataset(config)->vocab_size());
  io::read_module(archive, "model", *model, path.string());
  std::map<std::string, torch::Tensor> weights;
  for (const auto& item : model->named_parameters()) {
    weights[item.key()] = item.value().detach().clone();
  }
  return weights;
}

// train.keep_snapshots keeps the newest N validation checkpoints; xl-average averages them into
// a checkpoint that xl-eval evaluates.
TEST(Snapshots, TheNewestAreKeptAndAveragedIntoAnEvaluableCheckpoint) {
  TempDir dir;
  const fs::path run = dir / "r";
  const auto trained = run_command(
      train_command(run, "--set train.keep_snapshots=3"), dir.path());
  ASSERT_EQ(trained.status, 0) << trained.output;
  std::vector<std::string> kept;
  for (const auto& path : run::run_paths(run).snapshots()) {
    kept.push_back(path.filename().string());
  }
  EXPECT_EQ(
      kept,
      (std::vector<std::string>{"step_20.pt", "step_30.pt", "step_40.pt"}));

  const std::string average =
      std::string(kBinDir) + "/xl-average --run " + run.string();
  const auto averaged = run_command(average + " --last 2", dir.path());
  ASSERT_EQ(averaged.status, 0) << averaged.output;
  EXPECT_THAT(
      averaged.output,
      HasSubstr("averaged 2 checkpoints (step_30.pt, step_40.pt)"));
  const auto a = checkpoint_weights(run / "checkpoints/step_30.pt");
  const auto b = checkpoint_weights(run / "checkpoints/step_40.pt");
  const auto mean = checkpoint_weights(run / "checkpoints/averaged.pt");
  ASSERT_EQ(mean.size(), a.size());
  for (const auto& [name, value] : mean) {
    EXPECT_TRUE(
        torch::allclose(value, (a.at(name) + b.at(name)) / 2, 1e-6, 1e-7))
        << name;
  }
  EXPECT_FALSE(torch::equal(mean.begin()->second, b.begin()->second));
  torch::serialize::InputArchive archive;
  EXPECT_EQ(
      run::load_checkpoint(run / "checkpoints/averaged.pt", archive).step, 40);

  const auto evaluated = run_command(
      std::string(kBinDir) + "/xl-eval --run " + run.string() +
          " --checkpoint averaged --max-steps 2",
      dir.path());
  ASSERT_EQ(evaluated.status, 0) << evaluated.output;
  EXPECT_THAT(evaluated.output, HasSubstr("checkpoints/averaged.pt (step 40)"));
  const auto missing = run_command(
      std::string(kBinDir) + "/xl-eval --run " + run.string() +
          " --checkpoint step_10",
      dir.path());
  EXPECT_EQ(missing.status, 2);
  EXPECT_THAT(
      missing.output,
      HasSubstr("holds: averaged, best, last, step_20, step_30, step_40"));
  const auto overwrite = run_command(
      average + " --checkpoints step_30 step_40 --out step_40", dir.path());
  EXPECT_EQ(overwrite.status, 2);
  EXPECT_THAT(
      overwrite.output, HasSubstr("the trainer writes checkpoints/step_40.pt"));
  // More snapshots than the run holds, or one checkpoint twice, would weigh silently.
  const auto too_many =
      run_command(average + " --last 5 --out five", dir.path());
  EXPECT_EQ(too_many.status, 2);
  EXPECT_THAT(
      too_many.output,
      HasSubstr(
          "--last 5: " + run.string() +
          " holds 3 snapshots (step_20, step_30, step_40)"));
  const auto twice = run_command(
      average + " --checkpoints step_30 " +
          (run / "checkpoints/step_30.pt").string() + " --out twice",
      dir.path());
  EXPECT_EQ(twice.status, 2);
  EXPECT_THAT(twice.output, HasSubstr("twice (step_30 and "));
  // Another model's checkpoint is refused.
  const auto other = run_command(
      train_command(dir / "other", "--set model.d_model=16 --stop-at-step 10"),
      dir.path());
  ASSERT_EQ(other.status, 0) << other.output;
  const auto mixed = run_command(
      average + " --out mixed --checkpoints step_40 " +
          (dir / "other/checkpoints/last.pt").string(),
      dir.path());
  EXPECT_EQ(mixed.status, 2);
  EXPECT_THAT(mixed.output, HasSubstr("model.d_model"));

  // The two runs side by side: the key that differs is a column.
  const auto compared = run_command(
      std::string(kBinDir) + "/xl-compare " + run.string() + " " +
          (dir / "other").string() + " --csv table.csv --plot curves.png",
      dir.path());
  ASSERT_EQ(compared.status, 0) << compared.output;
  EXPECT_THAT(compared.output, HasSubstr("| best valid ppl |"));
  EXPECT_THAT(compared.output, HasSubstr(" model.d_model |"));
  EXPECT_THAT(read_text(dir / "table.csv"), HasSubstr(",model.d_model"));
  EXPECT_EQ(read_text(dir / "curves.png").substr(1, 3), "PNG");
}

// train.init_from names what it loaded, what it left fresh and what it had no place for.
TEST(Training, InitFromListsLoadedFreshAndSkippedTensors) {
  TempDir dir;
  const std::string untied = "--set model.transformer_xl.tie_weight=false ";
  ASSERT_EQ(
      run_command(
          train_command(dir / "a", untied + "--stop-at-step 2"), dir.path())
          .status,
      0);
  const auto tied = run_command(
      train_command(
          dir / "b",
          "--stop-at-step 2 --set train.init_from=" + (dir / "a").string()),
      dir.path());
  ASSERT_EQ(tied.status, 0) << tied.output;
  EXPECT_THAT(
      tied.output,
      HasSubstr(
          "(step 2): 36 of 36 parameters loaded; skipped, not in this model: "
          "crit.out_weight_0, crit.out_weight_1, crit.out_weight_2"));
  const auto untied_again = run_command(
      train_command(
          dir / "c",
          untied + "--stop-at-step 2 --set train.init_from=" +
              (dir / "b/checkpoints/last.pt").string()),
      dir.path());
  ASSERT_EQ(untied_again.status, 0) << untied_again.output;
  EXPECT_THAT(
      untied_again.output,
      HasSubstr("36 of 39 parameters loaded; fresh, not in the checkpoint: "
                "crit.out_weight_0, crit.out_weight_1, crit.out_weight_2"));
}

// A save that cannot be written (here: past a file-size limit, as on a full disk) is a one-line
// error; the previous checkpoint and nothing else stays.
TEST(Integrity, AFailedSaveKeepsThePreviousCheckpoint) {
  TempDir dir;
  train_ten_steps(dir);
  const auto r = run_command(
      "ulimit -f 200 && " + train_command(dir / "r", "--resume"), dir.path());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("error: cannot write "));
  EXPECT_THAT(r.output, HasSubstr("File too large"));
  EXPECT_THAT(r.output, Not(HasSubstr("terminate")));
  EXPECT_EQ(checkpoint_step(dir / "r"), 10);
  for (const auto& entry : fs::directory_iterator(dir / "r/checkpoints")) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos)
        << entry.path();
  }
}

// A learning rate that blows the weights up: the updates that would make them non-finite are
// skipped, validation notices the divergence, and the last good checkpoint stays.
TEST(Integrity, ADivergedModelIsNeverSaved) {
  TempDir dir;
  train_ten_steps(dir);
  const auto r = run_command(
      train_command(
          dir / "r",
          "--resume --set train.lr=1e6 --set train.max_bad_steps=100 "
          "--set train.scheduler=constant"),
      dir.path());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("training diverged by step 20"));
  EXPECT_THAT(
      r.output,
      HasSubstr("The last good checkpoint is " + (dir / "r").string()));
  EXPECT_EQ(checkpoint_step(dir / "r"), 10);
  const auto eval = run_command(
      std::string(kBinDir) + "/xl-eval --run r --checkpoint last --max-steps 2",
      dir.path());
  ASSERT_EQ(eval.status, 0) << eval.output;
  EXPECT_THAT(eval.output, HasSubstr("| ppl "));
  EXPECT_THAT(eval.output, Not(HasSubstr("nan")));
}

// The data folder prepared again from another corpus: same config, another vocabulary.
TEST(Integrity, ACheckpointRefusesAnotherVocabulary) {
  TempDir dir;
  const auto prepare = [&](const std::string& corpus) {
    data::PrepOptions options;
    for (const char* split : {"train", "valid", "test"}) {
      options.splits[split] = testdata("wikitext-2/" + corpus);
    }
    options.out = dir / "data";
    data::prepare_corpus(options);
  };
  prepare("wiki.test.tokens");
  const std::string train = std::string(kBinDir) + "/xl-train --config " +
      kSourceDir +
      "/configs/txl/tiny.yaml --set data.dir=data --set run.dir=r ";
  ASSERT_EQ(run_command(train + "--stop-at-step 10", dir.path()).status, 0);
  prepare("wiki.valid.tokens");
  for (const auto& command :
       {train + "--resume",
        std::string(kBinDir) + "/xl-eval --run r --checkpoint last"}) {
    SCOPED_TRACE(command);
    const auto r = run_command(command, dir.path());
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_THAT(
        r.output, HasSubstr("was trained on data with another vocabulary"));
    EXPECT_THAT(
        r.output, HasSubstr("than data.dir holds now (data/vocab.txt: "));
  }
}

// SIGTERM while a long validation runs: the run stops within seconds, not after the whole
// validation, with a checkpoint of the step it reached.
TEST(Integrity, ASignalDuringValidationStopsItPromptly) {
  TempDir dir;
  const pid_t pid = spawn(
      train_command(
          dir / "r",
          "--set train.eval_interval=5 --set train.max_eval_steps=null "
          "--set eval.batch_size=1 --set train.max_step=1000000"),
      dir.path());
  // Validation over the whole split (about 15k batches of 16 tokens) starts after step 5.
  for (int i = 0; i < 3000; ++i) {
    std::error_code ec;
    if (fs::exists(dir / "r/metrics.jsonl", ec) &&
        !train_losses(dir / "r").empty() &&
        train_losses(dir / "r").rbegin()->first >= 5) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto start = std::chrono::steady_clock::now();
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM);
  EXPECT_LT(seconds, 3.0);
  EXPECT_EQ(checkpoint_step(dir / "r"), 5);
  EXPECT_THAT(
      read_text(dir / "r/train.log"),
      HasSubstr("validation at step 5 interrupted by a signal"));
}

// Item 14: a second SIGTERM does not wait for the step the first one lets finish (about a
// second here): the process exits at once with 128 + 15, and the checkpoint on disk is the last
// complete one, which still verifies.
TEST(Integrity, ASecondSignalExitsAtOnceKeepingTheLastCheckpoint) {
  TempDir dir;
  const std::string slow =
      "--set train.tgt_len=512 --set model.transformer_xl.mem_len=512 "
      "--set train.batch_size=8 --set train.eval_interval=1000 "
      "--set train.max_step=1000 ";
  const auto first = run_command(
      train_command(dir / "r", slow + "--stop-at-step 1"), dir.path());
  ASSERT_EQ(first.status, 0) << first.output;
  const pid_t pid =
      spawn(train_command(dir / "r", slow + "--resume"), dir.path());
  for (int i = 0; i < 6000; ++i) {
    if (!train_losses(dir / "r").empty() &&
        train_losses(dir / "r").rbegin()->first >= 2) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid, SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM);
  // Step 3 was running: with one signal it would have been checkpointed.
  EXPECT_EQ(checkpoint_step(dir / "r"), 1);
  EXPECT_THAT(
      read_text(dir / "r/train.log"), Not(HasSubstr("checkpoint step 3")));
}

// Item 7: a kill after a new best.pt is written and before it is copied to last.pt leaves
// best.pt newer than last.pt. The resumed run replays from last.pt and ends with the
// checkpoints and losses of a run that was never killed.
TEST(Integrity, AKillBetweenBestAndLastResumesToTheUninterruptedCheckpoints) {
  TempDir dir;
  const auto ref =
      run_command(train_command(dir / "ref", "--stop-at-step 20"), dir.path());
  ASSERT_EQ(ref.status, 0) << ref.output;
  torch::serialize::InputArchive archive;
  ASSERT_EQ( // step 20's validation was a new best
      run::load_checkpoint(dir / "ref/checkpoints/best.pt", archive).step,
      20);
  train_ten_steps(dir);
  fs::copy_file(
      dir / "ref/checkpoints/best.pt",
      dir / "r/checkpoints/best.pt",
      fs::copy_options::overwrite_existing);
  const auto resumed = run_command(
      train_command(dir / "r", "--resume --stop-at-step 20"), dir.path());
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  EXPECT_EQ(checkpoint_step(dir / "r"), 20);
  EXPECT_EQ(
      run::load_checkpoint(dir / "r/checkpoints/best.pt", archive).step, 20);
  expect_same_losses_after(
      train_losses(dir / "ref"), train_losses(dir / "r"), 10, 20);
  EXPECT_EQ(
      split_losses(dir / "r", "valid").at(20),
      split_losses(dir / "ref", "valid").at(20));
}

TEST(Integrity, OneTrainerPerRunDirectory) {
  TempDir dir;
  const pid_t pid = spawn(
      train_command(dir / "r", "--set train.max_step=1000000"), dir.path());
  for (int i = 0; i < 3000 && !fs::exists(dir / "r/metrics.jsonl"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const auto second = run_command(train_command(dir / "r"), dir.path());
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_EQ(second.status, 2) << second.output;
  EXPECT_THAT(
      second.output,
      HasSubstr("is in use by another xl-train (pid " + std::to_string(pid)));
  // The kernel released the killed trainer's lock: the run resumes.
  EXPECT_EQ(
      run_command(
          train_command(dir / "r", "--resume --set train.max_step=21"),
          dir.path())
          .status,
      0);
}

// SIGKILL in a write that spans a page leaves part of a line; the resumed run cuts it off
// rather than gluing its first record to it.
TEST(Integrity, AResumedRunDropsATornLastMetricsRecord) {
  TempDir dir;
  train_ten_steps(dir);
  const std::string whole = read_text(dir / "r/metrics.jsonl");
  {
    std::ofstream out(dir / "r/metrics.jsonl", std::ios::app);
    out << R"({"split":"train","step":11,"lo)";
  }
  const auto r = run_command(
      train_command(dir / "r", "--resume --stop-at-step 12"), dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("dropped a torn last record (30 bytes)"));
  const std::string resumed = read_text(dir / "r/metrics.jsonl");
  EXPECT_EQ(resumed.substr(0, whole.size()), whole);
  std::istringstream lines(resumed);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_TRUE(nlohmann::json::accept(line)) << line;
  }
  EXPECT_EQ(train_losses(dir / "r").rbegin()->first, 12);
}

TEST(Integrity, AMetricsRecordThatCannotBeWrittenIsAnError) {
  TempDir dir;
  train_ten_steps(dir);
  fs::remove(dir / "r/metrics.jsonl");
  fs::create_symlink("/dev/full", dir / "r/metrics.jsonl");
  const auto r = run_command(
      std::string(kBinDir) + "/xl-eval --run r --max-steps 2", dir.path());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("cannot append to r/metrics.jsonl"));
}

// Flags and values that used to get "internal error" or a silent result.
TEST(Integrity, BadFlagsAndValuesAreOneLineErrors) {
  TempDir dir;
  write_file(dir / "afile", "not a folder\n");
  const std::string train = std::string(kBinDir) + "/xl-train --config " +
      kSourceDir + "/configs/txl/tiny.yaml ";
  for (
      const auto& [command, message] :
      std::vector<std::pair<std::string, std::string>>{
          {train + "--stop-at-step 0",
           "--stop-at-step: expected a count >= 1, found '0'"},
          {std::string(kBinDir) + "/xl-eval --run r --max-steps 0",
           "--max-steps: expected a count >= 1, found '0'"},
          {train + "--set train.lr=1e400 --dump-config",
           "--set train.lr=1e400: train.lr: expected a number > 0, found '1e400'"},
          {train + "--set train.lr=1e-400 --dump-config",
           "--set train.lr=1e-400: train.lr: expected a number > 0"},
          {train + "--set model.n_layer.x=3 --dump-config",
           "error: --set model.n_layer.x=3: model.n_layer: expected an integer"},
          {std::string(kBinDir) +
               "/xl-prep --format byte --train afile --out afile",
           "--out afile is a file"}}) {
    SCOPED_TRACE(command);
    const auto r = run_command(command, dir.path());
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_THAT(r.output, HasSubstr(message));
    EXPECT_THAT(r.output, Not(HasSubstr("internal error")));
  }
}

// Every file of a run (path -> bytes), to show that a tool left it as it was.
std::map<std::string, std::string> run_files(const fs::path& run) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(run)) {
    if (entry.is_regular_file() && entry.path().filename() != ".lock") {
      files[fs::relative(entry.path(), run).string()] = read_text(entry.path());
    }
  }
  return files;
}

// The outputs rule (run/outputs.h) through every tool that writes: a run's files are never an
// output (with --force neither), names are plain, an existing output needs --force, the
// check comes before the work, and a run's config.yaml trains only its own run. The run's
// bytes are compared before and after all of it.
TEST(Integrity, ToolsNeverWriteOverARunOrOutsideTheirFolder) {
  TempDir dir;
  const auto trained = run_command(
      train_command(dir / "r", "--set train.keep_snapshots=2"), dir.path());
  ASSERT_EQ(trained.status, 0) << trained.output;
  const auto before = run_files(dir / "r");
  const std::string bin = std::string(kBinDir) + "/";
  for (const auto& [command, message] :
       std::vector<std::pair<std::string, std::string>>{
           {"xl-average --run r --last 2 --out best",
            "the trainer writes checkpoints/best.pt"},
           {"xl-average --run r --last 2 --out last --force",
            "the trainer writes"},
           {"xl-average --run r --last 2 --out step_30", "the trainer writes"},
           {"xl-average --run r --last 2 --out ../../x",
            "expected a plain name"},
           {"xl-average --run r --last 2 --out ''", "expected a plain name"},
           {"xl-compare r --csv r/metrics.jsonl --force",
            "a file of the run in"},
           {"xl-compare r --plot r/checkpoints/best.pt", "(its checkpoints)"},
           {"xl-compare r --csv r/config.yaml", "(its config)"},
           {"xl-compare r --csv t.csv --plot ./t.csv", "name the same file"},
           {"xl-eval --run r --dump-batches r/checkpoints/last.pt --force",
            "a file of the run in"},
           {"xl-export --run r --out r", "is the run in"},
           {"xl-export --run r --out r/checkpoints/hf --force",
            "is inside the run in"},
           {"xl-prep --train afile --out r", "is the run in"},
           {"xl-train -c r/config.yaml --set run.name=.. --set run.dir=null",
            "run.name: expected a plain name"},
           {"user", "holds files that are not a run's"},
           {"xl-train -c copy/config.yaml --resume",
            "is the config of the run in"},
       }) {
    SCOPED_TRACE(command);
    if (command == "user") {
      write_file(dir / "user/config.yaml", "the user's own notes\n");
    }
    if (command.find("copy/") != std::string::npos &&
        !fs::exists(dir / "copy")) {
      fs::copy(dir / "r", dir / "copy", fs::copy_options::recursive);
    }
    write_file(dir / "afile", "text\n");
    // "user": a new run into a folder of the user's files
    const auto r = run_command(
        command == "user" ? train_command(dir / "user") : bin + command,
        dir.path());
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_THAT(r.output, HasSubstr(message));
    EXPECT_THAT(r.output, Not(HasSubstr("internal error")));
    EXPECT_THAT(
        r.output, Not(HasSubstr("evaluating"))); // refused before the work
  }
  EXPECT_EQ(read_text(dir / "user/config.yaml"), "the user's own notes\n");
  EXPECT_EQ(run_files(dir / "r"), before);
  EXPECT_EQ(run_files(dir / "copy"), before);

  // Outputs of their own: a second write needs --force.
  for (const std::string command :
       {"xl-average --run r --last 2 --out avg",
        "xl-compare r --csv t.csv --plot c.png",
        "xl-eval --run r --max-steps 1 --dump-batches b/batches.safetensors",
        "xl-export --run r --out hf"}) {
    SCOPED_TRACE(command);
    const auto first = run_command(bin + command, dir.path());
    ASSERT_EQ(first.status, 0) << first.output;
    const auto again = run_command(bin + command, dir.path());
    EXPECT_EQ(again.status, 2) << again.output;
    EXPECT_THAT(again.output, HasSubstr("pass --force"));
    const auto forced = run_command(bin + command + " --force", dir.path());
    EXPECT_EQ(forced.status, 0) << forced.output;
  }

  // Another folder's checkpoint evaluated into this run is recorded, and compared, as such.
  const auto foreign = run_command(
      bin +
          "xl-eval --run r --max-steps 1 --checkpoint copy/checkpoints/best.pt",
      dir.path());
  ASSERT_EQ(foreign.status, 0) << foreign.output;
  EXPECT_THAT(foreign.output, HasSubstr("is not a checkpoint of r"));
  const auto compared = run_command(bin + "xl-compare r", dir.path());
  EXPECT_THAT(
      compared.output,
      HasSubstr("test/memory (partial) (checkpoint from elsewhere) ppl"));
}

// Every number a tool takes is checked before it works, with a message of its own: NaN passes
// CLI11's ranges, whose messages print the largest double; a temperature of 1e-300 overflows;
// the samples are rows of the batch the memory check counts; SentencePiece asserts its own
// limits deep inside its trainer.
TEST(Integrity, NumbersAToolTakesAreCheckedBeforeItWorks) {
  TempDir dir;
  const auto trained =
      run_command(train_command(dir / "r", "--stop-at-step 2"), dir.path());
  ASSERT_EQ(trained.status, 0) << trained.output;
  write_file(dir / "afile", "한국어 문장입니다.\n");
  const std::string sample =
      std::string(kBinDir) + "/xl-sample --run r --tokens 2 ";
  const std::string prep =
      std::string(kBinDir) + "/xl-prep --format xlnet --train afile --out p ";
  for (
      const auto& [command, message] :
      std::vector<std::pair<std::string, std::string>>{
          {sample + "--temperature nan",
           "--temperature: expected a finite number, found 'nan'"},
          {sample + "--temperature 1e-300", "--temperature 1e-300: expected 0"},
          {sample + "--temperature -1", "--temperature -1: expected 0"},
          {sample + "--temperature inf",
           "--temperature: expected a finite number"},
          {sample + "--top-p nan",
           "--top-p: expected a finite number, found 'nan'"},
          {sample + "--top-p 0", "--top-p 0: expected a probability above 0"},
          {sample + "--seed -1", "--seed: expected a count >= 0, found '-1'"},
          {sample + "--seed 99999999999999999999999",
           "--seed: expected a count >= 0, found '99999999999999999999999'"},
          {sample + "--temperature ''",
           "--temperature: expected a finite number, found ''"},
          {sample + "--top-k 99999999999999999999",
           "--top-k: expected a count >= 0, found '99999999999999999999'"},
          {sample + "--top-k -1", "--top-k: expected a count >= 0, found '-1'"},
          {sample + "--samples 100000000", "sampling needs about"},
          {prep + "--vocab-size 0",
           "--vocab-size 0: expected more than the 17 special"},
          {prep + "--character-coverage 2",
           "--character-coverage 2: expected a fraction"},
          {std::string(kBinDir) +
               "/xl-prep --train afile --out q --min-freq -1",
           "--min-freq: expected a count >= 0, found '-1'"},
          {std::string(kBinDir) +
               "/xl-prep --format byte --train afile --out q --min-freq 2",
           "--min-freq applies to --format word only, not to --format byte"},
          {std::string(kBinDir) +
               "/xl-prep --train afile --out q --vocab-size 100",
           "--vocab-size applies to --format xlnet only, not to --format word"},
          {prep + "--holdout 5", "--holdout applies to --format nsmc only"},
      }) {
    SCOPED_TRACE(command);
    const auto r = run_command(command, dir.path());
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_THAT(r.output, HasSubstr(message));
    EXPECT_THAT(r.output, Not(HasSubstr("internal error")));
    EXPECT_THAT(r.output, Not(HasSubstr("Internal")));
    // A number of 20 digits or more other than the one given: a range message's double.
    auto said = r.output;
    for (const std::string given :
         {"99999999999999999999999", "99999999999999999999"}) {
      for (size_t at; (at = said.find(given)) != std::string::npos;) {
        said.erase(at, given.size());
      }
    }
    EXPECT_FALSE(std::regex_search(said, std::regex("[0-9]{20}")))
        << "a number of 20 digits or more: " << r.output;
  }
}

// Item 13 of the integrity issue: sizes that cannot fit are refused before anything is
// allocated or written (they used to page until the kernel killed the process), and the flag
// that overrides the check lets a size that fits through unchanged.
TEST(Integrity, SizesThatCannotFitAreRefusedBeforeAnythingIsBuilt) {
  TempDir dir;
  for (const auto& set :
       {"--set model.d_model=10000000 --set model.d_head=1000000",
        "--set model.n_layer=100000",
        "--set train.batch_size=2 --set train.tgt_len=100000"}) {
    SCOPED_TRACE(set);
    const auto r = run_command(train_command(dir / "big", set), dir.path());
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_THAT(r.output, HasSubstr("error: training needs about"));
    EXPECT_THAT(r.output, HasSubstr("available; use smaller sizes"));
    EXPECT_FALSE(fs::exists(dir / "big"));
  }
  train_ten_steps(dir);
  const std::string eval = std::string(kBinDir) + "/xl-eval --run r ";
  auto r = run_command(eval + "--set eval.tgt_len=1000000", dir.path());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("error: evaluation needs about"));
  r = run_command(eval + "--max-steps 2 --skip-memory-check", dir.path());
  EXPECT_EQ(r.status, 0) << r.output;
}

// ---------------------------------------------------------------------------------------------
// Data-parallel training: ranks started the way torchrun starts them (its environment), on
// Gloo over the loopback interface.

// A port nobody listens on now.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof(address);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
  auto* generic = reinterpret_cast<sockaddr*>(&address);
  EXPECT_EQ(::bind(fd, generic, size), 0);
  EXPECT_EQ(::getsockname(fd, generic, &size), 0);
  ::close(fd);
  return ntohs(address.sin_port);
}

// `command` as rank `rank` of `ranks`, its output in `log`.
std::string as_rank(
    int rank,
    int ranks,
    int port,
    const std::string& command,
    const fs::path& log) {
  return "env RANK=" + std::to_string(rank) +
      " LOCAL_RANK=" + std::to_string(rank) +
      " WORLD_SIZE=" + std::to_string(ranks) +
      " MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port) + " " +
      command + " >" + log.string() + " 2>&1";
}

// Two ranks of `command`, to their end; fails the test unless both succeed.
void run_two_ranks(const TempDir& dir, const std::string& command) {
  const int port = free_port();
  const auto r = run_command(
      "(" + as_rank(1, 2, port, command, dir / "rank1.log") + ") & " +
          as_rank(0, 2, port, command, dir / "rank0.log") +
          "; zero=$?; wait $!; one=$?; echo \"ranks exited $zero $one\"; "
          "test $zero -eq 0 -a $one -eq 0",
      dir.path());
  ASSERT_EQ(r.status, 0) << r.output << read_text(dir / "rank0.log")
                         << read_text(dir / "rank1.log");
}

void expect_close_losses(
    const std::map<int64_t, double>& expected,
    const std::map<int64_t, double>& actual) {
  ASSERT_EQ(expected.size(), actual.size());
  for (const auto& [step, loss] : expected) {
    ASSERT_TRUE(actual.count(step)) << "step " << step;
    EXPECT_NEAR(actual.at(step), loss, 1e-5 * std::abs(loss))
        << "step " << step;
  }
}

// A rank whose peers never come says what it waits for and gives up after
// train.dist_start_timeout_s with one line; an address that does not resolve fails at once.
TEST(DataParallel, StartUpSaysWhatItWaitsForAndGivesUpWithOneLine) {
  TempDir dir;
  const int port = free_port();
  const auto started = std::chrono::steady_clock::now();
  const auto alone = run_command(
      "env WORLD_SIZE=2 RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=" +
          std::to_string(port) + " " +
          train_command(dir / "r", "--set train.dist_start_timeout_s=2"),
      dir.path());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  EXPECT_EQ(alone.status, 2) << alone.output;
  EXPECT_THAT(
      alone.output,
      HasSubstr(
          "rank 0 of 2: waiting for the 2 processes at 127.0.0.1:" +
          std::to_string(port) + " (up to 2 s"));
  EXPECT_THAT(alone.output, HasSubstr("did not all join at 127.0.0.1:"));
  EXPECT_LT(seconds, 60.0) << alone.output;
  const auto error = alone.output.substr(alone.output.find("error: "));
  EXPECT_EQ(error.find('\n'), error.size() - 1) << "one line: " << error;

  const auto nowhere = run_command(
      "env WORLD_SIZE=2 RANK=1 MASTER_ADDR=no-such-host.invalid " +
          train_command(dir / "s"),
      dir.path());
  EXPECT_EQ(nowhere.status, 2) << nowhere.output;
  EXPECT_THAT(
      nowhere.output,
      HasSubstr(
          "MASTER_ADDR=no-such-host.invalid: cannot resolve the address"));
  const auto rank_alone =
      run_command("env RANK=1 " + train_command(dir / "t"), dir.path());
  EXPECT_EQ(rank_alone.status, 2) << rank_alone.output;
  EXPECT_THAT(
      rank_alone.output, HasSubstr("RANK=1 is set but WORLD_SIZE is not"));
}

// Two processes, each with half of every batch, train as one process whose batch_chunk splits
// the batch the same way: the same losses after every step (so the same gradients) and the
// same validation losses. Dropout is off: the ranks draw their masks from their own streams.
TEST(DataParallel, TwoGlooProcessesTrainAsOneProcessOnTheCombinedBatch) {
  TempDir dir;
  const std::string settings =
      "--set model.dropout=0 --set model.dropatt=0 --set train.max_step=12 "
      "--set train.eval_interval=6";
  const auto one = run_command(
      train_command(dir / "one", settings + " --set train.batch_chunk=2"),
      dir.path());
  ASSERT_EQ(one.status, 0) << one.output;
  run_two_ranks(dir, train_command(dir / "two", settings));
  EXPECT_THAT(
      read_text(dir / "rank0.log"),
      HasSubstr("data-parallel training on 2 processes"));
  EXPECT_EQ(train_losses(dir / "two").size(), 12U);
  expect_close_losses(train_losses(dir / "one"), train_losses(dir / "two"));
  expect_close_losses(
      split_losses(dir / "one", "valid"), split_losses(dir / "two", "valid"));
  EXPECT_EQ(checkpoint_step(dir / "two"), 12);
}

// Stopped and resumed on two processes, with dropout on, a run repeats the uninterrupted run's
// losses exactly: every rank's memories and random stream are in the checkpoint. One process
// may not resume it.
TEST(DataParallel, ResumeOnTheSameProcessCountIsExactAndAnotherIsRefused) {
  TempDir dir;
  const std::string settings =
      "--set train.max_step=16 --set train.eval_interval=4";
  run_two_ranks(dir, train_command(dir / "full", settings));
  run_two_ranks(
      dir, train_command(dir / "cut", settings + " --stop-at-step 7"));
  EXPECT_EQ(checkpoint_step(dir / "cut"), 7);
  const auto alone = run_command(
      train_command(dir / "cut", settings + " --resume"), dir.path());
  EXPECT_EQ(alone.status, 2);
  EXPECT_THAT(
      alone.output,
      HasSubstr("was written by a run of 2 processes; resume it with 2"));
  run_two_ranks(dir, train_command(dir / "cut", settings + " --resume"));
  expect_same_losses_after(
      train_losses(dir / "full"), train_losses(dir / "cut"), 7, 16);
}

// SIGKILL of one rank ends the other with a message instead of a hang, and the last
// checkpoint resumes.
TEST(DataParallel, AKilledRankEndsTheJobWithAMessageAndAUsableCheckpoint) {
  TempDir dir;
  const int port = free_port();
  const std::string command = train_command(
      dir / "r",
      "--set train.scheduler=constant --set train.max_step=1000000 --set train.eval_interval=10");
  std::vector<pid_t> ranks;
  for (const int rank : {0, 1}) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::setpgid(0, 0);
      const std::string line = "exec " +
          as_rank(rank,
                  2,
                  port,
                  command,
                  dir / ("rank" + std::to_string(rank) + ".log"));
      ::execl("/bin/sh", "sh", "-c", line.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ranks.push_back(pid);
  }
  const int killed = signal_after_step(ranks[1], dir / "r", 25, SIGKILL);
  EXPECT_TRUE(WIFSIGNALED(killed));
  // The survivor notices at its next collective; a minute is far more than it needs.
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 600 && done == 0; ++i) {
    done = ::waitpid(ranks[0], &status, WNOHANG);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (done == 0) {
    ::kill(ranks[0], SIGKILL);
    ::waitpid(ranks[0], &status, 0);
    FAIL() << "rank 0 hung after rank 1 was killed";
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_NE(WEXITSTATUS(status), 0);
  EXPECT_THAT(
      read_text(dir / "rank0.log"),
      HasSubstr("another rank has probably stopped"));
  const int64_t saved = checkpoint_step(dir / "r");
  EXPECT_GE(saved, 20);
  run_two_ranks(
      dir,
      train_command(
          dir / "r",
          "--resume --set train.scheduler=constant --set train.eval_interval=10 --set "
          "train.max_step=" +
              std::to_string(saved + 3)));
  EXPECT_EQ(checkpoint_step(dir / "r"), saved + 3);
}

} // namespace
} // namespace xl::test
