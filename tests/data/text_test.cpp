#include "xl/data/text.h"

#include <gtest/gtest.h>

#include <string>

namespace xl::data {
namespace {

std::vector<std::string> strings(const std::vector<std::string_view>& views) {
  return {views.begin(), views.end()};
}

TEST(SplitLines, UniversalNewlines) {
  EXPECT_EQ(
      strings(split_lines("a\nb\r\nc\rd")),
      (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(
      strings(split_lines(" \n\n x \n")),
      (std::vector<std::string>{" ", "", " x "}));
  EXPECT_TRUE(split_lines("").empty());
}

TEST(SplitWords, MatchesPythonStrSplit) {
  // Python: " a\tb  c\u00a0d\u3000e\u2009f\u200bg ".split() ==
  // ['a','b','c','d','e','f\u200bg'] (U+200B ZERO WIDTH SPACE is not whitespace
  // for str.isspace).
  const std::string line =
      " a\tb  c\xc2\xa0"
      "d\xe3\x80\x80"
      "e\xe2\x80\x89"
      "f\xe2\x80\x8bg ";
  EXPECT_EQ(
      strings(split_words(line)),
      (std::vector<std::string>{"a", "b", "c", "d", "e", "f\xe2\x80\x8bg"}));
  EXPECT_TRUE(split_words("   \t ").empty());
  // Multi-byte characters that merely share a lead byte with whitespace stay
  // inside tokens.
  EXPECT_EQ(
      strings(split_words("\xc2\xa9x \xe2\x82\xac")),
      (std::vector<std::string>{"\xc2\xa9x", "\xe2\x82\xac"}));
}

TEST(SplitSentences, MatchesRatsgosRegex) {
  // Python: re.split(r"(?<=[.!?])\s+", " 좋다. 정말!  최고?\t끝 . 아니 ".strip())
  EXPECT_EQ(
      strings(split_sentences(" 좋다. 정말!  최고?\t끝 . 아니 ")),
      (std::vector<std::string>{"좋다.", "정말!", "최고?", "끝 .", "아니"}));
  EXPECT_EQ(
      strings(split_sentences("a...b c")),
      (std::vector<std::string>{"a...b c"}));
  EXPECT_TRUE(split_sentences(" \t ").empty());
}

} // namespace
} // namespace xl::data
