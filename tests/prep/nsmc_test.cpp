// NSMC's tsv into a raw pretraining corpus and labelled files: sentences, unquoting, the
// held-out split and located errors.
#include "xl/prep/nsmc.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"
#include "xl/formats/labelled_file.h"
#include "xl/util/error.h"

namespace xl::prep {
namespace {

using test::TempDir;
using test::user_error;
using ::testing::HasSubstr;

TEST(ConvertNsmc, SplitsReviewsIntoSentencesAndUnquotes) {
  TempDir dir;
  test::write_file(
      dir / "r.txt",
      "id\tdocument\tlabel\n"
      "1\t좋다. 정말 좋다!  최고\t1\n"
      "2\t\t0\n"
      "3\t\"\"\"인용\"\" 별로.\"\t0\n");
  const auto counts = prep::convert_nsmc(dir / "r.txt", dir / "raw.txt", dir / "l.tsv");
  EXPECT_EQ(counts.documents, 2);
  EXPECT_EQ(counts.sentences, 4);
  EXPECT_EQ(counts.empty, 1);
  EXPECT_EQ(test::read_text(dir / "raw.txt"), "좋다.\n정말 좋다!\n최고\n\n\"인용\" 별로.\n\n");
  EXPECT_EQ(test::read_text(dir / "l.tsv"), "1\t좋다. 정말 좋다!  최고\n0\t\"인용\" 별로.\n");
  const auto examples = formats::read_labelled_texts(dir / "l.tsv");
  ASSERT_EQ(examples.size(), 2U);
  EXPECT_EQ(examples[1].label, 0);
  EXPECT_EQ(examples[1].text, "\"인용\" 별로.");
}

// --holdout: the last documents become the valid split, in both outputs, in file order.
TEST(ConvertNsmc, HoldsOutTheLastDocuments) {
  TempDir dir;
  test::write_file(
      dir / "r.txt",
      "id\tdocument\tlabel\n"
      "1\t하나. 둘\t1\n"
      "2\t\t0\n"
      "3\t셋\t0\n"
      "4\t넷! 다섯\t1\n");
  const auto counts = prep::convert_nsmc(
      dir / "r.txt", dir / "raw.txt", dir / "l.tsv", 2, dir / "held.txt", dir / "held.tsv");
  EXPECT_EQ(counts.documents, 3);
  EXPECT_EQ(test::read_text(dir / "raw.txt"), "하나.\n둘\n\n");
  EXPECT_EQ(test::read_text(dir / "l.tsv"), "1\t하나. 둘\n");
  EXPECT_EQ(test::read_text(dir / "held.txt"), "셋\n\n넷!\n다섯\n\n");
  EXPECT_EQ(test::read_text(dir / "held.tsv"), "0\t셋\n1\t넷! 다섯\n");
  EXPECT_THAT(
      user_error([&] {
        prep::convert_nsmc(
            dir / "r.txt",
            dir / "raw2.txt",
            dir / "l2.tsv",
            3,
            dir / "held2.txt",
            dir / "held2.tsv");
      }),
      HasSubstr("r.txt has 3 documents: cannot hold out 3"));
  EXPECT_FALSE(std::filesystem::exists(dir / "raw2.txt"));
}

TEST(ConvertNsmc, BadRowsNameTheFileAndLine) {
  TempDir dir;
  const auto convert = [&](const std::string& content) {
    test::write_file(dir / "r.txt", content);
    return user_error([&] { prep::convert_nsmc(dir / "r.txt", dir / "raw.txt", dir / "l.tsv"); });
  };
  EXPECT_THAT(
      convert("id\tdocument\tlabel\n1\tok\t1\n2\tbad\t2\n"),
      HasSubstr("r.txt:3: the label must be 0 or 1, found '2'"));
  EXPECT_THAT(
      convert("id\tdocument\tlabel\n1\tno label\n"),
      HasSubstr("r.txt:2: expected 3 tab-separated columns"));
  EXPECT_THAT(convert("id\tdocument\tlabel\n1\t \t1\n"), HasSubstr("NSMC file has no documents"));
  // Without the header the first review was dropped as it; another file's header was taken.
  EXPECT_THAT(
      convert("1\t좋다\t1\n2\t별로\t0\n"),
      HasSubstr("r.txt:1: expected NSMC's header 'id<TAB>document<TAB>label', found '1\t좋다\t1': "
                "a review; add the header line first"));
  EXPECT_THAT(
      convert("label\ttext\n1\t좋다\n"),
      HasSubstr(
          "r.txt:1: expected NSMC's header 'id<TAB>document<TAB>label', found 'label\ttext'"));
  // A review that is not UTF-8 was copied into train.tsv, which every other reader refuses.
  EXPECT_THAT(
      convert("id\tdocument\tlabel\n1\tok\t1\n2\tcaf\xe9\t0\n"),
      HasSubstr("r.txt:3: not valid UTF-8 (the byte 0xE9 at column 6)"));
  EXPECT_FALSE(std::filesystem::exists(dir / "raw.txt"));
  // A byte-order mark before the header is no part of it (the header "differed" invisibly).
  test::write_file(dir / "r.txt", "\xEF\xBB\xBFid\tdocument\tlabel\n1\tok\t1\n");
  EXPECT_NO_THROW(prep::convert_nsmc(dir / "r.txt", dir / "raw.txt", dir / "l.tsv"));
  EXPECT_TRUE(std::filesystem::exists(dir / "raw.txt"));
}

} // namespace
} // namespace xl::prep
