// Vocabulary building, with golden numbers on the bundled WikiText-2.
#include "xl/formats/vocab.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"
#include "xl/util/error.h"

namespace xl::formats {
namespace {

using test::TempDir;
using test::write_file;
using ::testing::HasSubstr;

// Published by the WikiText authors and printed by kimiyoung/transformer-xl for
// wt2.
TEST(WordVocabGolden, WikiText2SizeTokenCountAndOrder) {
  const auto train = test::testdata("wikitext-2/wiki.train.tokens");
  const Vocab vocab = Vocab::build_word({train});
  EXPECT_EQ(vocab.size(), 33278);
  // Specials first, then Counter.most_common order (ties by first occurrence);
  // these ids are what the Python reference assigns.
  EXPECT_EQ(vocab.token(0), "<eos>");
  EXPECT_EQ(vocab.token(1), "the");
  EXPECT_EQ(vocab.token(2), ",");
  EXPECT_EQ(vocab.token(3), ".");
  EXPECT_EQ(vocab.token(4), "of");
  EXPECT_EQ(vocab.token(5), "<unk>");
  EXPECT_EQ(vocab.token(33277), "gallinae");
  EXPECT_EQ(vocab.token(33276), "Nests");
  const auto ids = vocab.encode_file(train);
  EXPECT_EQ(ids.size(), 2088628u);
  EXPECT_EQ(vocab.encode_file(test::testdata("wikitext-2/wiki.valid.tokens")).size(), 217646u);
  EXPECT_EQ(vocab.encode_file(test::testdata("wikitext-2/wiki.test.tokens")).size(), 245569u);
}

TEST(WordVocab, CountsEosPerLineAndBreaksTiesByFirstOccurrence) {
  TempDir dir;
  const auto f = write_file(dir / "t.txt", " b a \n\n c a b\n");
  const Vocab vocab = Vocab::build_word({f});
  // counts: <eos> 3, b 2, a 2, c 1 -> b before a (b seen first)
  ASSERT_EQ(vocab.size(), 4);
  EXPECT_EQ(vocab.token(0), "<eos>");
  EXPECT_EQ(vocab.token(1), "b");
  EXPECT_EQ(vocab.token(2), "a");
  EXPECT_EQ(vocab.token(3), "c");
  EXPECT_EQ(vocab.encode_file(f), (std::vector<int64_t>{1, 2, 0, 0, 3, 2, 1, 0}));
}

TEST(WordVocab, UnknownWordsUseUnkOrFailWithLocation) {
  TempDir dir;
  const auto train = write_file(dir / "train.txt", "x y\n");
  const auto other = write_file(dir / "other.txt", "x\nx z\n");
  const Vocab plain = Vocab::build_word({train});
  try {
    plain.encode_file(other);
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("other.txt:2: token 'z' is not in the vocabulary"));
    EXPECT_THAT(e.what(), HasSubstr("--vocab-from all counts every split"));
  }
  // A prompt cannot change the trained vocabulary: the hint is to leave the word out.
  EXPECT_THAT(
      test::user_error([&] { plain.encode("x z", "--prompt", /*open_end=*/true); }),
      HasSubstr("--prompt:1: token 'z' is not in the vocabulary, which has no <unk> to map it to "
                "(the model never saw it in training: leave it out of the prompt)"));
  const Vocab with_unk = Vocab::build_word({train}, {"<eos>", "<unk>"});
  EXPECT_EQ(with_unk.encode_file(other), (std::vector<int64_t>{2, 0, 2, 1, 0}));
}

// Prompts: an unfinished last line is continued (no <eos>); decoding puts the words back on
// their lines, a space first when the text continues a word.
TEST(WordVocab, PromptsEncodeOpenEndedAndIdsDecodeToLines) {
  TempDir dir;
  const Vocab vocab = Vocab::build_word({write_file(dir / "t.txt", "a b\nb c\n")});
  const auto a = vocab.index("a");
  const auto b = vocab.index("b");
  const auto c = vocab.index("c");
  const auto eos = vocab.index("<eos>");
  EXPECT_EQ(vocab.encode("a b", "--prompt", true), (std::vector<int64_t>{a, b}));
  EXPECT_EQ(vocab.encode("a b\nc", "--prompt", true), (std::vector<int64_t>{a, b, eos, c}));
  EXPECT_EQ(vocab.encode("a b\n", "--prompt", true), (std::vector<int64_t>{a, b, eos}));
  EXPECT_EQ(vocab.encode("a b", "f"), (std::vector<int64_t>{a, b, eos}));
  EXPECT_EQ(vocab.decode({a, b, eos, c, eos}), "a b\nc\n");
  EXPECT_EQ(vocab.decode({c}, true), " c");
  EXPECT_EQ(vocab.decode({eos, c}, true), "\nc");
  try {
    vocab.encode("a zz", "--prompt", true);
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("--prompt:1: token 'zz'"));
  }
  const auto f = write_file(dir / "t.bin", "ab\n");
  const Vocab bytes = Vocab::build_byte({f});
  EXPECT_EQ(bytes.decode(bytes.encode("ba\n", "x", true), true), "ba\n");
}

TEST(ByteVocab, OrdersBytesByFrequency) {
  TempDir dir;
  const auto f = write_file(dir / "t.bin", std::string("abcab\n\xff", 7));
  const Vocab vocab = Vocab::build_byte({f});
  ASSERT_EQ(vocab.size(), 5);
  EXPECT_EQ(vocab.token(0), "a");
  EXPECT_EQ(vocab.token(1), "b");
  EXPECT_EQ(vocab.token(2), "\n"); // ties by byte value: '\n' (10) < 'c' (99) < 0xff
  EXPECT_EQ(vocab.token(3), "c");
  EXPECT_EQ(vocab.token(4), "\xff");
  EXPECT_EQ(vocab.encode_file(f), (std::vector<int64_t>{0, 1, 3, 0, 1, 2, 4}));
}

TEST(ByteVocab, Enwik8PrefixHasNoEosAndOneTokenPerByte) {
  const auto f = test::testdata("enwik8/enwik8-prefix-1M");
  const Vocab vocab = Vocab::build_byte({f});
  EXPECT_EQ(vocab.kind(), VocabKind::kByte);
  EXPECT_LE(vocab.size(), 256);
  EXPECT_EQ(vocab.encode_file(f).size(), 1000000u);
}

TEST(Vocab, SaveLoadRoundTripKeepsChecksum) {
  TempDir dir;
  const auto f = write_file(dir / "t.txt", "héllo wörld\nfoo\n");
  for (const Vocab& vocab : {Vocab::build_word({f}), Vocab::build_byte({f})}) {
    vocab.save(dir / "vocab.txt");
    const Vocab loaded = Vocab::load(dir / "vocab.txt");
    EXPECT_EQ(loaded.kind(), vocab.kind());
    EXPECT_EQ(loaded.size(), vocab.size());
    EXPECT_EQ(loaded.checksum(), vocab.checksum());
    for (int64_t i = 0; i < vocab.size(); ++i) {
      EXPECT_EQ(loaded.token(i), vocab.token(i));
    }
  }
  EXPECT_NE(Vocab::build_word({f}).checksum(), Vocab::build_byte({f}).checksum());
}

TEST(Vocab, RefusesEmptyMissingAndMalformedFiles) {
  TempDir dir;
  const auto empty = write_file(dir / "empty.txt", "");
  EXPECT_THROW(
      {
        try {
          Vocab::build_word({empty});
        } catch (const UserError& e) {
          EXPECT_THAT(e.what(), HasSubstr("corpus file is empty"));
          throw;
        }
      },
      UserError);
  EXPECT_THROW(Vocab::build_word({dir / "missing.txt"}), UserError);
  write_file(dir / "bad.txt", "#xl-vocab v1 kind=word size=3\na\nb\n");
  try {
    Vocab::load(dir / "bad.txt");
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("header says 3 tokens, file has 2"));
  }
  write_file(dir / "abc.txt", "#xl-vocab v1 kind=word size=abc\na\nb\n");
  try {
    Vocab::load(dir / "abc.txt");
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("expected size=N (a count) in the header, found 'abc'"));
  }
  write_file(dir / "foreign.txt", "the\nof\n");
  EXPECT_THROW(Vocab::load(dir / "foreign.txt"), UserError);
}

} // namespace
} // namespace xl::formats
