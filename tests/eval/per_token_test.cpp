// The per-token listing: in text order whatever order the batches score, unscored tokens left
// empty, in scoring order without a text, and every field readable as TSV.
#include "xl/eval/per_token.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"

namespace xl::eval {
namespace {

using test::read_text;
using test::TempDir;

// A batch of `index` [T, B] whose targets are ids `targets`.
sources::Batch scored(torch::Tensor index, torch::Tensor targets) {
  sources::Batch batch;
  batch.target_index = std::move(index);
  batch.targets = std::move(targets);
  return batch;
}

TEST(PerTokenListing, ListsTheTextInOrderWhateverOrderItWasScoredIn) {
  TempDir dir;
  const formats::TokenTensor tokens(torch::tensor({0, 1, 2, 0, 1, 2}, torch::kLong), "t");
  const std::vector<std::string> text{"a", "b\tc", "\xc3"};
  PerTokenListing listing(
      dir / "out.tsv", &tokens, [&](int64_t id) { return text[static_cast<size_t>(id)]; });
  // Two streams: tokens 1..2 and 4..5, the second column first in each row.
  listing.add(
      scored(torch::tensor({{1, 4}, {2, 5}}, torch::kLong), torch::empty({2, 2}, torch::kLong)),
      torch::tensor({{-1.5F, -0.25F}, {-2.0F, -3.0F}}));
  EXPECT_EQ(listing.write(30.0), 6);
  EXPECT_EQ(
      read_text(dir / "out.tsv"),
      "index\ttoken\tlog_prob\n"
      "0\ta\t\n"
      "1\tb\\tc\t-1.500000\n"
      "2\t\\xc3\t-2.000000\n"
      "3\ta\t\n"
      "4\tb\\tc\t-0.250000\n"
      "5\t\\xc3\t-3.000000\n");
}

TEST(PerTokenListing, WithoutATextListsThePredictionsAsScoredLeavingPaddingOut) {
  TempDir dir;
  PerTokenListing listing(
      dir / "out.tsv", nullptr, [](int64_t id) { return "p" + std::to_string(id); });
  auto batch =
      scored(torch::tensor({{7, 3}, {-1, 9}}, torch::kLong), torch::tensor({{70, 30}, {0, 90}}));
  batch.target_mask = torch::tensor({{true, true}, {false, true}});
  listing.add(batch, torch::tensor({{-1.0F, -2.0F}, {-9.0F, -4.0F}}));
  EXPECT_EQ(listing.write(30.0), 3);
  EXPECT_EQ(
      read_text(dir / "out.tsv"),
      "index\ttoken\tlog_prob\n"
      "7\tp70\t-1.000000\n"
      "3\tp30\t-2.000000\n"
      "9\tp90\t-4.000000\n");
}

TEST(TsvField, EscapesWhatWouldBreakARowAndBytesThatAreNoCharacter) {
  EXPECT_EQ(tsv_field("plain ▁piece"), "plain ▁piece");
  EXPECT_EQ(tsv_field("a\tb\nc\rd\\e\x01"), "a\\tb\\nc\\rd\\\\e\\x01");
  EXPECT_EQ(tsv_field("\xe2\x82"), "\\xe2\\x82");
}

} // namespace
} // namespace xl::eval
