// xl-train as a user runs it: exact resume after a clean stop, SIGKILL and SIGTERM; what a run
// reports; train.init_from. Its integrity under faults: run_integrity_test.cpp; data-parallel
// runs: data_parallel_test.cpp; its config errors: cli_test.cpp.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "e2e_util.h"
#include "test_util.h"
#include "xl/run/checkpoint.h"
#include "xl/run/tensorboard.h"

namespace xl::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
TEST(Training, StopAndResumeGivesTheUninterruptedLossSequence) {
  TempDir dir;
  const auto full = run_command(train_command(dir / "full"), dir.path());
  ASSERT_EQ(full.status, 0) << full.output;
  const auto first = run_command(train_command(dir / "split", "--stop-at-step 17"), dir.path());
  ASSERT_EQ(first.status, 0) << first.output;
  EXPECT_EQ(checkpoint_step(dir / "split"), 17);
  const auto again = run_command(train_command(dir / "split"), dir.path());
  EXPECT_EQ(again.status, 2);
  EXPECT_THAT(again.output, HasSubstr("already holds checkpoints (checkpoints/best.pt"));
  EXPECT_THAT(again.output, HasSubstr("pass --resume (or --auto-resume) to continue that run"));
  const auto second = run_command(train_command(dir / "split", "--resume"), dir.path());
  ASSERT_EQ(second.status, 0) << second.output;
  EXPECT_THAT(second.output, HasSubstr("resumed"));
  EXPECT_THAT(
      read_text(dir / "split/metrics.jsonl"),
      HasSubstr("{\"changes\":[],\"event\":\"resumed\",\"logged_until\":17,\"step\":17,"));
  expect_same_losses_after(train_losses(dir / "full"), train_losses(dir / "split"), 17, 40);
}

// A checkpoint other than last.pt (an imported best.pt, or a run whose last.pt was removed) is
// never replaced by a new run or an import in the same folder.
TEST(Training, ABestCheckpointWithoutLastIsNeverReplaced) {
  TempDir dir;
  train_ten_steps(dir);
  std::filesystem::remove(dir / "r/checkpoints/last.pt");
  const auto best = read_text(dir / "r/checkpoints/best.pt");
  const auto again = run_command(train_command(dir / "r"), dir.path());
  EXPECT_EQ(again.status, 2) << again.output;
  EXPECT_THAT(again.output, HasSubstr("already holds checkpoints (checkpoints/best.pt)"));
  // best.pt holds the training state: what a kill in the first checkpoint leaves.
  EXPECT_THAT(again.output, HasSubstr("pass --resume (or --auto-resume) to continue that run"));
  EXPECT_EQ(read_text(dir / "r/checkpoints/best.pt"), best);
}

// An interrupted run, resumed, continues the reference run's loss sequence
// exactly from its last checkpoint. Both use a constant learning rate, so that
// the interrupted run can be started with a huge max_step (it never ends by
// itself) and still follow the reference. Returns the checkpointed step the
// resumed run started from.
int64_t interrupt_and_resume(const TempDir& dir, int sig, int64_t after_step, int* status) {
  const std::string constant = "--set train.scheduler=constant";
  const auto reference = run_command(train_command(dir / "ref", constant), dir.path());
  EXPECT_EQ(reference.status, 0) << reference.output;
  const pid_t pid =
      spawn(train_command(dir / "cut", constant + " --set train.max_step=1000000"), dir.path());
  *status = signal_after_step(pid, dir / "cut", after_step, sig);
  const int64_t saved = checkpoint_step(dir / "cut");
  const auto resumed = run_command(train_command(dir / "cut", constant + " --resume"), dir.path());
  EXPECT_EQ(resumed.status, 0) << resumed.output;
  expect_same_losses_after(train_losses(dir / "ref"), train_losses(dir / "cut"), saved, 40);
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

// A stop signal after step 13: the run checkpoints the step it arrived in, not an earlier
// periodic one, exits 128 + the signal, and resumes exactly.
void expect_checkpoint_at_signal(int sig) {
  TempDir dir;
  int status = 0;
  const int64_t saved = interrupt_and_resume(dir, sig, 13, &status);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + sig);
  EXPECT_GE(saved, 13);
  EXPECT_LT(saved, 40);
}

TEST(Training, SigtermCheckpointsThenExits) {
  expect_checkpoint_at_signal(SIGTERM);
}

// A closed terminal or ssh session checkpoints and stops as SIGTERM does.
TEST(Training, SighupCheckpointsThenExits) {
  expect_checkpoint_at_signal(SIGHUP);
}

// SIGUSR1, a batch scheduler's warning ahead of a time limit, checkpoints the step at hand and
// training goes on: the losses stay the uninterrupted run's, and a kill after it resumes from
// the signal's step (no periodic checkpoint comes before the end here).
TEST(Training, Sigusr1CheckpointsAndTrainingGoesOn) {
  TempDir dir;
  const std::string settings = "--set train.scheduler=constant --set train.eval_interval=1000";
  const auto reference = run_command(train_command(dir / "ref", settings), dir.path());
  ASSERT_EQ(reference.status, 0) << reference.output;
  const pid_t pid =
      spawn(train_command(dir / "cut", settings + " --set train.max_step=1000000"), dir.path());
  for (int i = 0; i < 6000 &&
       (train_losses(dir / "cut").empty() || train_losses(dir / "cut").rbegin()->first < 13);
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid, SIGUSR1);
  std::string log;
  for (int i = 0; i < 6000 && log.find("SIGUSR1: checkpointed step") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    log = read_text(dir / "cut/train.log");
  }
  ASSERT_THAT(log, HasSubstr("SIGUSR1: checkpointed step"));
  const int64_t signalled = std::stoll(log.substr(log.find("checkpointed step ") + 18));
  EXPECT_GE(signalled, 13);
  // Training goes on after the checkpoint, with the reference's losses.
  for (int i = 0; i < 6000 && train_losses(dir / "cut").rbegin()->first < signalled + 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  expect_same_losses_after(train_losses(dir / "ref"), train_losses(dir / "cut"), 0, signalled + 3);
  const auto resumed = run_command(train_command(dir / "cut", settings + " --resume"), dir.path());
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  int64_t resumed_from = -1;
  std::istringstream records(read_text(dir / "cut/metrics.jsonl"));
  for (std::string line; std::getline(records, line);) {
    const auto record = nlohmann::json::parse(line);
    if (record.value("event", "") == "resumed") {
      resumed_from = record["step"].get<int64_t>();
    }
  }
  EXPECT_EQ(resumed_from, signalled); // the signal's checkpoint, the only one
  expect_same_losses_after(train_losses(dir / "ref"), train_losses(dir / "cut"), signalled, 40);
}

// Another model, or settings the saved state depends on, are refused before anything in the
// run changes; other settings are applied and listed.
TEST(Training, ResumeRefusesAnotherModelOrBatchesAndAppliesTheRest) {
  TempDir dir;
  train_ten_steps(dir);
  const auto config = read_text(dir / "r/config.yaml");
  auto r = run_command(train_command(dir / "r", "--resume --set model.d_inner=48"), dir.path());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.output, HasSubstr("was made with a different config"));
  EXPECT_THAT(r.output, HasSubstr("model.d_inner: checkpoint 64, config 48"));
  EXPECT_EQ(read_text(dir / "r/config.yaml"), config);
  r = run_command(
      train_command(
          dir / "r", "--resume --set train.batch_size=8 --set train.optim=sgd --set train.lr=0.01"),
      dir.path());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.output, HasSubstr("train.batch_size: 4 -> 8"));
  EXPECT_THAT(r.output, HasSubstr("train.optim: adam -> sgd"));
  EXPECT_THAT(r.output, Not(HasSubstr("train.lr")));
  EXPECT_EQ(read_text(dir / "r/config.yaml"), config);
  EXPECT_EQ(checkpoint_step(dir / "r"), 10);
  r = run_command(
      train_command(dir / "r", "--resume --set train.lr=0.001 --set train.max_step=12"),
      dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("changed: train.lr: 0.002 -> 0.001"));
  EXPECT_THAT(
      read_text(dir / "r/metrics.jsonl"),
      HasSubstr("{\"changes\":[\"train.lr: 0.002 -> 0.001\",\"train.max_step: 40 -> 12\"],"
                "\"event\":\"resumed\",\"logged_until\":10,\"step\":10,"));
  EXPECT_THAT(read_text(dir / "r/config.yaml"), HasSubstr("lr: 0.001"));
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
  // run_command reads stdout and stderr together: the braces send stderr to a file first. The
  // first run bounds libgomp's spinning itself (the suite's environment does it in advance).
  const auto stopped = run_command(
      "{ env -u GOMP_SPINCOUNT " +
          train_command(run, "--set train.log_interval=5 --stop-at-step 10 2>err.log") + "; }",
      dir.path());
  ASSERT_EQ(stopped.status, 0) << read_text(dir / "err.log");
  EXPECT_THAT(
      stopped.output,
      ::testing::StartsWith(run.string() + ": stopped (--stop-at-step) at step 10 of 40"));
  EXPECT_THAT(
      stopped.output,
      HasSubstr(
          "continue: " + app("xl-train") + " --config " + (run / "config.yaml").string() +
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
      "{ env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=passive XL_ALLOCATOR=malloc " +
          train_command(run, "--set train.log_interval=5 --resume 2>>err.log") + "; }",
      dir.path());
  ASSERT_EQ(resumed.status, 0) << read_text(dir / "err.log");
  EXPECT_THAT(
      resumed.output,
      ::testing::StartsWith(run.string() + ": finished at step 40 of 40 (30 steps from step 10"));
  EXPECT_THAT(resumed.output, HasSubstr("evaluate: " + app("xl-eval") + " --run " + run.string()));

  const auto records = metrics_records(run);
  ASSERT_FALSE(records.empty());
  EXPECT_EQ(records.front()["event"], "start");
  EXPECT_THAT(records.front()["command"].get<std::string>(), HasSubstr("--stop-at-step 10"));
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
    if (r.value("split", "") == "train") { // the process's memory: resident, and held
      EXPECT_GT(r["resident_mib"].get<double>(), 10.0) << r;
      EXPECT_GT(r["cpu_allocators_mib"].get<double>(), 1.0) << r;
      EXPECT_FALSE(r.contains("cuda_allocated_mib")) << r;
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
  EXPECT_THAT(read_text(dir / "eval.log"), HasSubstr("info batch 1/2 (50.0%) | "));
  EXPECT_EQ(metrics_records(run).back()["partial"], true);
}

// TensorBoard shows what metrics.jsonl holds, read by its own reader, and a resumed run's steps
// replace those a killed run logged after its last checkpoint.
TEST(Reporting, TensorBoardReadsTheCurvesOfAResumedRun) {
  TempDir dir;
  const fs::path run = dir / "r";
  const std::string every5 = "--set train.log_interval=5 ";
  ASSERT_EQ(run_command(train_command(run, every5 + "--stop-at-step 10"), dir.path()).status, 0);
  {
    // What a killed run could have left: a point after the checkpoint at step 10.
    run::EventWriter killed(run);
    killed.scalar("train/loss", 99.0, 15, run::wall_time_now());
  }
  // Event files are read in name order, and the name starts with the second it was made in.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  const auto resumed = run_command(train_command(run, every5 + "--resume"), dir.path());
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  ASSERT_EQ(
      run_command(
          std::string(kBinDir) + "/xl-eval --run " + run.string() + " --max-steps 2", dir.path())
          .status,
      0);

  const auto read = run_command(
      std::string(kPython) + " " + kSourceDir + "/tests/e2e/read_tensorboard.py " + run.string() +
          " 2>/dev/null",
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
  EXPECT_EQ(tb_train.size(), 8u); // steps 5, 10, ..., 40; the 99 at step 15 is gone
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

// train.init_from names what it loaded, what it left fresh and what it had no place for.
TEST(Training, InitFromListsLoadedFreshAndSkippedTensors) {
  TempDir dir;
  const std::string untied = "--set model.transformer_xl.tie_weight=false ";
  ASSERT_EQ(
      run_command(train_command(dir / "a", untied + "--stop-at-step 2"), dir.path()).status, 0);
  const auto tied = run_command(
      train_command(dir / "b", "--stop-at-step 2 --set train.init_from=" + (dir / "a").string()),
      dir.path());
  ASSERT_EQ(tied.status, 0) << tied.output;
  EXPECT_THAT(
      tied.output,
      HasSubstr("(step 2): 36 of 36 parameters loaded; skipped, not in this model: "
                "crit.out_weight_0, crit.out_weight_1, crit.out_weight_2"));
  const auto untied_again = run_command(
      train_command(
          dir / "c",
          untied +
              "--stop-at-step 2 --set train.init_from=" + (dir / "b/checkpoints/last.pt").string()),
      dir.path());
  ASSERT_EQ(untied_again.status, 0) << untied_again.output;
  EXPECT_THAT(
      untied_again.output,
      HasSubstr("36 of 39 parameters loaded; fresh, not in the checkpoint: "
                "crit.out_weight_0, crit.out_weight_1, crit.out_weight_2"));
  // Another inner size: the message points to train.init_exclude, which now keeps the
  // mismatched parameters out of the reading (it restored them after a read that refused them).
  const std::string wider =
      "--stop-at-step 2 --set model.d_inner=48 --set train.init_from=" + (dir / "a").string() + " ";
  const auto refused = run_command(train_command(dir / "d", untied + wider), dir.path());
  EXPECT_EQ(refused.status, 2) << refused.output;
  EXPECT_THAT(refused.output, HasSubstr("parameters have other shapes than this model's"));
  EXPECT_THAT(refused.output, HasSubstr("keep them fresh with train.init_exclude"));
  const auto excluded = run_command(
      train_command(dir / "e", untied + wider + "--set 'train.init_exclude=[\"*pos_ff*\"]'"),
      dir.path());
  ASSERT_EQ(excluded.status, 0) << excluded.output;
  EXPECT_THAT(excluded.output, HasSubstr("parameters loaded; fresh, train.init_exclude: "));
}

} // namespace
} // namespace xl::test
