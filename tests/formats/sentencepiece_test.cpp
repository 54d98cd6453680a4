// XLNet's SentencePiece: a model trained here has the special pieces at XLNet's ids, training is
// deterministic, Python's sentencepiece encodes exactly as we do, and encoded corpora keep
// sentence boundaries and refuse another model, corrupt bytes and ids outside the vocabulary.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sentencepiece_trainer.h>

#include <cstring>
#include <sstream>

#include "test_util.h"
#include "xl/formats/sentence_tokens.h"
#include "xl/formats/sentencepiece.h"
#include "xl/formats/text.h"
#include "xl/prep/sentencepiece_training.h"
#include "xl/util/error.h"
#include "xl/util/files.h"
#include "xl/util/hash.h"

namespace xl::formats {
namespace {

using test::nsmc_documents;
using test::TempDir;
using ::testing::HasSubstr;

class SentencePieceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    test::write_file(*dir_ / "train.txt", nsmc_documents(0, 3000));
    prep::train_sentencepiece({*dir_ / "train.txt"}, *dir_ / "m.model", options());
  }
  static void TearDownTestSuite() {
    delete dir_;
  }
  static prep::SentencePieceOptions options() {
    prep::SentencePieceOptions o;
    o.vocab_size = 2000;
    o.character_coverage = 0.995;
    return o;
  }
  static TempDir* dir_;
};
TempDir* SentencePieceTest::dir_ = nullptr;

TEST_F(SentencePieceTest, SpecialPiecesHaveXLNetsIds) {
  const SentencePiece sp(*dir_ / "m.model");
  EXPECT_EQ(sp.size(), 2000);
  const std::vector<std::string> specials = {
      "<unk>", "<s>", "</s>", "<cls>", "<sep>", "<pad>", "<mask>", "<eod>", "<eop>"};
  for (size_t id = 0; id < specials.size(); ++id) {
    EXPECT_EQ(sp.piece(static_cast<int64_t>(id)), specials[id]);
    EXPECT_TRUE(sp.word_starts()[id]);
  }
  EXPECT_EQ(sp.piece(9), ".");
  for (int64_t id = 9; id < sp.size(); ++id) {
    const auto& piece = sp.piece(id);
    const bool marked = piece.rfind("\xe2\x96\x81", 0) == 0;
    const bool punct = piece.size() == 1 && std::ispunct(piece[0]) != 0 && piece != "'" &&
        piece != "=" && piece != ">";
    EXPECT_EQ(sp.word_starts()[static_cast<size_t>(id)], marked || punct || piece[0] == '<')
        << piece;
  }
}

TEST_F(SentencePieceTest, TrainingIsDeterministic) {
  TempDir dir;
  prep::train_sentencepiece({*dir_ / "train.txt"}, dir / "again.model", options());
  EXPECT_EQ(test::read_text(dir / "again.model"), test::read_text(*dir_ / "m.model"));
}

TEST_F(SentencePieceTest, PythonSentencePieceEncodesTheSame) {
  TempDir dir;
  // Unseen reviews, and digits before commas (re-split by encode_pieces).
  const std::string lines =
      nsmc_documents(3000, 300) + "1990년, 2000, 3,000원 ``좋다'' 1,\n  여러   칸\t공백  \n";
  test::write_file(dir / "lines.txt", lines);
  const SentencePiece sp(*dir_ / "m.model");
  std::string ours;
  for (const auto line : split_lines(lines)) {
    std::string row;
    for (const int64_t id : sp.encode(line)) {
      row += (row.empty() ? "" : " ") + std::to_string(id);
    }
    ours += row + "\n";
  }
  const auto r = test::run_command(
      std::string(test::kPython) + " " + test::kSourceDir +
          "/tests/formats/sentencepiece_reference.py " + (*dir_ / "m.model").string() +
          " lines.txt ids.txt",
      dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(test::read_text(dir / "ids.txt"), ours);
}

TEST_F(SentencePieceTest, AModelWithoutXLNetsPiecesIsRefused) {
  TempDir dir;
  std::string proto;
  // A plain model: ids 3.. are ordinary pieces.
  ASSERT_TRUE(sentencepiece::SentencePieceTrainer::Train(
                  "--input=" + (*dir_ / "train.txt").string() +
                  " --model_prefix=" + (dir / "plain").string() +
                  " --vocab_size=1500 --character_coverage=0.995 --minloglevel=2")
                  .ok());
  try {
    SentencePiece sp(dir / "plain.model");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr((dir / "plain.model").string()));
    EXPECT_THAT(e.what(), HasSubstr("<cls> must have id 3"));
  }
  test::write_file(dir / "junk.model", "not a model");
  EXPECT_THROW(SentencePiece(dir / "junk.model"), UserError);
}

TEST(SentencePiece, TextIsNormalisedLikePreprocessText) {
  EXPECT_EQ(normalize_text("  a\t b \u3000 ``c'' "), "a b \"c\"");
  EXPECT_EQ(normalize_text("Ünïcode Case"), "Ünïcode Case");
}

TEST_F(SentencePieceTest, RawTextKeepsSentencesAndDocuments) {
  TempDir dir;
  const SentencePiece sp(*dir_ / "m.model");
  test::write_file(dir / "raw.txt", "영화 좋다.\n최고\n\n별로다\n");
  const auto tokens = encode_raw_text(dir / "raw.txt", sp);
  const auto first = sp.encode("영화 좋다.");
  const auto second = sp.encode("최고");
  const auto third = sp.encode("별로다");
  std::vector<int64_t> ids = first;
  ids.insert(ids.end(), second.begin(), second.end());
  ids.push_back(kEodId);
  ids.insert(ids.end(), third.begin(), third.end());
  EXPECT_EQ(tokens.ids, ids);
  std::vector<uint8_t> sent(first.size(), 1);
  sent.insert(sent.end(), second.size() + 1,
              0); // <eod> glued to the sentence before it
  sent.insert(sent.end(), third.size(), 1);
  EXPECT_EQ(tokens.sent_ids, sent);

  write_sentence_tokens(dir / "raw.pieces", tokens, sp);
  const auto back = read_sentence_tokens(dir / "raw.pieces", sp);
  EXPECT_EQ(back.ids, tokens.ids);
  EXPECT_EQ(back.sent_ids, tokens.sent_ids);

  auto o = options();
  o.vocab_size = 1800;
  prep::train_sentencepiece({*dir_ / "train.txt"}, dir / "other.model", o);
  const SentencePiece other(dir / "other.model");
  try {
    read_sentence_tokens(dir / "raw.pieces", other);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("different SentencePiece model"));
  }
  test::write_file(dir / "empty.txt", "\n\n");
  EXPECT_THROW(encode_raw_text(dir / "empty.txt", sp), UserError);
}

TEST_F(SentencePieceTest, PiecesFilesRefuseCorruptBytesAndIdsOutsideTheVocabulary) {
  TempDir dir;
  const SentencePiece sp(*dir_ / "m.model");
  test::write_file(dir / "raw.txt", "영화 좋다.\n최고\n\n별로다\n");
  write_sentence_tokens(dir / "raw.pieces", encode_raw_text(dir / "raw.txt", sp), sp);
  const std::string good = read_file(dir / "raw.pieces");
  const auto refused = [&](const std::string& bytes) -> std::string {
    test::write_file(dir / "bad.pieces", bytes);
    try {
      read_sentence_tokens(dir / "bad.pieces", sp);
    } catch (const UserError& e) {
      return e.what();
    }
    return "accepted";
  };
  // One flipped bit in the sentence-id bitmap: the ids still parse, only the checksum sees it.
  std::string flipped = good;
  flipped.back() = static_cast<char>(flipped.back() ^ 0x01);
  EXPECT_THAT(refused(flipped), HasSubstr("does not match the checksum"));
  // An id past the vocabulary with a checksum that matches: the id check sees it.
  constexpr size_t kHeader = 64;
  constexpr size_t kChecksumAt = 40;
  std::string outside = good;
  outside[kHeader] = '\xff';
  outside[kHeader + 1] = '\xff';
  const uint64_t checksum = hash64(outside.data() + kHeader, outside.size() - kHeader);
  std::memcpy(outside.data() + kChecksumAt, &checksum, sizeof(checksum));
  EXPECT_THAT(
      refused(outside),
      HasSubstr("piece id 65535 at position 0 is outside the vocabulary of 2000"));
  // A count whose byte size 64 + 2 c + ceil(c / 8) wraps around to the file's size exactly.
  // With c = 8 k + r that is 17 k + 2 r + (r > 0); 17 is odd, so k = target / 17 modulo 2^64,
  // and c must exceed the file's size (not the true count) without wrapping itself (k < 2^61):
  // padding the file gives other targets.
  uint64_t inverse17 = 17;
  for (int i = 0; i < 5; ++i) {
    inverse17 *= 2 - 17 * inverse17;
  }
  std::string huge;
  for (size_t pad = 0; huge.empty(); ++pad) {
    for (uint64_t r = 0; r < 8 && huge.empty(); ++r) {
      const uint64_t target = good.size() + pad - kHeader - 2 * r - (r > 0 ? 1 : 0);
      const uint64_t k = target * inverse17;
      if (k > good.size() + pad && k < (uint64_t{1} << 61)) {
        huge = good + std::string(pad, '\0');
        const uint64_t count = 8 * k + r;
        std::memcpy(huge.data() + 16, &count, sizeof(count));
      }
    }
  }
  EXPECT_THAT(refused(huge), HasSubstr("truncated or corrupt"));
  EXPECT_THAT(refused(good.substr(0, good.size() - 1)), HasSubstr("truncated"));
}

} // namespace
} // namespace xl::formats
