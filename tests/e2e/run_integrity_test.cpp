// xl-train under faults: a failed save, a diverged model, another vocabulary, signals during
// validation and between the checkpoint files, two trainers on one run, torn and unwritable
// metrics, sizes that cannot fit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
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

namespace xl::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// train.early_stop: a run whose validation stops improving (a learning rate too small to change
// a weight) ends at the validation that makes it the limit; killed on the way, it resumes and
// counts on to the same stop. A stopped run is refused by --resume, left as it is by
// --auto-resume, and trains on with the limit lifted.
TEST(EarlyStopping, EndsAtTheRightStepAndAKilledRunResumesToTheSameStop) {
  TempDir dir;
  const std::string stale =
      "--set train.max_step=400 train.lr=1e-30 train.eval_interval=20 train.early_stop=3 ";
  const auto reference = run_command(train_command(dir / "ref", stale), dir.path());
  ASSERT_EQ(reference.status, 0) << reference.output;
  EXPECT_THAT(
      reference.output,
      HasSubstr("stopped early (3 validations in a row without a new best: train.early_stop) at "
                "step 80 of 400"));
  EXPECT_THAT(reference.output, HasSubstr("evaluate: "));
  EXPECT_EQ(checkpoint_step(dir / "ref"), 80); // the best at 20, then 40, 60, 80
  const pid_t pid = spawn(train_command(dir / "cut", stale), dir.path());
  EXPECT_TRUE(WIFSIGNALED(signal_after_step(pid, dir / "cut", 45, SIGKILL)));
  const int64_t saved = checkpoint_step(dir / "cut");
  ASSERT_GE(saved, 40);
  ASSERT_LT(saved, 80);
  const auto resumed = run_command(train_command(dir / "cut", stale + "--resume"), dir.path());
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  EXPECT_THAT(resumed.output, HasSubstr("stopped early"));
  EXPECT_EQ(checkpoint_step(dir / "cut"), 80);
  expect_same_losses_after(train_losses(dir / "ref"), train_losses(dir / "cut"), saved, 80);
  const auto again = run_command(train_command(dir / "cut", stale + "--resume"), dir.path());
  EXPECT_EQ(again.status, 2) << again.output;
  EXPECT_THAT(again.output, HasSubstr("stopped early at step 80: 3 validations in a row"));
  EXPECT_THAT(again.output, HasSubstr("--set train.early_stop=null --resume"));
  const auto automatic =
      run_command(train_command(dir / "cut", stale + "--auto-resume"), dir.path());
  EXPECT_EQ(automatic.status, 0) << automatic.output;
  EXPECT_EQ(checkpoint_step(dir / "cut"), 80);
  const auto lifted = run_command(
      train_command(dir / "cut", stale + "--set train.early_stop=null train.max_step=100 --resume"),
      dir.path());
  ASSERT_EQ(lifted.status, 0) << lifted.output;
  EXPECT_EQ(checkpoint_step(dir / "cut"), 100);
}

// step -> the learning rate of a run's training records (the last record of a step).
std::map<int64_t, double> learning_rates(const fs::path& run) {
  std::map<int64_t, double> out;
  std::istringstream lines(read_text(run / "metrics.jsonl"));
  std::string line;
  while (std::getline(lines, line)) {
    const auto record = nlohmann::json::parse(line);
    if (record.value("split", "") == "train") {
      out[record["step"].get<int64_t>()] = record["lr"].get<double>();
    }
  }
  return out;
}

// --stop-at-step between two validations, then --resume: the run an uninterrupted one is. The
// validation at the stop is shown but does not count, for the plateau schedule (its learning
// rate halves at each validation without a new best) nor for train.early_stop (3 of them end
// the run): counted, the cut run would stop at step 30 with another learning rate from 15 on.
TEST(EarlyStopping, AStopBetweenValidationsChangesNothingOfTheRun) {
  TempDir dir;
  const std::string stale =
      "--set train.max_step=100 train.lr=1e-30 train.eval_interval=10 train.early_stop=3 "
      "train.scheduler=plateau train.patience=0 train.log_interval=1 ";
  const auto reference = run_command(train_command(dir / "ref", stale), dir.path());
  ASSERT_EQ(reference.status, 0) << reference.output;
  EXPECT_THAT(reference.output, HasSubstr("at step 40 of 100"));
  auto cut = run_command(train_command(dir / "cut", stale + "--stop-at-step 15"), dir.path());
  ASSERT_EQ(cut.status, 0) << cut.output;
  EXPECT_TRUE(fs::exists(dir / "cut/checkpoints/best.pt")); // the tools have one to open
  cut = run_command(train_command(dir / "cut", stale + "--resume --stop-at-step 27"), dir.path());
  ASSERT_EQ(cut.status, 0) << cut.output;
  cut = run_command(train_command(dir / "cut", stale + "--resume"), dir.path());
  ASSERT_EQ(cut.status, 0) << cut.output;
  EXPECT_THAT(cut.output, HasSubstr("at step 40 of 100"));
  EXPECT_EQ(checkpoint_step(dir / "cut"), 40);
  expect_same_losses_after(train_losses(dir / "ref"), train_losses(dir / "cut"), 0, 40);
  EXPECT_EQ(learning_rates(dir / "cut"), learning_rates(dir / "ref"));
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
  const auto prepare = [&](const std::string& corpus, formats::VocabKind kind) {
    prep::PrepOptions options;
    for (const char* split : {"train", "valid", "test"}) {
      options.splits[split] = testdata("wikitext-2/" + corpus);
    }
    options.out = dir / "data";
    options.kind = kind;
    prep::prepare_corpus(options);
  };
  prepare("wiki.test.tokens", formats::VocabKind::kWord);
  const std::string train = std::string(kBinDir) + "/xl-train --config " + kSourceDir +
      "/configs/transformer_xl/tiny.yaml --set data.dir=data --set run.dir=r ";
  ASSERT_EQ(run_command(train + "--stop-at-step 10", dir.path()).status, 0);
  // Another corpus, then bytes: a vocabulary too small for the model's cutoffs, which the
  // resume named instead of the data.
  for (const auto kind : {formats::VocabKind::kWord, formats::VocabKind::kByte}) {
    prepare("wiki.valid.tokens", kind);
    for (const auto& command :
         {train + "--resume", std::string(kBinDir) + "/xl-eval --run r --checkpoint last"}) {
      SCOPED_TRACE(command);
      const auto r = run_command(command, dir.path());
      EXPECT_EQ(r.status, 2) << r.output;
      EXPECT_THAT(r.output, HasSubstr("was trained on data with another vocabulary"));
      EXPECT_THAT(r.output, HasSubstr("than data.dir holds now (data/vocab.txt: "));
      EXPECT_THAT(
          r.output,
          HasSubstr(
              "the run keeps the one it was trained on, " + (dir / "r/vocab.txt").string() +
              ": set data.dir to data prepared with it (xl-prep --vocab "));
    }
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
TEST(Integrity, AKillBetweenBestAndLastResumesFromTheNewerBest) {
  TempDir dir;
  const auto ref = run_command(train_command(dir / "ref", "--stop-at-step 30"), dir.path());
  ASSERT_EQ(ref.status, 0) << ref.output;
  torch::serialize::InputArchive archive;
  ASSERT_EQ( // step 20's validation was a new best
      run::load_checkpoint(dir / "ref/checkpoints/best.pt", archive).step,
      30);
  // The state a kill between the two writes of step 20's new best leaves: best.pt of step 20,
  // last.pt of step 10, older.
  train_ten_steps(dir);
  fs::copy_file(dir / "r/checkpoints/last.pt", dir / "last_10.pt");
  ASSERT_EQ(
      run_command(train_command(dir / "r", "--resume --stop-at-step 20"), dir.path()).status, 0);
  ASSERT_EQ(run::load_checkpoint(dir / "r/checkpoints/best.pt", archive).step, 20);
  fs::copy_file(
      dir / "last_10.pt", dir / "r/checkpoints/last.pt", fs::copy_options::overwrite_existing);
  fs::last_write_time(
      dir / "r/checkpoints/last.pt",
      fs::last_write_time(dir / "r/checkpoints/best.pt") - std::chrono::seconds(1));
  const auto resumed =
      run_command(train_command(dir / "r", "--resume --stop-at-step 30"), dir.path());
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  EXPECT_THAT(resumed.output, HasSubstr("best.pt (step 20), the newest checkpoint that verifies"));
  EXPECT_EQ(checkpoint_step(dir / "r"), 30);
  EXPECT_EQ(run::load_checkpoint(dir / "r/checkpoints/best.pt", archive).step, 30);
  expect_same_losses_after(train_losses(dir / "ref"), train_losses(dir / "r"), 20, 30);
  EXPECT_EQ(split_losses(dir / "r", "valid").at(30), split_losses(dir / "ref", "valid").at(30));
}

// A kill during the first checkpoint (between best.pt and its copy to last.pt, a temporary
// left), or a first save whose copy fails: --resume and --auto-resume continue from best.pt,
// saying so, to the uninterrupted run's losses. A folder of weights alone is refused by name.
TEST(Integrity, AKillInTheFirstCheckpointLeavesARunThatResumes) {
  TempDir dir;
  const auto ref = run_command(train_command(dir / "ref", "--stop-at-step 20"), dir.path());
  ASSERT_EQ(ref.status, 0) << ref.output;
  for (const std::string how : {"--resume", "--auto-resume"}) {
    SCOPED_TRACE(how);
    const fs::path run = dir / ("r" + how);
    ASSERT_EQ(run_command(train_command(run, "--stop-at-step 10"), dir.path()).status, 0);
    fs::remove(run / "checkpoints/last.pt");
    write_file(run / "checkpoints/last.pt.tmp.99999", "half a checkpoint");
    const auto resumed = run_command(train_command(run, how + " --stop-at-step 20"), dir.path());
    ASSERT_EQ(resumed.status, 0) << resumed.output;
    EXPECT_THAT(
        resumed.output, HasSubstr("best.pt (step 10), the newest checkpoint that verifies"));
    EXPECT_THAT(resumed.output, HasSubstr("last.pt: missing"));
    EXPECT_FALSE(fs::exists(run / "checkpoints/last.pt.tmp.99999"));
    expect_same_losses_after(train_losses(dir / "ref"), train_losses(run), 10, 20);
  }
  // A first save whose copy to last.pt fails (too few file descriptors left: the limit that
  // lets best.pt be written but not read back, found by trying) is an error that leaves best.pt,
  // from which --auto-resume continues.
  bool copy_failed = false;
  for (int limit = 6; limit <= 24 && !copy_failed; ++limit) {
    const fs::path run = dir / ("f" + std::to_string(limit));
    // bash: dash's own redirections need descriptors past such a limit.
    const auto failed = run_command(
        "bash -c 'ulimit -n " + std::to_string(limit) + " && exec " +
            train_command(run, "--stop-at-step 10") + "'",
        dir.path());
    copy_failed = failed.status == 2 && fs::exists(run / "checkpoints/best.pt") &&
        !fs::exists(run / "checkpoints/last.pt");
    if (!copy_failed) {
      continue;
    }
    SCOPED_TRACE("ulimit -n " + std::to_string(limit));
    EXPECT_THAT(failed.output, HasSubstr("Too many open files"));
    const auto resumed =
        run_command(train_command(run, "--auto-resume --stop-at-step 20"), dir.path());
    ASSERT_EQ(resumed.status, 0) << resumed.output;
    EXPECT_THAT(
        resumed.output, HasSubstr("the newest checkpoint that verifies (last.pt: missing)"));
    expect_same_losses_after(train_losses(dir / "ref"), train_losses(run), 10, 20);
  }
  EXPECT_TRUE(copy_failed) << "no descriptor limit let best.pt be written and its copy fail";
  // Weights alone (what xl-import writes) are no state to resume.
  fs::create_directories(dir / "w/checkpoints");
  ASSERT_EQ(run_command(train_command(dir / "full", "--stop-at-step 10"), dir.path()).status, 0);
  const auto averaged =
      run_command(app("xl-average") + " --run full --checkpoints last --out weights", dir.path());
  ASSERT_EQ(averaged.status, 0) << averaged.output;
  fs::copy_file(dir / "full/checkpoints/weights.pt", dir / "w/checkpoints/best.pt");
  fs::copy_file(dir / "full/config.yaml", dir / "w/config.yaml");
  const auto refused = run_command(train_command(dir / "w", "--resume"), dir.path());
  EXPECT_EQ(refused.status, 2) << refused.output;
  EXPECT_THAT(refused.output, HasSubstr("best.pt: weights only, no training state"));
}

// A run "r" in `dir` trained to step 20, with the snapshots of steps 10 and 20.
void train_with_snapshots(const TempDir& dir) {
  const auto r = run_command(
      train_command(dir / "r", "--stop-at-step 20 --set train.keep_snapshots=2"), dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
}

// Without last.pt and best.pt, a resume continues from the snapshot of the highest step it
// holds, whatever its file is called.
TEST(Integrity, AResumeFromSnapshotsTakesTheStepInsideThem) {
  TempDir dir;
  train_with_snapshots(dir);
  fs::remove(dir / "r/checkpoints/last.pt");
  fs::remove(dir / "r/checkpoints/best.pt");
  fs::rename(dir / "r/checkpoints/step_10.pt", dir / "r/checkpoints/step_30.pt");
  const auto resumed =
      run_command(train_command(dir / "r", "--resume --stop-at-step 25"), dir.path());
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  EXPECT_THAT(resumed.output, HasSubstr("checkpoints/step_20.pt (step 20), the newest checkpoint"));
}

// Every file of a folder by name, and its bytes.
std::map<std::string, std::string> folder_files(const fs::path& folder) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::directory_iterator(folder)) {
    files[entry.path().filename().string()] = read_text(entry.path());
  }
  return files;
}

// xl-export --force over an earlier export, stopped by SIGKILL, SIGINT or SIGTERM while it
// writes: the folder holds the earlier export or the new one, whole (Hugging Face never finds
// the new weights beside the old config.json), and the next xl-export --force completes it
// and leaves nothing beside it.
TEST(Integrity, AnExportStoppedWhileItWritesLeavesTheEarlierOrTheNewOneWhole) {
  TempDir dir;
  train_with_snapshots(dir);
  const auto exported = [&](const std::string& checkpoint, const std::string& out) {
    return app("xl-export") + " --run r --checkpoint " + checkpoint + " --out " + out + " --force";
  };
  ASSERT_EQ(run_command(exported("step_10", "old"), dir.path()).status, 0);
  ASSERT_EQ(run_command(exported("step_20", "new"), dir.path()).status, 0);
  const auto old_files = folder_files(dir / "old");
  const auto new_files = folder_files(dir / "new");
  ASSERT_NE(old_files, new_files);
  for (const int sig : {SIGKILL, SIGINT, SIGTERM}) {
    bool stopped_while_writing = false;
    for (int attempt = 0; attempt < 20 && !stopped_while_writing; ++attempt) {
      fs::remove_all(dir / "hf");
      fs::copy(dir / "old", dir / "hf");
      const pid_t pid = spawn(exported("step_20", "hf"), dir.path());
      int status = 0;
      while (::waitpid(pid, &status, WNOHANG) == 0) {
        if (fs::exists(dir / ".hf.staged")) {
          stopped_while_writing = true;
          ::kill(-pid, sig);
          ::waitpid(pid, &status, 0);
          break;
        }
      }
      const auto found = folder_files(dir / "hf");
      EXPECT_TRUE(found == old_files || found == new_files) << "signal " << sig;
    }
    EXPECT_TRUE(stopped_while_writing) << "signal " << sig << ": the staging folder never seen";
    const auto again = run_command(exported("step_20", "hf"), dir.path());
    ASSERT_EQ(again.status, 0) << again.output;
    EXPECT_EQ(folder_files(dir / "hf"), new_files);
    EXPECT_FALSE(fs::exists(dir / ".hf.staged")) << "signal " << sig;
  }
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

} // namespace
} // namespace xl::test
