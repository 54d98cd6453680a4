// WikiText's rules for raw text split every line as Hugging Face's TransfoXLTokenizer splits it
// (sacremoses' normalizer and tokenizer, the number splits): WikiText-2's test split turned back
// into raw text, the GPL, and a line of every rule's corner; and each word says which bytes of
// the line it stems from.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

#include "test_util.h"
#include "xl/formats/text.h"
#include "xl/formats/tokenization.h"
#include "xl/util/error.h"

namespace xl::formats {
namespace {

using test::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> words_of(std::string_view line) {
  std::vector<std::string> out;
  for (const auto& w : wikitext_words(line)) {
    out.push_back(w.word);
  }
  return out;
}

// Hugging Face's words of each line of `text` (written to `dir`/name).
std::vector<std::vector<std::string>> reference_words(
    const TempDir& dir,
    const std::string& name,
    const std::string& text) {
  test::write_file(dir / name, text);
  const auto r = test::run_command(
      std::string(test::kPython) + " " + test::kSourceDir +
          "/tests/formats/wikitext_reference.py tokenize " + name + " " + name + ".json",
      dir.path());
  EXPECT_EQ(r.status, 0) << r.output;
  std::vector<std::vector<std::string>> lines;
  std::istringstream in(test::read_text(dir / (name + ".json")));
  for (std::string line; std::getline(in, line);) {
    lines.push_back(nlohmann::json::parse(line).get<std::vector<std::string>>());
  }
  return lines;
}

// Every line of `text` split as Hugging Face splits it; the first differences shown.
void expect_hugging_faces_words(const std::string& name, const std::string& text, size_t least) {
  TempDir dir;
  const auto theirs = reference_words(dir, name, text);
  std::vector<std::string_view> lines;
  std::string_view rest(text);
  for (size_t at; (at = rest.find('\n')) != std::string_view::npos; rest.remove_prefix(at + 1)) {
    lines.push_back(rest.substr(0, at));
  }
  ASSERT_EQ(lines.size(), theirs.size());
  int shown = 0;
  size_t words = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    const auto ours = words_of(lines[i]);
    words += ours.size();
    if (ours != theirs[i] && shown++ < 5) {
      ADD_FAILURE() << name << " line " << i + 1 << ": " << lines[i]
                    << "\n  xl: " << nlohmann::json(ours).dump()
                    << "\n  HF: " << nlohmann::json(theirs[i]).dump();
    }
  }
  EXPECT_EQ(shown, 0) << name << ": lines split otherwise than Hugging Face splits them";
  EXPECT_GE(words, least) << name; // the file was read whole
}

TEST(WikiTextRules, SplitRawTextAsHuggingFacesTransfoXLTokenizer) {
  TempDir dir;
  test::write_file(
      dir / "test.tokens", test::read_text(test::testdata("wikitext-2/wiki.test.tokens")));
  const auto r = test::run_command(
      std::string(test::kPython) + " " + test::kSourceDir +
          "/tests/formats/wikitext_reference.py detokenize test.tokens raw.txt",
      dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  expect_hugging_faces_words("wikitext-2-test-raw.txt", test::read_text(dir / "raw.txt"), 200000);
  expect_hugging_faces_words("GPL-3", test::read_text("/usr/share/common-licenses/GPL-3"), 6000);
  // Each rule's corners: quotes and dashes normalized, no-break spaces, ellipses and dot runs,
  // abbreviations and non-breaking prefixes, contractions, numbers, protected specials, control
  // characters, other scripts.
  const std::string corners =
      "It's 1,000.5 km\xe2\x80\x94"
      "e.g. (north-east) <UNK>'s Mr. Smith... and \xe2\x80\x9cso\xe2\x80\x9d on.\n"
      "\xc2\xab Bonjour \xc2\xbb,\xc2\xa0"
      "dit-il \xe2\x80\xa6 l\xe2\x80\x99homme 5\xc2\xa0"
      "000 "
      "n\xc2\xba\xc2\xa0"
      "5 20\xc2\xa0%\n"
      "  A,B,C,D 5,300 3,a b,4 x, ``quoted'' `single' 'tis rock'n'roll 1990's ... .... a..b\n"
      "No. 5 No. five Art. 3 pp. 12 U.S.A. i.e. vs. Jan. wait. Then. end.'\n"
      "x<unk>y <eos> tab\there\x01"
      "ctl \xed\x95\x9c\xea\xb8\x80 caf\xc3\xa9-bar 3\xe2\x80\x93"
      "4 "
      "$5 \xe2\x82\xac"
      "5 50% 1/2 and/or a--b a - b @ # & * + = | ~ ^\n"
      "\n"
      "  \n"
      "(  spaced ( out ) ) : ; ! ? \"quoted\", \"end.\" \xc2\xb4\xc2\xb4x\xc2\xb4\xc2\xb4 "
      "it\xe2\x80\x98s \xe2\x80\x9a\n";
  expect_hugging_faces_words("corners.txt", corners + std::string(1000, 'a') + " b\n", 150);
}

TEST(WikiTextRules, EachWordKnowsTheBytesItStemsFrom) {
  const std::string line =
      "It's 1,000 km\xe2\x80\x94north-east\xe2\x80\xa6 \xe2\x80\x9cso\xe2\x80\x9d";
  const auto words = wikitext_words(line);
  std::vector<std::string> seen;
  for (const auto& w : words) {
    seen.push_back(w.word + "=" + line.substr(w.offset, w.length));
  }
  EXPECT_THAT(
      seen,
      ElementsAre(
          "It=It",
          "'s='s",
          "1=1",
          "@,@=,",
          "000=000",
          "km=km",
          "-=\xe2\x80\x94",
          "north=north",
          "@-@=-",
          "east=east",
          "...=\xe2\x80\xa6",
          "\"=\xe2\x80\x9c",
          "so=so",
          "\"=\xe2\x80\x9d"));
  EXPECT_EQ(words.at(2).offset, 5U);
}

TEST(WikiTextRules, WikiTextsOwnTokensTellATextTokenizedAlready) {
  EXPECT_TRUE(reads_as_wikitext("a well @-@ known 1 @,@ 000"));
  EXPECT_TRUE(reads_as_wikitext("pi is 3 @.@ 14 ."));
  EXPECT_FALSE(reads_as_wikitext("a well-known 1,000 and an e-mail@x.org"));
  EXPECT_EQ(tokenization_named("wikitext", "x"), Tokenization::kWikiText);
  EXPECT_EQ(tokenization_named("none", "x"), Tokenization::kNone);
  EXPECT_THAT(
      test::user_error([] { tokenization_named("moses", "vocab.txt:1"); }),
      HasSubstr("vocab.txt:1: tokenization 'moses': expected wikitext"));
}

} // namespace
} // namespace xl::formats
