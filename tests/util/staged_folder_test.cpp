#include "xl/util/staged_folder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"
#include "xl/util/error.h"
#include "xl/util/files.h"

namespace xl {
namespace {

using ::testing::HasSubstr;

// The names in `dir`, sorted.
std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(StagedFolder, MakesANewFolderWholeOnCommitOnly) {
  test::TempDir dir;
  {
    StagedFolder staged(dir / "a" / "out", "test");
    atomic_write(staged.path() / "x.bin", std::string("new"));
    EXPECT_FALSE(fs::exists(dir / "a" / "out")); // nothing there before the commit
    staged.commit();
  }
  EXPECT_EQ(read_file(dir / "a" / "out" / "x.bin"), "new");
  EXPECT_EQ(names_in(dir / "a"), std::vector<std::string>{"out"});
}

// The files written anew replace the old ones; those the writer left alone stay as they were.
TEST(StagedFolder, ReplacesTheFilesItWritesAndKeepsTheOthers) {
  test::TempDir dir;
  const auto out = dir / "out";
  atomic_write(out / "test.bin", std::string("old test"));
  atomic_write(out / "notes" / "mine.txt", std::string("the user's"));
  atomic_write(out / "vocab.txt", std::string("old vocab"));
  StagedFolder staged(out, "test");
  atomic_write(staged.path() / "test.bin", std::string("new test"));
  atomic_write(staged.path() / "vocab.txt", std::string("new vocab"));
  staged.commit();
  EXPECT_EQ(read_file(out / "test.bin"), "new test");
  EXPECT_EQ(read_file(out / "vocab.txt"), "new vocab");
  EXPECT_EQ(read_file(out / "notes" / "mine.txt"), "the user's");
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"out"}); // no staging left
}

// A writer that fails (or is killed: its folder is removed by the next writer) before it commits
// leaves the old folder as it was.
TEST(StagedFolder, AWriterThatStopsBeforeItsCommitChangesNothing) {
  test::TempDir dir;
  const auto out = dir / "out";
  atomic_write(out / "test.bin", std::string("old"));
  {
    StagedFolder staged(out, "test");
    atomic_write(staged.path() / "test.bin", std::string("half"));
  }
  EXPECT_EQ(read_file(out / "test.bin"), "old");
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"out"});
  // What a killed writer left: an unlocked staging folder.
  atomic_write(dir / ".out.staged" / "test.bin", std::string("torn"));
  StagedFolder next(out, "test");
  EXPECT_FALSE(fs::exists(next.path() / "test.bin"));
  next.commit();
  EXPECT_EQ(read_file(out / "test.bin"), "old");
}

TEST(StagedFolder, ASecondWriterOfTheSameFolderIsRefused) {
  test::TempDir dir;
  StagedFolder first(dir / "out", "xl-prep --out");
  try {
    StagedFolder second(dir / "out/", "xl-prep --out");
    FAIL() << "a second writer was let in";
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("another process is writing it now"));
  }
  first.commit();
  StagedFolder third(dir / "out", "xl-prep --out"); // once the first is done
  third.commit();
}

// "." (xl-prep --out . in the data folder), "x/.." and a trailing slash name the folder itself:
// it is staged beside it, and what it held (the inputs, here) stays.
TEST(StagedFolder, TheCurrentFolderIsStagedBesideIt) {
  test::TempDir dir;
  atomic_write(dir / "out" / "src" / "train.txt", std::string("the text"));
  fs::create_directories(dir / "out" / "x");
  const auto was = fs::current_path();
  fs::current_path(dir / "out");
  {
    StagedFolder staged(".", "test");
    EXPECT_EQ(staged.path(), dir / ".out.staged");
    atomic_write(staged.path() / "train.bin", std::string("tokens"));
    staged.commit();
  }
  fs::current_path(was);
  EXPECT_EQ(read_file(dir / "out" / "train.bin"), "tokens");
  EXPECT_EQ(read_file(dir / "out" / "src" / "train.txt"), "the text");
  for (const auto& name : {dir / "out" / "x" / "..", fs::path((dir / "out").string() + "/")}) {
    StagedFolder staged(name, "test");
    EXPECT_EQ(staged.path(), dir / ".out.staged") << name;
  }
  EXPECT_THROW(StagedFolder("/", "test"), UserError);
}

// A link to a folder stays a link: the folder it leads to is what is replaced.
TEST(StagedFolder, ALinkToAFolderIsFollowed) {
  test::TempDir dir;
  atomic_write(dir / "real" / "a.txt", std::string("old"));
  fs::create_directory_symlink(dir / "real", dir / "link");
  StagedFolder staged(dir / "link", "test");
  atomic_write(staged.path() / "a.txt", std::string("new"));
  staged.commit();
  EXPECT_TRUE(fs::is_symlink(dir / "link"));
  EXPECT_EQ(read_file(dir / "real" / "a.txt"), "new");
}

} // namespace
} // namespace xl
