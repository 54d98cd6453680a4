// The fine-tuning batches of labelled texts: layout, order, resumption, errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"
#include "xl/formats/labelled_file.h"
#include "xl/prep/nsmc.h"
#include "xl/prep/sentencepiece_training.h"
#include "xl/sources/labelled_texts.h"
#include "xl/util/error.h"

namespace xl::sources {
namespace {

using test::TempDir;
using test::user_error;
using ::testing::HasSubstr;
// A label the model has no class for is refused when the file is opened, not at the batch
// that happens to hold it.
TEST(LabelledTexts, ALabelOutsideTheModelsClassesIsRefusedWhenOpened) {
  std::vector<sources::EncodedExample> examples(300, {1, {10, 11}});
  examples[257].label = 2;
  sources::LabelledOptions o;
  o.batch_size = 4;
  o.max_examples = 8; // also the examples that training would not reach
  o.n_class = 2;
  EXPECT_THAT(
      user_error([&] { sources::LabelledTexts(examples, "l.tsv", o); }),
      HasSubstr("l.tsv: example 258 has label 2, but the model has 2 classes"));
  o.n_class = 3;
  EXPECT_NO_THROW(sources::LabelledTexts(examples, "l.tsv", o));
}

class LabelledTextsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    // Enough Korean text for a small model: NSMC's first reviews.
    test::write_file(*dir_ / "corpus.txt", test::nsmc_documents(0, 2000));
    prep::SentencePieceOptions o;
    o.vocab_size = 1500;
    o.character_coverage = 0.99;
    prep::train_sentencepiece({*dir_ / "corpus.txt"}, *dir_ / "m.model", o);
    std::string labelled;
    for (int i = 0; i < 10; ++i) {
      labelled += std::to_string(i % 2) + "\t" + text(i) + "\n";
    }
    test::write_file(*dir_ / "l.tsv", labelled);
  }
  static void TearDownTestSuite() {
    delete dir_;
  }
  // Example i: i repeated words between two others.
  static std::string text(int i) {
    std::string out = "영화 ";
    for (int k = 0; k < i; ++k) {
      out += "정말 ";
    }
    return out + "좋다";
  }
  static TempDir* dir_;
};
TempDir* LabelledTextsTest::dir_ = nullptr;

TEST_F(LabelledTextsTest, RowsArePaddedOnTheLeftAndEndInSepCls) {
  const formats::SentencePiece sp(*dir_ / "m.model");
  sources::LabelledOptions o;
  o.batch_size = 4;
  o.seq_len = 12;
  o.shuffle = false;
  sources::LabelledTexts source(*dir_ / "l.tsv", sp, o);
  EXPECT_FALSE(source.continues_streams());
  EXPECT_EQ(source.batches_per_pass(), 3); // 4 + 4 + 2
  const auto batch = *source.next();
  ASSERT_EQ(batch.tokens.sizes(), (std::vector<int64_t>{12, 4}));
  EXPECT_EQ(batch.n_targets, 4);
  EXPECT_TRUE(torch::equal(batch.labels, torch::tensor({0, 1, 0, 1})));
  const auto tokens = batch.tokens.accessor<int64_t, 2>();
  const auto seg = batch.segment_ids.accessor<int64_t, 2>();
  const auto pieces = sp.encode(text(0));
  const auto n = static_cast<int64_t>(pieces.size());
  for (int64_t i = 0; i < 12; ++i) {
    const int64_t start = 12 - 2 - n;
    EXPECT_EQ(batch.padding[i][0].item<bool>(), i < start);
    if (i < start) {
      EXPECT_EQ(tokens[i][0], formats::kPadId);
      EXPECT_EQ(seg[i][0], 4);
    } else if (i < 10) {
      EXPECT_EQ(tokens[i][0], pieces[static_cast<size_t>(i - start)]);
      EXPECT_EQ(seg[i][0], 0);
    }
  }
  EXPECT_EQ(tokens[10][0], formats::kSepId);
  EXPECT_EQ(seg[10][0], 0);
  EXPECT_EQ(tokens[11][0], formats::kClsId);
  EXPECT_EQ(seg[11][0], 2);
  // A long text keeps its first L - 2 pieces.
  source.next();
  const auto last = *source.next();
  EXPECT_EQ(last.tokens.size(1), 2); // evaluation keeps the partial batch
  const auto long_pieces = sp.encode(text(9));
  ASSERT_GT(long_pieces.size(), 10U);
  for (int64_t i = 0; i < 10; ++i) {
    EXPECT_EQ(last.tokens[i][1].item<int64_t>(), long_pieces[static_cast<size_t>(i)]);
    EXPECT_EQ(last.segment_ids[i][1].item<int64_t>(), 0);
  }
  EXPECT_FALSE(source.next().has_value());
}

TEST_F(LabelledTextsTest, TrainingShufflesEveryPassAndResumesExactly) {
  const formats::SentencePiece sp(*dir_ / "m.model");
  sources::LabelledOptions o;
  o.batch_size = 3;
  o.seq_len = 8;
  o.seed = 5;
  sources::LabelledTexts a(*dir_ / "l.tsv", sp, o);
  EXPECT_EQ(a.batches_per_pass(), 3); // full batches only
  std::vector<torch::Tensor> first;
  while (auto batch = a.next()) {
    EXPECT_EQ(batch->labels.size(0), 3);
    first.push_back(batch->labels);
  }
  sources::next_cycling(a);
  sources::LabelledTexts b(*dir_ / "l.tsv", sp, o);
  test::transfer(a, b);
  for (int k = 0; k < 5; ++k) {
    const auto x = sources::next_cycling(a);
    const auto y = sources::next_cycling(b);
    EXPECT_TRUE(torch::equal(x.tokens, y.tokens));
    EXPECT_TRUE(torch::equal(x.labels, y.labels));
  }
  EXPECT_EQ(a.epoch(), b.epoch());
}

// Grouped by length: every batch is cut to its longest row, a training pass reads each of its
// full batches' examples once (in batches of similar lengths, in random order), evaluation
// reads every example once from the shortest to the longest.
TEST_F(LabelledTextsTest, GroupedBatchesAreCutToTheirLongestRow) {
  const formats::SentencePiece sp(*dir_ / "m.model");
  sources::LabelledOptions o;
  o.batch_size = 3;
  o.seq_len = 40; // no text is cut: each has a length of its own
  o.seed = 3;
  o.group_by_length = true;
  const auto width_of = [&](int64_t i) {
    return static_cast<int64_t>(sp.encode(text(static_cast<int>(i))).size()) + 2;
  };
  for (const bool training : {true, false}) {
    o.shuffle = training;
    sources::LabelledTexts source(*dir_ / "l.tsv", sp, o);
    std::vector<int64_t> seen;
    int64_t previous = 0;
    while (auto batch = source.next()) {
      // Rows are told apart by their tokens: example i is text(i).
      int64_t longest = 0;
      for (int64_t r = 0; r < batch->tokens.size(1); ++r) {
        const auto real = batch->padding.select(1, r).logical_not().sum().item<int64_t>();
        int64_t found = -1;
        for (int64_t i = 0; i < 10; ++i) {
          if (width_of(i) == real && batch->labels[r].item<int64_t>() == i % 2) {
            found = i;
          }
        }
        ASSERT_GE(found, 0);
        seen.push_back(found);
        longest = std::max(longest, real);
      }
      EXPECT_EQ(batch->tokens.size(0), longest);
      EXPECT_EQ(batch->segment_ids.size(0), longest);
      EXPECT_EQ(batch->tokens[longest - 1][0].item<int64_t>(), formats::kClsId);
      if (!training) {
        EXPECT_GE(longest, previous);
        previous = longest;
      }
    }
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen.size(), training ? 9U : 10U);
    EXPECT_EQ(std::unique(seen.begin(), seen.end()), seen.end());
  }
}
} // namespace
} // namespace xl::sources
