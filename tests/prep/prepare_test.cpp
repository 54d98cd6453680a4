// Preparing a word corpus: the splits and the vocabulary open together, the reference counting
// order, the <unk> options, and a bad split leaves nothing behind.
#include "xl/prep/prepare.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"
#include "xl/sources/corpus.h"
#include "xl/util/error.h"

namespace xl::prep {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::user_error;
using test::write_file;
using ::testing::HasSubstr;

TEST(PrepareCorpus, WritesSplitsAndVocabularyThatOpenTogether) {
  TempDir dir;
  prep::PrepOptions options;
  options.splits["train"] = write_file(dir / "train.txt", "a b\nb c\n");
  options.splits["valid"] = write_file(dir / "valid.txt", "c b a\n");
  options.out = dir / "out";
  const prep::PrepReport report = prep::prepare_corpus(options);
  EXPECT_EQ(report.vocab_size, 4);
  EXPECT_EQ(report.tokens.at("train"), 6);
  EXPECT_EQ(report.tokens.at("valid"), 4);
  config::DataConfig data;
  data.dir = options.out.string();
  const auto vocab = formats::Vocab::load(options.out / "vocab.txt");
  sources::Corpus corpus(data, vocab, options.out / "vocab.txt");
  EXPECT_EQ(corpus.split("valid").size(), 4);
  EXPECT_THAT(user_error([&] { corpus.split("test"); }), HasSubstr("token file not found"));
}

// --vocab-from all counts train, valid, test in that order (kimiyoung's and NVIDIA's), which
// decides ties: here every word is seen once.
TEST(PrepareCorpus, AllSplitsAreCountedInTheReferenceOrder) {
  TempDir dir;
  prep::PrepOptions options;
  options.splits["train"] = write_file(dir / "train.txt", "x\n");
  options.splits["valid"] = write_file(dir / "valid.txt", "y\n");
  options.splits["test"] = write_file(dir / "test.txt", "z\n");
  options.out = dir / "out";
  options.vocab_from = "all";
  prep::prepare_corpus(options);
  const formats::Vocab vocab = formats::Vocab::load(dir / "out/vocab.txt");
  ASSERT_EQ(vocab.size(), 4);
  EXPECT_EQ(vocab.token(1), "x");
  EXPECT_EQ(vocab.token(2), "y");
  EXPECT_EQ(vocab.token(3), "z");
}

TEST(PrepareCorpus, MinimumFrequencyAndMaximumSizeMapTheRestToUnk) {
  TempDir dir;
  prep::PrepOptions options;
  options.splits["train"] = write_file(dir / "train.txt", "a a a b b c\n");
  options.splits["valid"] = write_file(dir / "valid.txt", "c d a\n");
  options.out = dir / "out";
  options.min_freq = 2;
  prep::prepare_corpus(options);
  formats::Vocab vocab = formats::Vocab::load(dir / "out/vocab.txt");
  ASSERT_EQ(vocab.size(), 4); // <eos> <unk> a b
  EXPECT_EQ(vocab.token(1), "<unk>");
  EXPECT_EQ(vocab.encode_file(options.splits["valid"]), (std::vector<int64_t>{1, 1, 2, 0}));

  options.min_freq = 0;
  options.max_size = 3;
  prep::prepare_corpus(options);
  vocab = formats::Vocab::load(dir / "out/vocab.txt");
  ASSERT_EQ(vocab.size(), 3); // <eos> <unk> a
  EXPECT_EQ(vocab.token(2), "a");

  options.max_size = 1;
  EXPECT_THAT(
      user_error([&] { prep::prepare_corpus(options); }),
      HasSubstr("--max-size 1 leaves no room for the special tokens (<eos> <unk>)"));
  options.max_size.reset();
  options.kind = formats::VocabKind::kByte;
  options.unk = true;
  EXPECT_THAT(
      user_error([&] { prep::prepare_corpus(options); }), HasSubstr("for word vocabularies"));
}

// Without <unk>, an unseen validation word names the options that fix it.
TEST(PrepareCorpus, AnUnseenWordNamesTheOptionsThatFixIt) {
  TempDir dir;
  prep::PrepOptions options;
  options.splits["train"] = write_file(dir / "train.txt", "a b\n");
  options.splits["valid"] = write_file(dir / "valid.txt", "a\nb q\n");
  options.out = dir / "out";
  const auto message = user_error([&] { prep::prepare_corpus(options); });
  EXPECT_THAT(message, HasSubstr("valid.txt:2: token 'q' is not in the vocabulary"));
  EXPECT_THAT(message, HasSubstr("--vocab-from all"));
  EXPECT_THAT(message, HasSubstr("--unk"));
  options.unk = true;
  EXPECT_EQ(prep::prepare_corpus(options).vocab_size, 4);
}

TEST(PrepareCorpus, BadSplitLeavesNoOutput) {
  TempDir dir;
  prep::PrepOptions options;
  options.splits["train"] = write_file(dir / "train.txt", "a b\n");
  options.splits["valid"] = write_file(dir / "valid.txt", "");
  options.out = dir / "out";
  EXPECT_THAT(
      user_error([&] { prep::prepare_corpus(options); }), HasSubstr("corpus file is empty"));
  EXPECT_FALSE(std::filesystem::exists(dir / "out" / "vocab.txt"));
  EXPECT_FALSE(std::filesystem::exists(dir / "out" / "train.bin"));
}

} // namespace
} // namespace xl::prep
