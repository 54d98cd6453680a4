// xl-prep as a user runs it: golden counts, the byte format, clear errors, a folder replaced
// whole.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <thread>

#include "e2e_util.h"
#include "test_util.h"

namespace xl::test {
namespace {

using ::testing::HasSubstr;

TEST(XlPrep, EncodesWikiText2WithGoldenCounts) {
  TempDir dir;
  const auto r = run_command(
      app("xl-prep") + " --train " + testdata("wikitext-2/wiki.train.tokens").string() +
          " --valid " + testdata("wikitext-2/wiki.valid.tokens").string() + " --test " +
          testdata("wikitext-2/wiki.test.tokens").string() + " --out wt2",
      dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("vocabulary: 33278 word tokens"));
  EXPECT_THAT(r.output, HasSubstr("train: 2088628 tokens"));
  EXPECT_THAT(r.output, HasSubstr("valid: 217646 tokens"));
  EXPECT_THAT(r.output, HasSubstr("test: 245569 tokens"));
  // 2-byte tokens after a 64-byte header.
  EXPECT_EQ(fs::file_size(dir / "wt2/train.bin"), 64u + 2u * 2088628u);
}

TEST(XlPrep, ByteFormatOnEnwik8Prefix) {
  TempDir dir;
  const auto r = run_command(
      app("xl-prep") + " --format byte --train " + testdata("enwik8/enwik8-prefix-1M").string() +
          " --out e8",
      dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("train: 1000000 tokens"));
  EXPECT_THAT(read_text(dir / "e8/vocab.txt"), ::testing::StartsWith("#xl-vocab v1 kind=byte"));
}

TEST(XlPrep, MissingAndEmptyInputsExitTwoWithAClearMessage) {
  TempDir dir;
  auto r = run_command(app("xl-prep") + " --train nope.txt --out o", dir.path());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.output, HasSubstr("error: corpus file not found: nope.txt"));
  write_file(dir / "empty.txt", "");
  r = run_command(app("xl-prep") + " --train empty.txt --out o", dir.path());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.output, HasSubstr("corpus file is empty: empty.txt"));
  r = run_command(app("xl-prep") + " --out o", dir.path());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.output, HasSubstr("xl-prep has nothing to read: give --train, --valid or --test"));
}

// XLNet's format is called pieces; the old name still works, with a notice, and the flags are
// checked against the format it names.
TEST(XlPrep, TheFormatsFormerNameIsTakenWithANotice) {
  TempDir dir;
  write_file(dir / "text.txt", "a b\n");
  const auto r = run_command(
      app("xl-prep") + " --format xlnet --train text.txt --holdout 5 --out o", dir.path());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--format xlnet is now called --format pieces"));
  EXPECT_THAT(
      r.output, HasSubstr("--holdout applies to --format nsmc only, not to --format pieces"));
  const auto help = run_command(app("xl-prep") + " --help", dir.path());
  EXPECT_THAT(help.output, HasSubstr("{word,byte,pieces,nsmc}"));
}

// A kill during xl-prep --force leaves the folder as it was: the new files are written into a
// staging folder beside it and swapped in whole. A second xl-prep into the same --out while the
// first runs is refused; a process substitution is read once.
TEST(XlPrep, AKilledReplacementLeavesTheOldFolderAndASecondWriterIsRefused) {
  TempDir dir;
  const std::string valid = testdata("wikitext-2/wiki.valid.tokens").string();
  const std::string prep = app("xl-prep") + " --test " + valid + " --out wt2";
  const auto first = run_command(
      "bash -c '" + app("xl-prep") + " --train <(cat " + valid + ") --test " + valid +
          " --out wt2'",
      dir.path());
  ASSERT_EQ(first.status, 0) << first.output;
  EXPECT_THAT(first.output, HasSubstr("train: 217646 tokens"));
  const auto vocab = read_text(dir / "wt2/vocab.txt");
  const auto test_bin = read_text(dir / "wt2/test.bin");
  // A replacement with another vocabulary, held open by its training text's pipe.
  const pid_t pid = spawn(
      "bash -c 'exec " + app("xl-prep") + " --train <(cat " + valid + "; sleep 20) --test " +
          valid + " --max-size 1000 --unk --force --out wt2'",
      dir.path());
  for (int i = 0; i < 6000 && !fs::exists(dir / ".wt2.staged"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const auto second = run_command(
      app("xl-prep") + " --train " + valid + " --test " + valid + " --force --out wt2", dir.path());
  ::kill(-pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_EQ(second.status, 2) << second.output;
  EXPECT_THAT(second.output, HasSubstr("xl-prep --out wt2: another process is writing it now"));
  EXPECT_EQ(read_text(dir / "wt2/vocab.txt"), vocab);
  EXPECT_EQ(read_text(dir / "wt2/test.bin"), test_bin);
  // The next xl-prep removes what the killed one left, and replaces the folder whole.
  const auto again = run_command(
      app("xl-prep") + " --train " + valid + " --test " + valid +
          " --max-size 1000 --unk --force --out wt2",
      dir.path());
  ASSERT_EQ(again.status, 0) << again.output;
  EXPECT_THAT(read_text(dir / "wt2/vocab.txt"), HasSubstr("<unk>"));
  EXPECT_NE(read_text(dir / "wt2/test.bin"), test_bin);
  EXPECT_FALSE(fs::exists(dir / ".wt2.staged"));
  EXPECT_EQ(run_command(prep, dir.path()).status, 2); // files there: --force to replace them
}

} // namespace
} // namespace xl::test
