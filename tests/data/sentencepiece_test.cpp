// XLNet's SentencePiece: a model trained here has the special pieces at XLNet's ids, training is
// deterministic, Python's sentencepiece encodes exactly as we do, and encoded corpora keep
// sentence boundaries and refuse another model.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sentencepiece_trainer.h>

#include <sstream>

#include "test_util.h"
#include "xl/data/sentence_tokens.h"
#include "xl/data/sentencepiece.h"
#include "xl/data/text.h"
#include "xl/util/error.h"

namespace xl::data {
namespace {

using test::nsmc_documents;
using test::TempDir;
using ::testing::HasSubstr;

class SentencePieceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    test::write_file(*dir_ / "train.txt", nsmc_documents(0, 3000));
    train_sentencepiece({*dir_ / "train.txt"}, *dir_ / "m.model", options());
  }
  static void TearDownTestSuite() {
    delete dir_;
  }
  static SentencePieceOptions options() {
    SentencePieceOptions o;
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
      "<unk>",
      "<s>",
      "</s>",
      "<cls>",
      "<sep>",
      "<pad>",
      "<mask>",
      "<eod>",
      "<eop>"};
  for (size_t id = 0; id < specials.size(); ++id) {
    EXPECT_EQ(sp.piece(static_cast<int64_t>(id)), specials[id]);
    EXPECT_TRUE(sp.word_starts()[id]);
  }
  EXPECT_EQ(sp.piece(9), ".");
  for (int64_t id = 9; id < sp.size(); ++id) {
    const auto& piece = sp.piece(id);
    const bool marked = piece.rfind("\xe2\x96\x81", 0) == 0;
    const bool punct = piece.size() == 1 && std::ispunct(piece[0]) != 0 &&
        piece != "'" && piece != "=" && piece != ">";
    EXPECT_EQ(
        sp.word_starts()[static_cast<size_t>(id)],
        marked || punct || piece[0] == '<')
        << piece;
  }
}

TEST_F(SentencePieceTest, TrainingIsDeterministic) {
  TempDir dir;
  train_sentencepiece({*dir_ / "train.txt"}, dir / "again.model", options());
  EXPECT_EQ(
      test::read_text(dir / "again.model"), test::read_text(*dir_ / "m.model"));
}

TEST_F(SentencePieceTest, PythonSentencePieceEncodesTheSame) {
  TempDir dir;
  // Unseen reviews, and digits before commas (re-split by encode_pieces).
  const std::string lines = nsmc_documents(3000, 300) +
      "1990년, 2000, 3,000원 ``좋다'' 1,\n  여러   칸\t공백  \n";
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
          "/tests/data/sentencepiece_reference.py " +
          (*dir_ / "m.model").string() + " lines.txt ids.txt",
      dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(test::read_text(dir / "ids.txt"), ours);
}

TEST_F(SentencePieceTest, AModelWithoutXLNetsPiecesIsRefused) {
  TempDir dir;
  std::string proto;
  // A plain model: ids 3.. are ordinary pieces.
  ASSERT_TRUE(
      sentencepiece::SentencePieceTrainer::Train(
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
  sent.insert(
      sent.end(),
      second.size() + 1,
      0); // <eod> glued to the sentence before it
  sent.insert(sent.end(), third.size(), 1);
  EXPECT_EQ(tokens.sent_ids, sent);

  write_sentence_tokens(dir / "raw.pieces", tokens, sp);
  const auto back = read_sentence_tokens(dir / "raw.pieces", sp);
  EXPECT_EQ(back.ids, tokens.ids);
  EXPECT_EQ(back.sent_ids, tokens.sent_ids);

  auto o = options();
  o.vocab_size = 1800;
  train_sentencepiece({*dir_ / "train.txt"}, dir / "other.model", o);
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

} // namespace
} // namespace xl::data
