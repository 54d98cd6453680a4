// xl-prep as a user runs it: golden counts, the byte format, clear errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

} // namespace
} // namespace xl::test
