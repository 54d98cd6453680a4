// xl-sweep as a user runs it: resumed and interrupted sweeps.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sstream>
#include <thread>

#include "e2e_util.h"
#include "test_util.h"

namespace xl::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// xl-sweep: a run stopped early is resumed, the others trained, each evaluated once; the same
// command again skips them all; the table goes to stdout, a CSV and a plot beside the runs.
TEST(Sweep, ResumesInterruptedRunsSkipsFinishedOnesAndEndsWithTheComparison) {
  TempDir dir;
  const std::string common = std::string(kBinDir) + "/xl-sweep -c " + kSourceDir +
      "/configs/transformer_xl/tiny.yaml --set data.dir=" + corpus_dir().string() +
      " train.max_step=12 eval.batch_size=32 --dir sw";
  const std::string sweep = common +
      " --variant full --variant 'nomem model.transformer_xl.mem_len=0'"
      " --grid train.lr=0.002,0.001";
  // A dry run prints the commands a scheduler would run; one of them is started and stopped.
  const auto dry = run_command("{ " + sweep + " --dry-run 2>/dev/null; }", dir.path());
  ASSERT_EQ(dry.status, 0) << dry.output;
  std::istringstream lines(dry.output);
  std::vector<std::string> commands;
  for (std::string line; std::getline(lines, line);) {
    commands.push_back(line);
  }
  ASSERT_EQ(commands.size(), 4U) << dry.output;
  EXPECT_THAT(commands[3], HasSubstr("--set run.dir=sw/nomem,lr=0.001"));
  // The launcher the sweep was started through, which bounds the threads' spinning.
  EXPECT_EQ(commands[0].rfind(std::string(kBinDir) + "/xl-train --config", 0), 0U) << commands[0];
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
  for (const auto* run : {"full,lr=0.002", "full,lr=0.001", "nomem,lr=0.002", "nomem,lr=0.001"}) {
    EXPECT_EQ(checkpoint_step(dir / "sw" / run), 12) << run;
  }
  // stdout: the table alone, one row per run and the keys that differ.
  EXPECT_EQ(first.output.rfind("| run ", 0), 0U) << first.output;
  EXPECT_THAT(first.output, HasSubstr("| model.transformer_xl.mem_len | train.lr |"));
  EXPECT_THAT(first.output, HasSubstr("| sw/nomem,lr=0.001 | 12 "));
  // Each run evaluated once, at its own memory: one column, each cell naming its memory.
  EXPECT_THAT(first.output, HasSubstr("| test ppl "));
  EXPECT_THAT(first.output, HasSubstr(" mem=0 "));
  EXPECT_THAT(first.output, HasSubstr(" mem=32 "));
  EXPECT_TRUE(fs::exists(dir / "sw/compare.csv"));
  EXPECT_TRUE(fs::exists(dir / "sw/curves.png"));

  const auto again = run_command("{ " + sweep + " 2>log.txt; }", dir.path());
  ASSERT_EQ(again.status, 0) << read_text(dir / "log.txt");
  EXPECT_THAT(
      read_text(dir / "log.txt"), HasSubstr("[2/4] full,lr=0.001: finished at step 12, skipped"));
  EXPECT_THAT(read_text(dir / "log.txt"), Not(HasSubstr("evaluating")));
  EXPECT_EQ(again.output, first.output);

  // A finished run is not silently reused for another config.
  const auto changed = run_command(
      common + " --set model.d_inner=48 --variant full --grid train.lr=0.002", dir.path());
  EXPECT_EQ(changed.status, 2);
  EXPECT_THAT(changed.output, HasSubstr("model.d_inner"));
}

// A scheduler's SIGTERM to xl-sweep reaches the run it trains, which checkpoints; the sweep
// stops with 143 instead of starting the next run, and the same command resumes. SIGKILL of the
// sweep leaves no orphan: its run gets SIGTERM, checkpoints and ends (its lock is released).
TEST(Sweep, ASignalStopsTheRunAndTheSweepAndAKilledSweepLeavesNoOrphan) {
  TempDir dir;
  const std::string sweep = std::string(kBinDir) + "/xl-sweep -c " + kSourceDir +
      "/configs/transformer_xl/tiny.yaml --set data.dir=" + corpus_dir().string() +
      " train.max_step=5000 --dir sw --variant a --variant 'b train.lr=0.001'";
  const auto run = dir / "sw/a";
  const int stopped = signal_after_step(spawn(sweep, dir.path()), run, 3, SIGTERM);
  ASSERT_TRUE(WIFEXITED(stopped)) << stopped;
  EXPECT_EQ(WEXITSTATUS(stopped), 128 + SIGTERM);
  const int64_t first = checkpoint_step(run);
  EXPECT_GE(first, 3);
  EXPECT_LT(first, 5000);
  EXPECT_FALSE(fs::exists(dir / "sw/b")); // the next run was not started

  const int killed = signal_after_step(spawn(sweep, dir.path()), run, first + 3, SIGKILL);
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

} // namespace
} // namespace xl::test
