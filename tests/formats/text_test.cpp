#include "xl/formats/text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "test_util.h"
#include "xl/util/utf8.h"

namespace xl::formats {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> strings(const std::vector<std::string_view>& views) {
  return {views.begin(), views.end()};
}

// UTF-8 as Python's bytes.decode("utf-8", errors="replace") counts it: every byte outside a
// well-formed sequence.
TEST(CheckUtf8, CountsEveryByteOutsideAWellFormedSequence) {
  EXPECT_EQ(check_utf8("한국어 text, € £").invalid, 0U);
  EXPECT_EQ(check_utf8("\xf0\x9f\x98\x80").invalid, 0U); // U+1F600
  const auto stray = check_utf8(
      "ab\xff"
      "cd");
  EXPECT_EQ(stray.invalid, 1U);
  EXPECT_EQ(stray.first, 2U);
  EXPECT_EQ(check_utf8("\xc0\xaf").invalid, 2U);         // overlong '/'
  EXPECT_EQ(check_utf8("\xe0\x80\xaf").invalid, 3U);     // overlong, three bytes
  EXPECT_EQ(check_utf8("\xed\xa0\x80").invalid, 3U);     // a surrogate
  EXPECT_EQ(check_utf8("\xf4\x90\x80\x80").invalid, 4U); // above U+10FFFF
  EXPECT_EQ(check_utf8("x\xe2\x82").invalid, 2U);        // cut short at the end
  EXPECT_EQ(check_utf8("\xef\xbf\xbd").invalid, 0U);     // U+FFFD itself
  EXPECT_EQ(utf8_at("\xef\xbf\xbd", 0).length, 3U);
  EXPECT_EQ(utf8_at("a\xff", 1).c, U'\xfffd');
  EXPECT_EQ(utf8_at("a\xff", 1).length, 1U);
  // Random code points encoded are valid, read back and written as encoded here; a byte
  // 0x80..0xBF alone after ASCII never is valid.
  std::mt19937 rng(3);
  for (int i = 0; i < 2000; ++i) {
    std::string text;
    std::u32string points;
    for (int k = 0; k < 20; ++k) {
      auto cp = static_cast<uint32_t>(rng() % 0x110000);
      if (cp >= 0xd800 && cp < 0xe000) {
        cp = 'a';
      }
      points += static_cast<char32_t>(cp);
      if (cp < 0x80) {
        text += static_cast<char>(cp);
      } else if (cp < 0x800) {
        text += static_cast<char>(0xc0 | (cp >> 6));
        text += static_cast<char>(0x80 | (cp & 0x3f));
      } else if (cp < 0x10000) {
        text += static_cast<char>(0xe0 | (cp >> 12));
        text += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
        text += static_cast<char>(0x80 | (cp & 0x3f));
      } else {
        text += static_cast<char>(0xf0 | (cp >> 18));
        text += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
        text += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
        text += static_cast<char>(0x80 | (cp & 0x3f));
      }
    }
    ASSERT_EQ(check_utf8(text).invalid, 0U) << i;
    std::string written;
    std::u32string read;
    for (size_t at = 0; at < text.size(); at += utf8_at(text, at).length) {
      read += utf8_at(text, at).c;
      append_utf8(written, read.back());
    }
    ASSERT_EQ(read, points) << i;
    ASSERT_EQ(written, text) << i;
    const auto stray_byte = static_cast<char>(0x80 + rng() % 0x40);
    ASSERT_EQ(check_utf8(text + "a" + stray_byte).invalid, 1U) << i;
  }
}

// Text that is not UTF-8 is refused by name; a few stray bytes are only counted.
TEST(ReadUtf8Text, RefusesBinaryAndOtherEncodingsAndCountsAFewStrayBytes) {
  test::TempDir dir;
  test::write_file(dir / "nul.txt", std::string("text\0more", 9));
  EXPECT_THAT(
      test::user_error([&] { read_utf8_text(dir / "nul.txt", "corpus file"); }),
      HasSubstr("corpus file " + (dir / "nul.txt").string() + " is not text: it holds a NUL"));
  test::write_file(dir / "latin1.txt", std::string(90, 'a') + std::string(10, '\xe9'));
  EXPECT_THAT(
      test::user_error([&] { read_utf8_text(dir / "latin1.txt", "corpus file"); }),
      HasSubstr("is not UTF-8 text: 10 of its 100 bytes are not UTF-8 (the first at byte 90)"));
  const std::string few = std::string(1000, 'a') + "\xff";
  test::write_file(dir / "few.txt", few);
  EXPECT_EQ(read_utf8_text(dir / "few.txt", "corpus file"), few);
}

// A byte-order mark some editors write first is no part of a text of words (it made the first
// word unknown); bytes keep it.
TEST(ReadUtf8Text, AByteOrderMarkIsNoPartOfTheText) {
  test::TempDir dir;
  test::write_file(dir / "bom.txt", "\xEF\xBB\xBFthe game\non\n");
  EXPECT_EQ(read_utf8_text(dir / "bom.txt", "corpus file"), "the game\non\n");
  for (const bool words : {true, false}) {
    std::string read;
    read_text_pieces(dir / "bom.txt", "text", words, [&](std::string_view piece, bool, size_t) {
      read.append(piece);
    });
    EXPECT_EQ(read, words ? "the game\non\n" : "\xEF\xBB\xBFthe game\non\n") << words;
  }
}

TEST(SplitLines, UniversalNewlines) {
  EXPECT_EQ(strings(split_lines("a\nb\r\nc\rd")), (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(strings(split_lines(" \n\n x \n")), (std::vector<std::string>{" ", "", " x "}));
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
  EXPECT_EQ(strings(split_sentences("a...b c")), (std::vector<std::string>{"a...b c"}));
  EXPECT_TRUE(split_sentences(" \t ").empty());
}

} // namespace
} // namespace xl::formats
