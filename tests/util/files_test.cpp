#include "xl/util/files.h"
#include "xl/util/hash.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <string>
#include <thread>

#include "test_util.h"
#include "xl/util/error.h"

namespace xl {
namespace {

TEST(AtomicWrite, ReplacesContentAndLeavesNoTemporary) {
  test::TempDir dir;
  atomic_write(dir / "f.txt", std::string("first"));
  atomic_write(dir / "f.txt", std::string("second"));
  EXPECT_EQ(read_file(dir / "f.txt"), "second");
  size_t files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir.path())) {
    ++files;
  }
  EXPECT_EQ(files, 1u);
}

TEST(AtomicWrite, CreatesParentFolders) {
  test::TempDir dir;
  atomic_write(dir / "a" / "b" / "f.txt", std::string("x"));
  EXPECT_EQ(read_file(dir / "a" / "b" / "f.txt"), "x");
}

// A checkpoint copied whole through a string left a hole of its size in a trainer's heap, which
// grew the heap by that much once the hole had been cut up (the soak test, docs/integrity.md).
TEST(AtomicCopy, CopiesEveryByteInChunksAndKeepsTheTargetWhenTheSourceIsMissing) {
  test::TempDir dir;
  std::string bytes(200 * 1024 + 7, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<char>((i * 2654435761U) >> 13);
  }
  atomic_write(dir / "from.pt", bytes);
  size_t largest = 0;
  std::string streamed;
  read_file_chunks(dir / "from.pt", "checkpoint", [&](const void* data, size_t size) {
    largest = std::max(largest, size);
    streamed.append(static_cast<const char*>(data), size);
  });
  EXPECT_EQ(streamed, bytes);
  EXPECT_LE(largest, size_t{64} << 10);
  atomic_write(dir / "to.pt", std::string("old"));
  atomic_copy(dir / "from.pt", dir / "to.pt", "checkpoint");
  EXPECT_EQ(read_file(dir / "to.pt"), bytes);
  EXPECT_THAT(
      test::user_error([&] { atomic_copy(dir / "gone.pt", dir / "to.pt", "checkpoint"); }),
      ::testing::HasSubstr("checkpoint not found: "));
  EXPECT_EQ(read_file(dir / "to.pt"), bytes);
  size_t files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir.path())) {
    ++files;
  }
  EXPECT_EQ(files, 2u); // no temporary left
}

TEST(ReadFile, NamesWhatIsMissing) {
  test::TempDir dir;
  try {
    read_file(dir / "nope.yaml", "config file");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("config file not found: "));
  }
  EXPECT_THROW(read_file(dir.path(), "config file"), UserError);
}

// A device would never end (xl-eval --file /dev/zero read forever); a pipe ends and is read.
TEST(ReadFile, RefusesDevicesAndReadsPipes) {
  EXPECT_THAT(
      test::user_error([] { read_file("/dev/zero", "text file"); }),
      ::testing::HasSubstr("text file is a device, expected a file: /dev/zero"));
  test::TempDir dir;
  const auto fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] { test::write_file(fifo, "through a pipe"); });
  EXPECT_EQ(read_file(fifo), "through a pipe");
  writer.join();
  // A writer that starts after the reader opened the pipe.
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    test::write_file(fifo, "late");
  });
  EXPECT_EQ(read_file(fifo), "late");
  late.join();
}

// A named pipe that nothing writes to blocked open() forever (xl-eval --file, xl-sample
// --prompt-file, xl-prep --train, xl-train -c); now it is refused after a wait (10 s by default), naming the fix.
TEST(ReadFile, RefusesANamedPipeWithoutAWriterWithoutWaiting) {
  test::TempDir dir;
  const auto fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THAT(
      test::user_error([&] { read_file(fifo, "prompt file", std::chrono::milliseconds(50)); }),
      ::testing::HasSubstr(
          "prompt file " + fifo.string() +
          " is a pipe that nothing wrote to in 0.05 s: start its writer first"));
  EXPECT_THAT(
      test::user_error([&] { read_file(dir.path(), "config file"); }),
      ::testing::HasSubstr("config file is a directory, expected a file: "));
}

// A text truncated while xl-eval read it was scored as far as it had been read, silently.
TEST(ReadFile, RefusesAFileCutWhileItIsReadAndReadsOneThatGrows) {
  test::TempDir dir;
  const auto path = dir / "text.txt";
  const std::string bytes(200 * 1024, 'a');
  test::write_file(path, bytes);
  EXPECT_THAT(
      test::user_error([&] {
        read_file_chunks(path, "text file", [&](const void* /*data*/, size_t /*size*/) {
          fs::resize_file(path, 10);
        });
      }),
      ::testing::HasSubstr(
          "text file " + path.string() +
          " was cut while it was read (204800 bytes when opened, 65536 read, 10 now)"));
  // Cut back after the whole was read: now shorter than what was read.
  test::write_file(path, "short");
  EXPECT_THAT(
      test::user_error([&] {
        read_file_chunks(path, "text file", [&](const void* /*data*/, size_t /*size*/) {
          fs::resize_file(path, 2);
        });
      }),
      ::testing::HasSubstr("(5 bytes when opened, 5 read, 2 now)"));
  test::write_file(path, bytes);
  std::string read;
  read_file_chunks(path, "text file", [&](const void* data, size_t size) {
    if (read.empty()) {
      std::ofstream(path, std::ios::app) << "grown";
    }
    read.append(static_cast<const char*>(data), size);
  });
  EXPECT_EQ(read, bytes + "grown");
}

// `xl-eval --file <(slow_command)` was refused after 10 s as "a pipe that nothing wrote to".
TEST(ReadFile, WaitsForAnUnnamedPipeHoweverSlowItsWriter) {
  std::array<int, 2> ends{};
  ASSERT_EQ(::pipe(ends.data()), 0);
  std::thread slow([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ASSERT_EQ(::write(ends[1], "slow", 4), 4);
    ::close(ends[1]);
  });
  EXPECT_EQ(
      read_file(
          "/proc/self/fd/" + std::to_string(ends[0]), "text file", std::chrono::milliseconds(50)),
      "slow");
  slow.join();
  ::close(ends[0]);
}

TEST(Fnv1a64, KnownVectors) {
  EXPECT_EQ(fnv1a64("", 0), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a64("a", 1), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(fnv1a64("foobar", 6), 0x85944171f73967e8ULL);
}

} // namespace
} // namespace xl
