// The formats of xl-prep as data: every flag described for formats that exist, its rules naming
// flags that exist, the former name resolved, and a value read back as the format reads it.
#include "xl/prep/prep_formats.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "test_util.h"

namespace xl::prep {
namespace {

using test::user_error;
using ::testing::HasSubstr;

TEST(PrepFormats, EveryFlagIsForFormatsThatExistAndItsRulesNameFlagsThatExist) {
  std::set<std::string> formats;
  for (const auto& format : prep_formats()) {
    formats.insert(format.name);
  }
  std::set<std::string> flags{"--train", "--valid", "--test"}; // the command line's own
  for (const auto& flag : prep_flags()) {
    EXPECT_TRUE(flags.insert(flag.name).second) << flag.name << " is described twice";
  }
  for (const auto& flag : prep_flags()) {
    SCOPED_TRACE(flag.name);
    EXPECT_FALSE(flag.formats.empty());
    for (const auto& format : flag.formats) {
      EXPECT_EQ(formats.count(format), 1u) << format;
      EXPECT_TRUE(prep_format(format).takes(flag));
    }
    for (const auto& rule : flag.rules) {
      EXPECT_EQ(flags.count(rule.flag), 1u) << rule.flag;
      EXPECT_FALSE(rule.why.empty());
    }
    EXPECT_EQ(flag.choices.empty(), flag.value != PrepFlag::Value::kText);
  }
}

TEST(PrepFormats, AFormerNameNamesTheFormatAndAnUnknownOneListsThem) {
  EXPECT_EQ(prep_format("xlnet").name, "pieces");
  EXPECT_EQ(prep_format("pieces").name, "pieces");
  EXPECT_THAT(
      user_error([] { prep_format("bpe"); }),
      HasSubstr("--format bpe: no such format (one of word, byte, pieces, nsmc)"));
}

TEST(PrepFormats, ValuesAreReadAsTheFormatReadsThemOrRefusedByName) {
  PrepRequest request;
  request.values = {{"--min-freq", "3"}, {"--character-coverage", "0.5"}, {"--max-size", "3x"}};
  EXPECT_EQ(request.count("--min-freq", 0), 3);
  EXPECT_EQ(request.count("--holdout", 7), 7);
  EXPECT_DOUBLE_EQ(request.number("--character-coverage", 1.0), 0.5);
  EXPECT_TRUE(request.on("--min-freq"));
  EXPECT_FALSE(request.on("--unk"));
  EXPECT_EQ(request.text("--vocab", "none"), "none");
  EXPECT_THAT(
      user_error([&] { request.count("--max-size", 0); }),
      HasSubstr("--max-size 3x: expected an integer"));
}

// A model reused from the folder being written is rewritten unchanged, not listed as a file the
// format would replace.
TEST(PrepFormats, AVocabularyReusedFromTheFolderIsNotAnOutput) {
  test::TempDir dir;
  test::write_file(dir / "out/vocab.txt", "");
  PrepRequest request;
  request.format = "word";
  request.out = (dir / "out").string();
  const PrepSplits splits{{"test", dir / "t.txt"}};
  const auto& word = prep_format("word");
  EXPECT_EQ(word.outputs(request, splits), (std::vector<std::string>{"test.bin", "vocab.txt"}));
  request.values["--vocab"] = (dir / "out/vocab.txt").string();
  EXPECT_EQ(word.outputs(request, splits), std::vector<std::string>{"test.bin"});
  const auto& pieces = prep_format("pieces");
  EXPECT_EQ(
      pieces.outputs(request, splits), (std::vector<std::string>{"test.pieces", "spiece.model"}));
}

} // namespace
} // namespace xl::prep
