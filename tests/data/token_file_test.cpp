#include "xl/data/token_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "test_util.h"
#include "xl/data/corpus.h"
#include "xl/util/error.h"

namespace xl::data {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::write_file;
using ::testing::HasSubstr;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(TokenFile, RoundTripsIdsThroughTheMemoryMap) {
  TempDir dir;
  const auto f = write_file(dir / "t.txt", "a b c\nb c\nc\n");
  const Vocab vocab = Vocab::build_word({f});
  const auto ids = vocab.encode_file(f);
  write_token_file(dir / "t.bin", ids, vocab);
  const TokenFile tokens(dir / "t.bin", vocab, dir / "vocab.txt");
  ASSERT_EQ(tokens.size(), static_cast<int64_t>(ids.size()));
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(tokens.at(static_cast<int64_t>(i)), ids[i]);
  }
  const auto slice = tokens.slice(2, 4);
  EXPECT_EQ(slice.dtype(), torch::kInt64);
  EXPECT_TRUE(
      torch::equal(slice, torch::tensor({ids[2], ids[3], ids[4], ids[5]})));
}

TEST(TokenFile, UsesFourBytesForLargeVocabularies) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 70000; ++i) {
    text += "w" + std::to_string(i) + "\n";
  }
  const auto f = write_file(dir / "big.txt", text);
  const Vocab vocab = Vocab::build_word({f});
  ASSERT_GT(vocab.size(), 65536);
  const auto ids = vocab.encode_file(f);
  write_token_file(dir / "big.bin", ids, vocab);
  EXPECT_EQ(std::filesystem::file_size(dir / "big.bin"), 64 + 4 * ids.size());
  const TokenFile tokens(dir / "big.bin", vocab, dir / "vocab.txt");
  EXPECT_EQ(
      tokens.at(static_cast<int64_t>(ids.size()) - 2), ids[ids.size() - 2]);
  EXPECT_EQ(
      tokens.slice(static_cast<int64_t>(ids.size()) - 2, 2)[0].item<int64_t>(),
      ids[ids.size() - 2]);
}

TEST(TokenFile, RefusesAnotherVocabulary) {
  TempDir dir;
  const auto a = write_file(dir / "a.txt", "x y z\n");
  const auto b = write_file(dir / "b.txt", "x y q\n");
  const Vocab va = Vocab::build_word({a});
  const Vocab vb = Vocab::build_word({b});
  ASSERT_EQ(va.size(), vb.size());
  write_token_file(dir / "a.bin", va.encode_file(a), va);
  const std::string message =
      error_of([&] { TokenFile(dir / "a.bin", vb, dir / "vb.txt"); });
  EXPECT_THAT(message, HasSubstr("a.bin: encoded with a different vocabulary"));
  EXPECT_THAT(message, HasSubstr("vb.txt"));
}

TEST(TokenFile, RefusesTruncatedForeignAndMissingFiles) {
  TempDir dir;
  const auto a = write_file(dir / "a.txt", "x y z\n");
  const Vocab v = Vocab::build_word({a});
  write_token_file(dir / "a.bin", v.encode_file(a), v);
  std::filesystem::resize_file(
      dir / "a.bin", std::filesystem::file_size(dir / "a.bin") - 1);
  EXPECT_THAT(
      error_of([&] { TokenFile(dir / "a.bin", v, "v"); }),
      HasSubstr("truncated"));
  write_file(dir / "foreign.bin", std::string(100, 'x'));
  EXPECT_THAT(
      error_of([&] { TokenFile(dir / "foreign.bin", v, "v"); }),
      HasSubstr("not an xl token file (bad magic)"));
  write_file(dir / "tiny.bin", "x");
  EXPECT_THAT(
      error_of([&] { TokenFile(dir / "tiny.bin", v, "v"); }),
      HasSubstr("shorter than the 64-byte header"));
  EXPECT_THAT(
      error_of([&] { TokenFile(dir / "none.bin", v, "v"); }),
      HasSubstr("token file not found"));
}

// Overwrites `size` bytes of `path` at `offset` with `bytes`.
void patch(const fs::path& path, long offset, const void* bytes, size_t size) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekp(offset);
  file.write(
      static_cast<const char*>(bytes), static_cast<std::streamsize>(size));
}

TEST(TokenFile, RefusesCorruptDataAndIdsOutsideTheVocabulary) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 600000; ++i) { // more than one checksum block of 1 MiB
    text += "w" + std::to_string(i % 5000) + (i % 20 == 19 ? "\n" : " ");
  }
  const auto f = write_file(dir / "t.txt", text);
  const Vocab vocab = Vocab::build_word({f});
  write_token_file(dir / "t.bin", vocab.encode_file(f), vocab);
  ASSERT_GT(fs::file_size(dir / "t.bin"), 64U + (1U << 20));
  // One flipped byte in the second block.
  fs::copy_file(dir / "t.bin", dir / "flipped.bin");
  const unsigned char flip = 0x5a;
  patch(dir / "flipped.bin", 64 + (1 << 20) + 1001, &flip, 1);
  EXPECT_THAT(
      error_of([&] { TokenFile(dir / "flipped.bin", vocab, "v"); }),
      HasSubstr("flipped.bin: the token data does not match the checksum"));
  // Ids beyond a smaller vocabulary, with a header that names it and a matching checksum,
  // as a writer other than xl-prep could leave them.
  const auto small_text = write_file(dir / "small.txt", "w0 w1\n");
  const Vocab small = Vocab::build_word({small_text});
  const uint64_t checksum = small.checksum();
  const auto size = static_cast<uint64_t>(small.size());
  patch(dir / "t.bin", 24, &checksum, 8);
  patch(dir / "t.bin", 32, &size, 8);
  EXPECT_THAT(
      error_of([&] { TokenFile(dir / "t.bin", small, "small/vocab.txt"); }),
      HasSubstr(
          "is outside the vocabulary of " + std::to_string(small.size()) +
          " (small/vocab.txt)"));
}

// Found by the token-file fuzz target: a count of N + 2^63 two-byte tokens has the byte size
// of N tokens once the multiplication wraps, and was accepted as a file of a negative size.
TEST(TokenFile, RefusesACountWhoseSizeWrapsAround) {
  TempDir dir;
  const auto f = write_file(dir / "t.txt", "a b c\nb c\n");
  const Vocab vocab = Vocab::build_word({f});
  write_token_file(dir / "t.bin", vocab.encode_file(f), vocab);
  const uint64_t count = (uint64_t{1} << 63) + 7;
  patch(dir / "t.bin", 16, &count, 8);
  EXPECT_THAT(
      error_of([&] { TokenFile(dir / "t.bin", vocab, "v"); }),
      HasSubstr("truncated or corrupt"));
}

TEST(PrepareCorpus, WritesSplitsAndVocabularyThatOpenTogether) {
  TempDir dir;
  PrepOptions options;
  options.splits["train"] = write_file(dir / "train.txt", "a b\nb c\n");
  options.splits["valid"] = write_file(dir / "valid.txt", "c b a\n");
  options.out = dir / "out";
  const PrepReport report = prepare_corpus(options);
  EXPECT_EQ(report.vocab_size, 4);
  EXPECT_EQ(report.tokens.at("train"), 6);
  EXPECT_EQ(report.tokens.at("valid"), 4);
  config::DataConfig data;
  data.dir = options.out.string();
  Corpus corpus(data);
  EXPECT_EQ(corpus.split("valid").size(), 4);
  EXPECT_THAT(
      error_of([&] { corpus.split("test"); }),
      HasSubstr("token file not found"));
}

// --vocab-from all counts train, valid, test in that order (kimiyoung's and NVIDIA's), which
// decides ties: here every word is seen once.
TEST(PrepareCorpus, AllSplitsAreCountedInTheReferenceOrder) {
  TempDir dir;
  PrepOptions options;
  options.splits["train"] = write_file(dir / "train.txt", "x\n");
  options.splits["valid"] = write_file(dir / "valid.txt", "y\n");
  options.splits["test"] = write_file(dir / "test.txt", "z\n");
  options.out = dir / "out";
  options.vocab_from = "all";
  prepare_corpus(options);
  const Vocab vocab = Vocab::load(dir / "out/vocab.txt");
  ASSERT_EQ(vocab.size(), 4);
  EXPECT_EQ(vocab.token(1), "x");
  EXPECT_EQ(vocab.token(2), "y");
  EXPECT_EQ(vocab.token(3), "z");
}

TEST(PrepareCorpus, MinimumFrequencyAndMaximumSizeMapTheRestToUnk) {
  TempDir dir;
  PrepOptions options;
  options.splits["train"] = write_file(dir / "train.txt", "a a a b b c\n");
  options.splits["valid"] = write_file(dir / "valid.txt", "c d a\n");
  options.out = dir / "out";
  options.min_freq = 2;
  prepare_corpus(options);
  Vocab vocab = Vocab::load(dir / "out/vocab.txt");
  ASSERT_EQ(vocab.size(), 4); // <eos> <unk> a b
  EXPECT_EQ(vocab.token(1), "<unk>");
  EXPECT_EQ(
      vocab.encode_file(options.splits["valid"]),
      (std::vector<int64_t>{1, 1, 2, 0}));

  options.min_freq = 0;
  options.max_size = 3;
  prepare_corpus(options);
  vocab = Vocab::load(dir / "out/vocab.txt");
  ASSERT_EQ(vocab.size(), 3); // <eos> <unk> a
  EXPECT_EQ(vocab.token(2), "a");

  options.max_size = 1;
  EXPECT_THAT(
      error_of([&] { prepare_corpus(options); }),
      HasSubstr(
          "--max-size 1 leaves no room for the special tokens (<eos> <unk>)"));
  options.max_size.reset();
  options.kind = VocabKind::kByte;
  options.unk = true;
  EXPECT_THAT(
      error_of([&] { prepare_corpus(options); }),
      HasSubstr("for word vocabularies"));
}

// Without <unk>, an unseen validation word names the options that fix it.
TEST(PrepareCorpus, AnUnseenWordNamesTheOptionsThatFixIt) {
  TempDir dir;
  PrepOptions options;
  options.splits["train"] = write_file(dir / "train.txt", "a b\n");
  options.splits["valid"] = write_file(dir / "valid.txt", "a\nb q\n");
  options.out = dir / "out";
  const auto message = error_of([&] { prepare_corpus(options); });
  EXPECT_THAT(
      message, HasSubstr("valid.txt:2: token 'q' is not in the vocabulary"));
  EXPECT_THAT(message, HasSubstr("--vocab-from all"));
  EXPECT_THAT(message, HasSubstr("--unk"));
  options.unk = true;
  EXPECT_EQ(prepare_corpus(options).vocab_size, 4);
}

TEST(PrepareCorpus, BadSplitLeavesNoOutput) {
  TempDir dir;
  PrepOptions options;
  options.splits["train"] = write_file(dir / "train.txt", "a b\n");
  options.splits["valid"] = write_file(dir / "valid.txt", "");
  options.out = dir / "out";
  EXPECT_THAT(
      error_of([&] { prepare_corpus(options); }),
      HasSubstr("corpus file is empty"));
  EXPECT_FALSE(std::filesystem::exists(dir / "out" / "vocab.txt"));
  EXPECT_FALSE(std::filesystem::exists(dir / "out" / "train.bin"));
}

} // namespace
} // namespace xl::data
