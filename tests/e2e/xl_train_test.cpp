// xl-train as a user runs it: exact resume after a clean stop, SIGKILL and SIGTERM; what a run
// reports and keeps safe; config errors; data-parallel runs.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "e2e_util.h"
#include "test_util.h"
#include "xl/prep/prepare.h"
#include "xl/run/checkpoint.h"
#include "xl/run/tensorboard.h"

namespace xl::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A run "r" in `dir`, stopped (with a checkpoint) at step 10.
void train_ten_steps(const TempDir& dir) {
  const auto r = run_command(train_command(dir / "r", "--stop-at-step 10"), dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
}

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
  EXPECT_THAT(again.output, HasSubstr("pass --resume to continue that run"));
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
  EXPECT_THAT(again.output, Not(HasSubstr("--resume")));
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

TEST(Training, SigtermCheckpointsThenExits) {
  TempDir dir;
  int status = 0;
  const int64_t saved = interrupt_and_resume(dir, SIGTERM, 13, &status);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM);
  EXPECT_GE(saved, 13); // the step the signal arrived in, not an earlier periodic one
  EXPECT_LT(saved, 40);
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
      HasSubstr("continue: xl-train --config " + (run / "config.yaml").string() + " --resume"));
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
  EXPECT_THAT(resumed.output, HasSubstr("evaluate: xl-eval --run " + run.string()));

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

// A save that cannot be written (here: past a file-size limit, as on a full disk) is a one-line
// error; the previous checkpoint and nothing else stays.
TEST(Integrity, AFailedSaveKeepsThePreviousCheckpoint) {
  TempDir dir;
  train_ten_steps(dir);
  const auto r =
      run_command("ulimit -f 200 && " + train_command(dir / "r", "--resume"), dir.path());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("error: cannot write "));
  EXPECT_THAT(r.output, HasSubstr("File too large"));
  EXPECT_THAT(r.output, Not(HasSubstr("terminate")));
  EXPECT_EQ(checkpoint_step(dir / "r"), 10);
  for (const auto& entry : fs::directory_iterator(dir / "r/checkpoints")) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos) << entry.path();
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
  EXPECT_THAT(r.output, HasSubstr("The last good checkpoint is " + (dir / "r").string()));
  EXPECT_EQ(checkpoint_step(dir / "r"), 10);
  const auto eval = run_command(
      std::string(kBinDir) + "/xl-eval --run r --checkpoint last --max-steps 2", dir.path());
  ASSERT_EQ(eval.status, 0) << eval.output;
  EXPECT_THAT(eval.output, HasSubstr("| ppl "));
  EXPECT_THAT(eval.output, Not(HasSubstr("nan")));
}

// The data folder prepared again from another corpus: same config, another vocabulary.
TEST(Integrity, ACheckpointRefusesAnotherVocabulary) {
  TempDir dir;
  const auto prepare = [&](const std::string& corpus) {
    prep::PrepOptions options;
    for (const char* split : {"train", "valid", "test"}) {
      options.splits[split] = testdata("wikitext-2/" + corpus);
    }
    options.out = dir / "data";
    prep::prepare_corpus(options);
  };
  prepare("wiki.test.tokens");
  const std::string train = std::string(kBinDir) + "/xl-train --config " + kSourceDir +
      "/configs/txl/tiny.yaml --set data.dir=data --set run.dir=r ";
  ASSERT_EQ(run_command(train + "--stop-at-step 10", dir.path()).status, 0);
  prepare("wiki.valid.tokens");
  for (const auto& command :
       {train + "--resume", std::string(kBinDir) + "/xl-eval --run r --checkpoint last"}) {
    SCOPED_TRACE(command);
    const auto r = run_command(command, dir.path());
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_THAT(r.output, HasSubstr("was trained on data with another vocabulary"));
    EXPECT_THAT(r.output, HasSubstr("than data.dir holds now (data/vocab.txt: "));
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
    if (fs::exists(dir / "r/metrics.jsonl", ec) && !train_losses(dir / "r").empty() &&
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
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM);
  EXPECT_LT(seconds, 3.0);
  EXPECT_EQ(checkpoint_step(dir / "r"), 5);
  EXPECT_THAT(
      read_text(dir / "r/train.log"), HasSubstr("validation at step 5 interrupted by a signal"));
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
  const auto first = run_command(train_command(dir / "r", slow + "--stop-at-step 1"), dir.path());
  ASSERT_EQ(first.status, 0) << first.output;
  const pid_t pid = spawn(train_command(dir / "r", slow + "--resume"), dir.path());
  for (int i = 0; i < 6000; ++i) {
    if (!train_losses(dir / "r").empty() && train_losses(dir / "r").rbegin()->first >= 2) {
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
  EXPECT_THAT(read_text(dir / "r/train.log"), Not(HasSubstr("checkpoint step 3")));
}

// Item 7: a kill after a new best.pt is written and before it is copied to last.pt leaves
// best.pt newer than last.pt. The resumed run replays from last.pt and ends with the
// checkpoints and losses of a run that was never killed.
TEST(Integrity, AKillBetweenBestAndLastResumesToTheUninterruptedCheckpoints) {
  TempDir dir;
  const auto ref = run_command(train_command(dir / "ref", "--stop-at-step 20"), dir.path());
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
  const auto resumed =
      run_command(train_command(dir / "r", "--resume --stop-at-step 20"), dir.path());
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  EXPECT_EQ(checkpoint_step(dir / "r"), 20);
  EXPECT_EQ(run::load_checkpoint(dir / "r/checkpoints/best.pt", archive).step, 20);
  expect_same_losses_after(train_losses(dir / "ref"), train_losses(dir / "r"), 10, 20);
  EXPECT_EQ(split_losses(dir / "r", "valid").at(20), split_losses(dir / "ref", "valid").at(20));
}

TEST(Integrity, OneTrainerPerRunDirectory) {
  TempDir dir;
  const pid_t pid = spawn(train_command(dir / "r", "--set train.max_step=1000000"), dir.path());
  for (int i = 0; i < 3000 && !fs::exists(dir / "r/metrics.jsonl"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const auto second = run_command(train_command(dir / "r"), dir.path());
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_EQ(second.status, 2) << second.output;
  EXPECT_THAT(
      second.output, HasSubstr("is in use by another xl-train (pid " + std::to_string(pid)));
  // A resume that would stop at the checkpoint's step trains nothing: refused, and config.yaml
  // keeps its max_step (it said "steps 5..4", rewrote config.yaml and exited 0).
  const int64_t at = checkpoint_step(dir / "r");
  const auto nothing = run_command(
      train_command(dir / "r", "--resume --set train.max_step=" + std::to_string(at)), dir.path());
  EXPECT_EQ(nothing.status, 2) << nothing.output;
  EXPECT_THAT(nothing.output, HasSubstr("nothing to train; raise it to train on"));
  EXPECT_THAT(test::read_text(dir / "r/config.yaml"), HasSubstr("max_step: 1000000"));
  // The kernel released the killed trainer's lock: the run resumes, for one step past its
  // checkpoint's.
  const auto resumed = run_command(
      train_command(
          dir / "r",
          "--resume --set train.max_step=1000000 --stop-at-step " + std::to_string(at + 1)),
      dir.path());
  EXPECT_EQ(resumed.status, 0) << resumed.output;
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
  const auto r = run_command(train_command(dir / "r", "--resume --stop-at-step 12"), dir.path());
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
  const auto r = run_command(std::string(kBinDir) + "/xl-eval --run r --max-steps 2", dir.path());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("cannot append to r/metrics.jsonl"));
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
  return "env RANK=" + std::to_string(rank) + " LOCAL_RANK=" + std::to_string(rank) +
      " WORLD_SIZE=" + std::to_string(ranks) +
      " MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port) + " " + command + " >" +
      log.string() + " 2>&1";
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
    EXPECT_NEAR(actual.at(step), loss, 1e-5 * std::abs(loss)) << "step " << step;
  }
}

// A rank whose peers never come says what it waits for and gives up after
// train.dist_start_timeout_s with one line; an address that does not resolve fails at once.
TEST(DataParallel, StartUpSaysWhatItWaitsForAndGivesUpWithOneLine) {
  TempDir dir;
  const int port = free_port();
  const auto started = std::chrono::steady_clock::now();
  const auto alone = run_command(
      "env WORLD_SIZE=2 RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port) + " " +
          train_command(dir / "r", "--set train.dist_start_timeout_s=2"),
      dir.path());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(alone.status, 2) << alone.output;
  EXPECT_THAT(
      alone.output,
      HasSubstr(
          "rank 0 of 2: waiting for the 2 processes at 127.0.0.1:" + std::to_string(port) +
          " (up to 2 s"));
  EXPECT_THAT(alone.output, HasSubstr("did not all join at 127.0.0.1:"));
  EXPECT_LT(seconds, 60.0) << alone.output;
  const auto error = alone.output.substr(alone.output.find("error: "));
  EXPECT_EQ(error.find('\n'), error.size() - 1) << "one line: " << error;

  const auto nowhere = run_command(
      "env WORLD_SIZE=2 RANK=1 MASTER_ADDR=no-such-host.invalid " + train_command(dir / "s"),
      dir.path());
  EXPECT_EQ(nowhere.status, 2) << nowhere.output;
  EXPECT_THAT(
      nowhere.output, HasSubstr("MASTER_ADDR=no-such-host.invalid: cannot resolve the address"));
  const auto rank_alone = run_command("env RANK=1 " + train_command(dir / "t"), dir.path());
  EXPECT_EQ(rank_alone.status, 2) << rank_alone.output;
  EXPECT_THAT(rank_alone.output, HasSubstr("RANK=1 is set but WORLD_SIZE is not"));
}

// Two processes, each with half of every batch, train as one process whose batch_chunk splits
// the batch the same way: the same losses after every step (so the same gradients) and the
// same validation losses. Dropout is off: the ranks draw their masks from their own streams.
TEST(DataParallel, TwoGlooProcessesTrainAsOneProcessOnTheCombinedBatch) {
  TempDir dir;
  const std::string settings =
      "--set model.dropout=0 --set model.dropatt=0 --set train.max_step=12 "
      "--set train.eval_interval=6";
  const auto one =
      run_command(train_command(dir / "one", settings + " --set train.batch_chunk=2"), dir.path());
  ASSERT_EQ(one.status, 0) << one.output;
  run_two_ranks(dir, train_command(dir / "two", settings));
  EXPECT_THAT(read_text(dir / "rank0.log"), HasSubstr("data-parallel training on 2 processes"));
  EXPECT_EQ(train_losses(dir / "two").size(), 12U);
  expect_close_losses(train_losses(dir / "one"), train_losses(dir / "two"));
  expect_close_losses(split_losses(dir / "one", "valid"), split_losses(dir / "two", "valid"));
  EXPECT_EQ(checkpoint_step(dir / "two"), 12);
}

// Stopped and resumed on two processes, with dropout on, a run repeats the uninterrupted run's
// losses exactly: every rank's memories and random stream are in the checkpoint. One process
// may not resume it.
TEST(DataParallel, ResumeOnTheSameProcessCountIsExactAndAnotherIsRefused) {
  TempDir dir;
  const std::string settings = "--set train.max_step=16 --set train.eval_interval=4";
  run_two_ranks(dir, train_command(dir / "full", settings));
  run_two_ranks(dir, train_command(dir / "cut", settings + " --stop-at-step 7"));
  EXPECT_EQ(checkpoint_step(dir / "cut"), 7);
  const auto alone = run_command(train_command(dir / "cut", settings + " --resume"), dir.path());
  EXPECT_EQ(alone.status, 2);
  EXPECT_THAT(alone.output, HasSubstr("was written by a run of 2 processes; resume it with 2"));
  run_two_ranks(dir, train_command(dir / "cut", settings + " --resume"));
  expect_same_losses_after(train_losses(dir / "full"), train_losses(dir / "cut"), 7, 16);
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
      const std::string line =
          "exec " + as_rank(rank, 2, port, command, dir / ("rank" + std::to_string(rank) + ".log"));
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
  EXPECT_THAT(read_text(dir / "rank0.log"), HasSubstr("another rank has probably stopped"));
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

// Elastic recovery: under torchrun --max-restarts with --auto-resume, a rank SIGKILLed mid-run
// makes torchrun restart the group, which resumes from the last checkpoint and ends with the
// uninterrupted run's losses, bit for bit. (The restarted group read the dead group's addresses
// from torchrun's store, which outlives restarts, and failed to connect.)
TEST(DataParallel, TorchrunRestartsAKilledGroupThatEndsAsIfUninterrupted) {
  TempDir dir;
  const auto torchrun = [&](const std::string& run) {
    return "sh -c \"" + std::string(kPython) +
        " -m torch.distributed.run --standalone --nproc-per-node 2 --max-restarts 2 "
        "--no-python " +
        train_command(
               dir / run,
               "--set train.scheduler=constant --set train.max_step=200 "
               "--set train.eval_interval=20 --auto-resume") +
        " >" + (dir / (run + ".log")).string() + " 2>&1\"";
  };
  ASSERT_EQ(run_command(torchrun("ref"), dir.path()).status, 0) << read_text(dir / "ref.log");
  const pid_t agent = spawn(torchrun("r"), dir.path());
  for (int i = 0; i < 6000; ++i) {
    const auto losses = train_losses(dir / "r");
    if (fs::exists(dir / "r/checkpoints/last.pt") && !losses.empty() &&
        losses.rbegin()->first >= 25) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // The newest xl-train of this run: a worker, not torchrun's agent (whose command line names
  // xl-train too).
  const auto killed = run_command(
      "pkill -KILL -n -f '^" + std::string(kBinDir) +
          "/xl-train .*run.dir=" + (dir / "r").string() + " '",
      dir.path());
  EXPECT_EQ(killed.status, 0) << killed.output;
  int status = 0;
  ::waitpid(agent, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << read_text(dir / "r.log");
  EXPECT_EQ(checkpoint_step(dir / "r"), 200);
  expect_same_losses_after(train_losses(dir / "ref"), train_losses(dir / "r"), 0, 200);
  EXPECT_EQ(split_losses(dir / "r", "valid").at(200), split_losses(dir / "ref", "valid").at(200));
  // The same command once the run has finished (a scheduler's rerun): nothing changes.
  const std::string metrics = read_text(dir / "r/metrics.jsonl");
  ASSERT_EQ(run_command(torchrun("r"), dir.path()).status, 0) << read_text(dir / "r.log");
  EXPECT_THAT(
      read_text(dir / "r.log"), HasSubstr("finished at step 200 (train.max_step): nothing"));
  EXPECT_EQ(read_text(dir / "r/metrics.jsonl"), metrics);
}

// A rank that stops answering (SIGSTOP) ends the others with one line after
// train.dist_timeout_s (it was a fixed 30 minutes), and the last checkpoint is kept.
TEST(DataParallel, AStoppedRankEndsTheOthersAfterTheTimeoutWithOneLine) {
  TempDir dir;
  const int port = free_port();
  const std::string command = train_command(
      dir / "r",
      "--set train.scheduler=constant --set train.max_step=1000000 --set train.eval_interval=10 "
      "--set train.dist_timeout_s=3");
  std::vector<pid_t> ranks;
  for (const int rank : {0, 1}) {
    ranks.push_back(spawn(
        "sh -c \"" +
            as_rank(rank, 2, port, command, dir / ("rank" + std::to_string(rank) + ".log")) + "\"",
        dir.path()));
  }
  for (int i = 0; i < 6000; ++i) {
    const auto losses = train_losses(dir / "r");
    if (!losses.empty() && losses.rbegin()->first >= 25) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // spawn's shell runs the rank's shell, which runs xl-train: stop the whole process group.
  ::kill(-ranks[1], SIGSTOP);
  const auto stopped = std::chrono::steady_clock::now();
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 600 && done == 0; ++i) {
    done = ::waitpid(ranks[0], &status, WNOHANG);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped).count();
  ::kill(-ranks[1], SIGKILL);
  ::waitpid(ranks[1], nullptr, 0);
  if (done == 0) {
    ::kill(-ranks[0], SIGKILL);
    ::waitpid(ranks[0], nullptr, 0);
    FAIL() << "rank 0 still waits a minute after rank 1 stopped";
  }
  EXPECT_LT(waited, 30.0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  const std::string log = read_text(dir / "rank0.log");
  EXPECT_THAT(log, HasSubstr("did not answer within 3 s (train.dist_timeout_s)"));
  EXPECT_THAT(log, HasSubstr("--resume (or torchrun --max-restarts with --auto-resume)"));
  size_t errors = 0;
  for (size_t at = log.find("error: "); at != std::string::npos; at = log.find("error: ", at + 1)) {
    errors += at == 0 || log[at - 1] == '\n' ? 1 : 0;
  }
  EXPECT_EQ(errors, 1U) << log;
  EXPECT_GE(checkpoint_step(dir / "r"), 20);
}

TEST(XlTrain, DumpConfigPrintsResolvedYamlThatLoadsBack) {
  TempDir dir;
  const std::string cfg = config_file("configs/txl/wt2_small.yaml");
  auto r = run_command(
      app("xl-train") + " --config " + cfg +
          " --set model.n_layer=3 --set train.lr=5e-4 --dump-config",
      dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("  n_layer: 3\n"));
  EXPECT_THAT(r.output, HasSubstr("  lr: 0.0005\n"));
  EXPECT_THAT(r.output, HasSubstr("  name: \"wt2_small\"\n"));
  write_file(dir / "dumped.yaml", r.output);
  const auto again =
      run_command(app("xl-train") + " --config dumped.yaml --dump-config", dir.path());
  ASSERT_EQ(again.status, 0) << again.output;
  EXPECT_EQ(again.output, r.output);
}

TEST(XlTrain, ConfigErrorsExitTwoWithOneLineAndNoStackTrace) {
  TempDir dir;
  const std::string cfg = config_file("configs/txl/wt2_small.yaml");
  const auto r =
      run_command(app("xl-train") + " --config " + cfg + " --set model.n_layers=3", dir.path());
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(
      r.output,
      "error: --set model.n_layers=3: unknown key 'model.n_layers' (did you mean "
      "'model.n_layer'?)\n");
  const auto missing = run_command(app("xl-train") + " --config nope.yaml", dir.path());
  EXPECT_EQ(missing.status, 2);
  EXPECT_THAT(missing.output, HasSubstr("config file not found: nope.yaml"));
  EXPECT_THAT(missing.output, Not(HasSubstr("Exception raised from")));
  const auto usage = run_command(app("xl-train") + " --bogus-flag", dir.path());
  EXPECT_EQ(usage.status, 2);
}

// With no memory, same_length hides every key (NaN where Hugging Face masks with -1e30 and
// leaks future tokens): refused up front, by training and by the parity check alike.
TEST(XlTrain, SameLengthWithoutMemoryIsRefusedBeforeAnythingRuns) {
  TempDir dir;
  const std::string flags = " --config " + config_file("configs/txl/tiny.yaml") +
      " --set model.transformer_xl.same_length=true --set model.transformer_xl.mem_len=0";
  const auto train = run_command(app("xl-train") + flags, dir.path());
  EXPECT_EQ(train.status, 2);
  EXPECT_THAT(
      train.output,
      HasSubstr("model.transformer_xl.same_length: needs model.transformer_xl.mem_len > 0"));
  EXPECT_FALSE(fs::exists(dir / "runs"));
  const auto parity = run_command(
      "XL_BIN=" + std::string(kBinDir) + " XL_PYTHON=" + kPython + " " + kSourceDir +
          "/scripts/parity/check.sh" + flags.substr(std::string(" --config").size()),
      dir.path());
  EXPECT_EQ(parity.status, 2);
  EXPECT_THAT(parity.output, HasSubstr("needs model.transformer_xl.mem_len > 0"));
}

TEST(XlTrain, PrintSchemaDocumentsEveryKey) {
  const auto r = run_command(app("xl-train") + " --print-schema");
  ASSERT_EQ(r.status, 0);
  EXPECT_THAT(r.output, HasSubstr("| `model.transformer_xl.mem_len` |"));
  EXPECT_THAT(r.output, HasSubstr("| `eval.same_length` |"));
}

TEST(XlTrain, MissingPreparedDataIsAClearError) {
  TempDir dir;
  const auto r = run_command(
      app("xl-train") + " --config " + config_file("configs/txl/wt2_small.yaml") +
          " --set data.dir=absent",
      dir.path());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.output, HasSubstr("data.dir not found: absent ("));
  EXPECT_THAT(r.output, HasSubstr("taken from the current directory, " + dir.path().string()));
  // The data is opened before the run directory is made: nothing is left behind.
  EXPECT_FALSE(fs::exists(dir / "runs/wt2_small"));
}

} // namespace
} // namespace xl::test
