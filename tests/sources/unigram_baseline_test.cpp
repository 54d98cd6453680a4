// The unigram baseline that evaluations print beside a language model's loss.
#include "xl/sources/unigram_baseline.h"

#include <gtest/gtest.h>

#include <cmath>

namespace xl::sources {
namespace {

// Four entries counted 5, 3, 0 and 2 times: 10 tokens, so add-one gives q = (c + 1) / 14.
TEST(UnigramBaseline, AddOneCountsScoreTheCountedTargets) {
  const auto baseline = sources::UnigramBaseline::from_counts(
      torch::tensor({5, 3, 0, 2}), torch::tensor({1.0, 2.0, 3.0, 1.0}));
  EXPECT_NEAR(baseline.nll[0].item<double>(), -std::log(6.0 / 14.0), 1e-12);
  EXPECT_NEAR(baseline.nll[2].item<double>(), -std::log(1.0 / 14.0), 1e-12);
  sources::Batch batch;
  batch.targets = torch::tensor({{0, 2}, {1, 3}});
  batch.target_mask = torch::tensor({{true, false}, {true, true}});
  sources::BaselineTotals totals;
  totals.add(batch, baseline);
  EXPECT_EQ(totals.targets, 3);
  EXPECT_NEAR(
      totals.unigram_nll,
      -std::log(6.0 / 14.0) - std::log(4.0 / 14.0) - std::log(3.0 / 14.0),
      1e-12);
  EXPECT_DOUBLE_EQ(totals.chars, 1.0 + 2.0 + 1.0);
  // Without a mask every target counts.
  batch.target_mask = torch::Tensor();
  sources::BaselineTotals all;
  all.add(batch, baseline);
  EXPECT_EQ(all.targets, 4);
  EXPECT_DOUBLE_EQ(all.chars, 7.0);
}

} // namespace
} // namespace xl::sources
