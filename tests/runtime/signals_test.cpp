#include "xl/runtime/signals.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <string>
#include <vector>

#include "test_util.h"
#include "xl/util/files.h"

namespace xl::runtime {
namespace {

// A second SIGTERM while xl-eval wrote --per-token left "p.tsv.tmp.<pid>" beside the output.
TEST(StopSignals, ASecondOneEndsTheProcessAndRemovesTheTemporariesInProgress) {
  test::TempDir dir;
  atomic_write(dir / "out.tsv", std::string("the earlier output"));
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    install_stop_handlers();
    atomic_write(dir / "out.tsv", [&](const ByteSink& sink) {
      sink("half of it", 10);
      ::raise(SIGTERM); // the first asks to stop: the write goes on
      atomic_write(dir / "other.tsv", [&](const ByteSink& inner) {
        inner("nested", 6);
        ::raise(SIGTERM);
      });
    });
    ::_exit(0); // not reached
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM);
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    names.push_back(entry.path().filename().string());
  }
  EXPECT_EQ(names, std::vector<std::string>{"out.tsv"});
  EXPECT_EQ(test::read_text(dir / "out.tsv"), "the earlier output");
}

} // namespace
} // namespace xl::runtime
