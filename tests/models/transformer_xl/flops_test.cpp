#include "xl/models/transformer_xl/flops.h"
#include "xl/models/transformer_xl/config.h"

#include <gtest/gtest.h>

namespace xl::models {
namespace {

// A model small enough to count by hand: one layer, d_model 8, 2 heads of 4, d_inner 16,
// segments of 4 with a memory of 4, 20 words split at 10, no projections.
config::Config flops_config() {
  config::Config c;
  c.model.type = "transformer_xl";
  c.model.n_layer = 1;
  c.model.d_model = 8;
  c.model.n_head = 2;
  c.model.d_head = 4;
  c.model.d_inner = 16;
  c.model.section<models::TransformerXLConfig>().mem_len = 4;
  c.model.section<models::TransformerXLConfig>().cutoffs = {10};
  c.train.tgt_len = 4;
  return c;
}

TEST(Flops, TransformerXLTrainingStepCountedByHand) {
  auto c = flops_config();
  const auto share = uniform_bin_share(c, 20);
  ASSERT_EQ(share, (std::vector<double>{0.5, 0.5}));
  // Per token: q, k, v 2*8*8*(4 + 2*8)/4 = 640; scores and weighted sum 2*2*8*8 = 256; output
  // 2*8*8 = 128; feed-forward 2*2*8*16 = 512; relative: positions 2*8*8*8/4 = 256 and BD
  // 2*8*8 = 128. Softmax: head 2*8*(10 + 1) = 176, the tail 2*8*10 for half the targets = 80.
  EXPECT_DOUBLE_EQ(training_flops_per_token(c, 20, share), 3.0 * (1920 + 256));
  c.model.section<models::TransformerXLConfig>().attn_type = models::AttnType::kAbsolute;
  EXPECT_DOUBLE_EQ(training_flops_per_token(c, 20, share), 3.0 * (1536 + 256));
  // div_val 2: bin sizes 8 and 4, each projected to 8, in the softmax and the embedding.
  c.model.section<models::TransformerXLConfig>().div_val = 2;
  const double head = 2 * 8 * 11 + 2 * 8 * 8 + 0.5 * 2 * 8 * 8;
  const double tail = 0.5 * (2 * 4 * 10 + 2 * 8 * 4) + 0.5 * 2 * 8 * 4;
  EXPECT_DOUBLE_EQ(training_flops_per_token(c, 20, share), 3.0 * (1536 + head + tail));
}

TEST(Flops, TransformerXLEvaluationSegmentCountedByHand) {
  const auto c = flops_config();
  const auto share = uniform_bin_share(c, 20);
  // Projections kept: q, k, v of the 4 new tokens 2*8*8*3 = 384; scores and weighted sum
  // 2*2*8*8 = 256; output 128; feed-forward 512; BD 2*8*8 = 128; the softmax 256.
  EXPECT_DOUBLE_EQ(evaluation_flops_per_token(c, 20, share, 4, 4, true), 1408 + 256);
  // Recomputed: the memory's keys and values 2*8*16*4/4 = 256 and the positions of all 8
  // 2*8*8*8/4 = 256, as in a training step's forward.
  EXPECT_DOUBLE_EQ(
      evaluation_flops_per_token(c, 20, share, 4, 4, false),
      training_flops_per_token(c, 20, share) / 3);
  // A memory of 20 with kept projections: scores, sum and BD over 24 positions.
  EXPECT_DOUBLE_EQ(
      evaluation_flops_per_token(c, 20, share, 4, 20, true),
      384 + 2 * 2 * 24 * 8 + 128 + 512 + 2 * 24 * 8 + 256);
}

} // namespace
} // namespace xl::models
