// Data-parallel training: ranks started the way torchrun starts them (its environment), on
// Gloo over the loopback interface.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <thread>
#include <tuple>

#include "e2e_util.h"
#include "test_util.h"
#include "xl/run/checkpoint.h"

namespace xl::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

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

// Two ranks started with different models, or with different learning rates: every rank exits 2
// with the same line naming the first key that differs and both values, before any exchange a
// different model would break (Gloo aborted the process there).
TEST(DataParallel, RanksThatWouldTrainDifferentThingsAreRefusedByEveryRank) {
  TempDir dir;
  // What the config says, and what it does not: a deadline of the command line.
  for (const auto& [key, zero, one] :
       {std::tuple{"model.d_inner", "48", "64"},
        std::tuple{"train.lr", "0.5", "0.002"},
        std::tuple{"--stop-at-step", "2", "3"}}) {
    SCOPED_TRACE(key);
    const int port = free_port();
    const auto rank = [&](int r, const std::string& value) {
      const std::string set = std::string(key).rfind("--", 0) == 0
          ? std::string(key) + " " + value
          : "--set " + std::string(key) + "=" + value;
      return as_rank(
          r,
          2,
          port,
          train_command(dir / "r", "--set train.max_step=4 --set train.warmup_step=0 " + set),
          dir / ("rank" + std::to_string(r) + ".log"));
    };
    const auto r = run_command(
        "(" + rank(1, one) + ") & " + rank(0, zero) +
            "; zero=$?; wait $!; one=$?; echo \"ranks exited $zero $one\"",
        dir.path());
    EXPECT_THAT(r.output, HasSubstr("ranks exited 2 2"));
    for (int i = 0; i < 2; ++i) {
      const auto log = read_text(dir / ("rank" + std::to_string(i) + ".log"));
      EXPECT_THAT(
          log,
          HasSubstr(fmt::format(
              "error: rank {} of 2: the ranks would train different things: {}: rank 0 {}, "
              "rank 1 {}",
              i,
              key,
              zero,
              one)));
      EXPECT_THAT(log, Not(HasSubstr("terminate called")));
      EXPECT_THAT(log, Not(HasSubstr("gloo")));
    }
    fs::remove_all(dir / "r");
  }
}

// A port another program holds, or a second process that is rank 0 too: xl's own line, no
// c10d text.
TEST(DataParallel, ABusyPortIsNamedInXlsWords) {
  TempDir dir;
  const int port = free_port();
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  const auto busy = run_command(
      as_rank(
          0, 2, port, train_command(dir / "r", "--set train.dist_start_timeout_s=5"), dir / "log") +
          "; echo \"exit $?\"; cat log",
      dir.path());
  ::close(fd);
  EXPECT_THAT(busy.output, HasSubstr("exit 2"));
  EXPECT_THAT(busy.output, HasSubstr("cannot serve the ranks' meeting point at 127.0.0.1:"));
  EXPECT_THAT(busy.output, HasSubstr("the port is in use"));
  EXPECT_THAT(busy.output, Not(HasSubstr("EADDRINUSE")));
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
  for (const char* log : {"rank0.log", "rank1.log"}) { // LibTorch's reducer says nothing
    EXPECT_THAT(read_text(dir / log), Not(HasSubstr("find_unused_parameters"))) << log;
  }
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

} // namespace
} // namespace xl::test
