#include "xl/formats/token_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "test_util.h"
#include "xl/util/error.h"

namespace xl::formats {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::user_error;
using test::write_file;
using ::testing::HasSubstr;

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
  EXPECT_TRUE(torch::equal(slice, torch::tensor({ids[2], ids[3], ids[4], ids[5]})));
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
  EXPECT_EQ(tokens.at(static_cast<int64_t>(ids.size()) - 2), ids[ids.size() - 2]);
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
  const std::string message = user_error([&] { TokenFile(dir / "a.bin", vb, dir / "vb.txt"); });
  EXPECT_THAT(message, HasSubstr("a.bin: encoded with a different vocabulary"));
  EXPECT_THAT(message, HasSubstr("vb.txt"));
}

TEST(TokenFile, RefusesTruncatedForeignAndMissingFiles) {
  TempDir dir;
  const auto a = write_file(dir / "a.txt", "x y z\n");
  const Vocab v = Vocab::build_word({a});
  write_token_file(dir / "a.bin", v.encode_file(a), v);
  std::filesystem::resize_file(dir / "a.bin", std::filesystem::file_size(dir / "a.bin") - 1);
  EXPECT_THAT(user_error([&] { TokenFile(dir / "a.bin", v, "v"); }), HasSubstr("truncated"));
  write_file(dir / "foreign.bin", std::string(100, 'x'));
  EXPECT_THAT(
      user_error([&] { TokenFile(dir / "foreign.bin", v, "v"); }),
      HasSubstr("not an xl token file (bad magic)"));
  write_file(dir / "tiny.bin", "x");
  EXPECT_THAT(
      user_error([&] { TokenFile(dir / "tiny.bin", v, "v"); }),
      HasSubstr("shorter than the 64-byte header"));
  EXPECT_THAT(
      user_error([&] { TokenFile(dir / "none.bin", v, "v"); }), HasSubstr("token file not found"));
}

// Overwrites `size` bytes of `path` at `offset` with `bytes`.
void patch(const fs::path& path, long offset, const void* bytes, size_t size) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekp(offset);
  file.write(static_cast<const char*>(bytes), static_cast<std::streamsize>(size));
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
      user_error([&] { TokenFile(dir / "flipped.bin", vocab, "v"); }),
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
      user_error([&] { TokenFile(dir / "t.bin", small, "small/vocab.txt"); }),
      HasSubstr(
          "is outside the vocabulary of " + std::to_string(small.size()) + " (small/vocab.txt)"));
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
      user_error([&] { TokenFile(dir / "t.bin", vocab, "v"); }), HasSubstr("truncated or corrupt"));
}
} // namespace
} // namespace xl::formats
