// The rule for tools' outputs (run/outputs.h): a run's files and folder are never an output,
// names are plain, an existing output needs --force, and the check comes before any work.
#include "xl/run/outputs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <random>

#include "test_util.h"
#include "xl/util/error.h"
#include "xl/util/files.h"

namespace xl::run {
namespace {

using test::read_text;
using test::TempDir;
using test::user_error;
using test::write_file;
using ::testing::HasSubstr;

// A run as the trainer leaves it.
fs::path make_run(const fs::path& dir) {
  write_file(dir / "config.yaml", "run:\n  name: r\n");
  write_file(dir / "metrics.jsonl", "{}\n");
  write_file(dir / "train.log", "");
  write_file(dir / "events.out.tfevents.1.host.2", "");
  write_file(dir / "checkpoints/best.pt", "weights");
  write_file(dir / "checkpoints/last.pt", "weights");
  return dir;
}

TEST(Outputs, ARunsFilesAreNeverAnOutputEvenWithForce) {
  TempDir dir;
  const auto run = make_run(dir / "r");
  for (const char* owned :
       {"config.yaml",
        "metrics.jsonl",
        "train.log",
        "events.out.tfevents.1.host.2",
        "checkpoints/best.pt",
        "checkpoints/new.csv",
        "checkpoints/sub/x.png"}) {
    for (const bool force : {false, true}) {
      EXPECT_THAT(
          user_error([&] { check_output_file("--csv", (run / owned).string(), force); }),
          HasSubstr("tools never write over a run's files"))
          << owned << " force " << force;
    }
  }
  // Reached through "..", a link to the run's folder, or a link to the file itself.
  fs::create_directory(dir / "elsewhere");
  fs::create_directory_symlink(run, dir / "link");
  fs::create_symlink(run / "metrics.jsonl", dir / "metrics_link.jsonl");
  for (const auto& path :
       {dir / "elsewhere/../r/metrics.jsonl",
        dir / "link/config.yaml",
        dir / "link/checkpoints/last.pt",
        dir / "metrics_link.jsonl"}) {
    EXPECT_THAT(
        user_error([&] { check_output_file("--csv", path.string(), true); }),
        HasSubstr("a file of the run in"))
        << path;
  }
  // What the run does not own is an ordinary output: new files beside it and in other folders.
  EXPECT_EQ(check_output_file("--csv", (run / "compare.csv").string(), false), run / "compare.csv");
  EXPECT_NO_THROW(check_output_file("--csv", (dir / "elsewhere/t.csv").string(), false));
  EXPECT_EQ(file_role(run, run / "checkpoints/averaged.pt"), "its checkpoints");
  EXPECT_EQ(file_role(run, run / ".lock"), "its lock");
  EXPECT_EQ(file_role(run, run / "notes/metrics.jsonl"), "");
  EXPECT_EQ(file_role(run, dir / "elsewhere/metrics.jsonl"), "");
}

TEST(Outputs, AnExistingFileNeedsForceAndOnlyRegularFilesAreReplaced) {
  TempDir dir;
  const auto file = write_file(dir / "table.csv", "old");
  EXPECT_THAT(
      user_error([&] { check_output_file("--csv", file.string(), false); }),
      HasSubstr("--csv " + file.string() + " exists; pass --force to replace it"));
  EXPECT_EQ(check_output_file("--csv", file.string(), true), file);
  // A device is written into, with no --force: it is never replaced.
  EXPECT_EQ(check_output_file("--csv", "/dev/null", false), fs::path("/dev/null"));
  EXPECT_TRUE(writes_through("/dev/null"));
  EXPECT_FALSE(writes_through(file));
  // A socket is no file to write and is never replaced either.
  const auto socket_path = dir / "s";
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  ASSERT_LT(socket_path.string().size(), sizeof(address.sun_path));
  socket_path.string().copy(static_cast<char*>(address.sun_path), sizeof(address.sun_path) - 1);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
  ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
  EXPECT_THAT(
      user_error([&] { check_output_file("--csv", socket_path.string(), true); }),
      HasSubstr("exists and is a socket or another special file, not a file"));
  ::close(fd);
  EXPECT_THAT(
      user_error([&] { check_output_file("--csv", dir.path().string(), true); }),
      HasSubstr("is a folder; name a file"));
  EXPECT_THAT(
      user_error([&] { check_output_file("--csv", "", true); }),
      HasSubstr("--csv: expected a path, found an empty one"));
  // A file where a folder of the path should be, and a folder that cannot be written.
  EXPECT_THAT(
      user_error([&] { check_output_file("--csv", (file / "x/t.csv").string(), true); }),
      HasSubstr(file.string() + " is not a folder"));
  if (::geteuid() != 0) { // root writes anywhere
    fs::create_directory(dir / "ro");
    fs::permissions(dir / "ro", fs::perms::owner_read | fs::perms::owner_exec);
    EXPECT_THAT(
        user_error([&] { check_output_file("--csv", (dir / "ro/t.csv").string(), true); }),
        HasSubstr("cannot create files in"));
  }
  // Missing folders are created when the file is written, atomically.
  write_output_file("--csv", dir / "new/deeper/t.csv", "a,b\n");
  EXPECT_EQ(read_text(dir / "new/deeper/t.csv"), "a,b\n");
}

TEST(Outputs, AFolderOutputIsNeverARunsAndAFullOneNeedsForce) {
  TempDir dir;
  const auto run = make_run(dir / "r");
  for (const auto& folder : {run, run / "checkpoints", run / "export"}) {
    for (const bool force : {false, true}) {
      EXPECT_THAT(
          user_error([&] { check_output_folder("--out", folder.string(), force); }),
          HasSubstr("tools never write into a run's folder"))
          << folder;
    }
  }
  write_file(dir / "full/a.txt", "");
  EXPECT_THAT(
      user_error([&] { check_output_folder("--out", (dir / "full").string(), false); }),
      HasSubstr("is a folder that is not empty; pass --force"));
  EXPECT_NO_THROW(check_output_folder("--out", (dir / "full").string(), true));
  EXPECT_NO_THROW(check_output_folder("--out", (dir / "new/a").string(), false));
  EXPECT_THAT(
      user_error([&] { check_output_folder("--out", (dir / "full/a.txt").string(), true); }),
      HasSubstr("is a file; name a folder"));
  EXPECT_THAT(
      user_error([&] { check_output_folder("--out", "", true); }), HasSubstr("expected a path"));
}

// Property test over random names made of the characters and pieces that matter: a name is
// plain exactly when it is one path component other than "." and "..", without control
// characters; and a plain name never leads out of the folder it is joined to.
TEST(Outputs, PlainNamesAreSingleComponentsInsideTheirFolder) {
  const std::vector<std::string> pieces{
      "a",
      "b.pt",
      ".",
      "..",
      "/",
      "_",
      "-",
      "+",
      " ",
      "\t",
      "\n",
      "\x7f",
      "é",
      "step_3",
      "compare.csv",
      std::string(1, '\x01'),
      std::string(120, 'x')};
  std::mt19937 rng(7);
  const fs::path folder = "/sweep";
  int plain = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string name;
    const int n = static_cast<int>(rng() % 4);
    for (int k = 0; k < n; ++k) {
      name += pieces[rng() % pieces.size()];
    }
    const bool has_control = std::any_of(name.begin(), name.end(), [](char c) {
      return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
    });
    const bool expected = !name.empty() && name != "." && name != ".." &&
        name.find('/') == std::string::npos && !has_control && name.size() <= 255;
    ASSERT_EQ(plain_name_problem(name).empty(), expected) << '"' << name << '"';
    if (expected) {
      ++plain;
      const auto joined = (folder / name).lexically_normal();
      ASSERT_EQ(joined.parent_path(), folder) << name;
      EXPECT_NO_THROW(check_plain_name("--out", name));
    } else {
      EXPECT_THROW(check_plain_name("--out", name), UserError);
    }
  }
  EXPECT_GT(plain, 2000); // both sides were exercised
}

} // namespace
} // namespace xl::run
