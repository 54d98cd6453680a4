// A user's text read in pieces and encoded into scratch space: the same ids as the text read
// whole, whatever the pieces; what the vocabulary lacks counted; texts that are no text refused.
#include "xl/formats/text_tokens.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "test_util.h"
#include "xl/formats/text.h"
#include "xl/util/scratch_file.h"

namespace xl::formats {
namespace {

using test::TempDir;
using test::user_error;
using test::write_file;
using ::testing::HasSubstr;

std::vector<int64_t> ids_of(const Tokens& tokens) {
  const auto t = tokens.slice(0, tokens.size());
  return {t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel()};
}

// A text of several pieces: long lines (cut within at blanks), CRLF and lone CR line ends that
// may fall on a piece's edge, and multi-byte characters on the edges of byte pieces.
std::string long_text() {
  std::mt19937 rng(5);
  const std::vector<std::string> words{"a", "bb", "한국어", "é", "x", "€€", "yy"};
  const std::vector<std::string> ends{" ", " ", " ", "\n", "\r\n", "\r", "\t"};
  std::string text;
  const auto words_up_to = [&](size_t size) {
    while (text.size() < size) {
      text += words[rng() % words.size()];
      text += ends[rng() % ends.size()];
    }
  };
  words_up_to(kTextPiece + kTextPiece / 2);
  for (size_t i = 0; i < kTextPiece; ++i) { // a line of more than a piece
    text += i % 2 == 0 ? "q" : " ";
  }
  words_up_to(3 * kTextPiece + 12345);
  return text + "end";
}

TEST(TextTokens, ReadInPiecesTheyEncodeAsTheWholeText) {
  TempDir dir;
  const std::string text = long_text();
  const auto file = write_file(dir / "t.txt", text);
  for (const auto kind : {VocabKind::kWord, VocabKind::kByte}) {
    SCOPED_TRACE(to_string(kind));
    const Vocab vocab =
        kind == VocabKind::kWord ? Vocab::build_word({file}) : Vocab::build_byte({file});
    const TextTokens tokens(file, Tokenizer(vocab, "v"), dir.path());
    EXPECT_EQ(ids_of(tokens), vocab.encode(text, "t.txt"));
    EXPECT_EQ(tokens.unknown().unknown, 0);
    EXPECT_EQ(tokens.name(), file.string());
  }
  // Nothing of the scratch space is left in the folder.
  int64_t entries = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    ++entries;
  }
  EXPECT_EQ(entries, 1);
}

// A text held in memory reads as the file holding it would, its ids in memory: no scratch
// space, so no folder to write is needed.
TEST(TextTokens, ATextInMemoryEncodesAsItsFileWithoutScratchSpace) {
  TempDir dir;
  const std::string text = long_text();
  const auto file = write_file(dir / "t.txt", text);
  for (const auto kind : {VocabKind::kWord, VocabKind::kByte}) {
    SCOPED_TRACE(to_string(kind));
    const Tokenizer tokenizer(
        kind == VocabKind::kWord ? Vocab::build_word({file}) : Vocab::build_byte({file}), "v");
    const TextTokens from_file(file, tokenizer, dir.path());
    const TextTokens in_memory(text, "the text", tokenizer);
    EXPECT_EQ(ids_of(in_memory), ids_of(from_file));
    EXPECT_EQ(in_memory.name(), "the text");
  }
  const Tokenizer tokenizer(Vocab::build_word({file}), "v");
  EXPECT_THAT(
      user_error([&] { TextTokens("", "the text", tokenizer); }),
      HasSubstr("text the text is empty"));
}

// Words a vocabulary lacks read as <unk> where it has one, else are left out; bytes are left
// out; either way counted, line ends not.
TEST(TextTokens, WhatTheVocabularyLacksIsCountedAndMappedOrLeftOut) {
  TempDir dir;
  const auto train = write_file(dir / "train.txt", "a b\n");
  const auto user = write_file(dir / "user.txt", "a z b\nzz\n");
  const Vocab with_unk = Vocab::build_word({train}, {"<eos>", "<unk>"});
  const TextTokens mapped(user, Tokenizer(with_unk, "v"), dir.path());
  const auto a = with_unk.index("a");
  const auto b = with_unk.index("b");
  EXPECT_EQ(ids_of(mapped), (std::vector<int64_t>{a, 1, b, 0, 1, 0}));
  EXPECT_EQ(mapped.unknown().units, 4);
  EXPECT_EQ(mapped.unknown().unknown, 2);
  EXPECT_TRUE(with_unk.has_unknown_token());
  const Vocab plain = Vocab::build_word({train});
  const TextTokens left_out(user, Tokenizer(plain, "v"), dir.path());
  EXPECT_EQ(ids_of(left_out), (std::vector<int64_t>{plain.index("a"), plain.index("b"), 0, 0}));
  EXPECT_EQ(left_out.unknown().units, 4);
  EXPECT_EQ(left_out.unknown().unknown, 2);
  EXPECT_FALSE(plain.has_unknown_token());
  const Vocab bytes = Vocab::build_byte({train});
  const TextTokens byte_tokens(user, Tokenizer(bytes, "v"), dir.path());
  EXPECT_EQ(byte_tokens.size(), 6); // all but the three z
  EXPECT_EQ(byte_tokens.unknown().units, 9);
  EXPECT_EQ(byte_tokens.unknown().unknown, 3);
  EXPECT_FALSE(bytes.has_unknown_token());
}

TEST(TextTokens, FilesThatAreNoTextAreRefusedInOneLine) {
  TempDir dir;
  const Tokenizer tokenizer(
      Vocab::build_word({write_file(dir / "v.txt", "a\n")}, {"<eos>", "<unk>"}), "v");
  const auto refused = [&](const std::string& name, const std::string& content) {
    return user_error([&] { TextTokens(write_file(dir / name, content), tokenizer, dir.path()); });
  };
  EXPECT_THAT(refused("empty.txt", ""), HasSubstr("empty.txt is empty"));
  // UTF-16 and UTF-32, with a byte-order mark or without: named, with the command that converts.
  EXPECT_THAT(
      refused(
          "utf16.txt",
          std::string(
              "\xff\xfe"
              "a\0b\0",
              6)),
      HasSubstr("utf16.txt is UTF-16 (little-endian) text, not UTF-8: convert it first (iconv "
                "-f UTF-16 -t UTF-8"));
  EXPECT_THAT(
      refused("utf16be.txt", std::string("\0t\0h\0e\0 \0g\0a\0m\0e\0\n", 18)),
      HasSubstr("UTF-16 (big-endian) text, not UTF-8: convert it first (iconv -f UTF-16BE"));
  EXPECT_THAT(
      refused("utf32.txt", std::string("\xff\xfe\0\0a\0\0\0", 8)),
      HasSubstr("UTF-32 (little-endian) text"));
  EXPECT_THAT(refused("nul.txt", std::string("the\0game\n", 9)), HasSubstr("NUL byte"));
  EXPECT_THAT(
      refused("latin1.txt", std::string(200, 'a') + "\xe9t\xe9 \xe0 la plage\n"),
      HasSubstr("is not UTF-8 text"));
  EXPECT_THAT(
      refused("word.txt", std::string(kLongestWord + kTextPiece, 'w')),
      HasSubstr("without a space or a line break from byte 0 on"));
  EXPECT_THAT(
      user_error([&] { TextTokens(dir.path(), tokenizer, dir.path()); }),
      HasSubstr("is a directory"));
  // Spaces and line ends alone hold no word to score; for a byte model they are characters.
  EXPECT_THAT(
      refused("spaces.txt", "  \t \n\r\n\n"),
      HasSubstr(
          "text file " + (dir / "spaces.txt").string() +
          " holds no word, only spaces and line ends: there is nothing to score"));
  EXPECT_THAT(
      user_error([&] { TextTokens("\n\n", "the prompt", tokenizer); }),
      HasSubstr("text the prompt holds no word"));
  EXPECT_EQ(TextTokens("x\n\n", "a word", tokenizer).size(), 3);
  const Tokenizer bytes(Vocab::build_byte_from({" \n"}), "b");
  EXPECT_EQ(TextTokens(" \n\n", "spaces", bytes).size(), 3);
}

TEST(ScratchFile, ReadsBackWhatWasWrittenAtAnyOffset) {
  TempDir dir;
  ScratchFile scratch(dir.path(), "a test");
  const std::string hello = "hello";
  scratch.append(hello.data(), hello.size());
  scratch.write_at(100, hello.data(), hello.size());
  EXPECT_EQ(scratch.size(), 105u);
  std::string back(5, '\0');
  scratch.read_at(100, back.data(), 5);
  EXPECT_EQ(back, "hello");
  scratch.read_at(0, back.data(), 5);
  EXPECT_EQ(back, "hello");
  char gap = 'x';
  scratch.read_at(50, &gap, 1);
  EXPECT_EQ(gap, '\0');
  EXPECT_THROW(scratch.read_at(101, back.data(), 5), std::logic_error);
  EXPECT_THAT(
      user_error([&] { ScratchFile(dir / "missing", "the text"); }),
      HasSubstr("cannot make scratch space for the text in"));
}

} // namespace
} // namespace xl::formats
