// Activation checkpointing gives the plain path's numbers: gradients, losses and the random
// stream after a step, for a bare block, and for Transformer-XL's learned positions with dropout
// on (a replay that drew other dropout masks would give other gradients), in float32 and under
// bf16 autocast. Every family's tiny configs: models/family_contract_test.cpp.
#include "xl/nn/recompute.h"

#include "xl/nn/dropout.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "train/family_checks.h"
#include "xl/config/config.h"

namespace xl::train {
namespace {

TEST(ActivationCheckpointing, ABlockGivesThePlainGradientsAndLeavesTheRandomStreamAsItWas) {
  torch::manual_seed(1);
  torch::nn::Linear linear(6, 6);
  const auto x0 = torch::randn({5, 6});
  const auto y0 = torch::randn({5, 6});
  // Two inputs, two outputs, a parameter inside and dropout.
  const nn::Block block = [&](const std::vector<torch::Tensor>& in) {
    const auto a = nn::dropout(linear(in[0]), 0.5, true);
    return std::vector<torch::Tensor>{a * in[1], a.tanh()};
  };
  const auto run = [&](bool checkpointed) {
    linear->zero_grad();
    auto x = x0.clone().requires_grad_(true);
    auto y = y0.clone().requires_grad_(true);
    torch::manual_seed(9);
    const auto out = checkpointed ? nn::recompute(block, {x, y}) : block({x, y});
    EXPECT_EQ(test::graph_has(out[0], test::kReplay), checkpointed);
    (out[0].sum() + 2 * out[1].pow(2).sum()).backward();
    return std::vector<torch::Tensor>{
        x.grad(),
        y.grad(),
        linear->weight.grad().clone(),
        linear->bias.grad().clone(),
        torch::rand({4})}; // the next draws after the backward pass
  };
  const auto plain = run(false);
  const auto replayed = run(true);
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_TRUE(torch::equal(plain[i], replayed[i])) << "tensor " << i;
  }
  // Without grad mode nothing is recorded and nothing replayed.
  torch::NoGradGuard no_grad;
  EXPECT_FALSE(nn::recompute(block, {x0, y0})[0].requires_grad());
}

// Transformer-XL's learned positions (a table per layer, covering the evaluation's memory too);
// every family's tiny configs are in the family contract (models/family_contract_test.cpp).
TEST(ActivationCheckpointing, TransformerXLsLearnedPositionsTrainAsWithoutIt) {
  test::expect_recompute_gives_the_plain_steps(config::load(
      std::string(test::kSourceDir) + "/configs/transformer_xl/tiny.yaml",
      {"model.dropout=0.3",
       "model.dropatt=0.2",
       "train.threads=1",
       "model.transformer_xl.attn_type=learned",
       "model.transformer_xl.n_ctx=48"}));
}

} // namespace
} // namespace xl::train
