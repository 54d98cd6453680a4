// Transformer-XL: published parameter counts and the properties the math
// guarantees.
#include "xl/models/transformer_xl.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "xl/config/config.h"
#include "xl/models/factory.h"

namespace xl::models {
namespace {

constexpr int64_t kWt103Vocab = 267735;

config::Config shipped(const std::string& name) {
  return config::load(
      std::string(test::kSourceDir) + "/configs/txl/" + name + ".yaml");
}

// kimiyoung/transformer-xl train.py prints these for its wt103 scripts.
TEST(TransformerXLParameters, Wt103BaseMatchesPublishedCount) {
  auto model = build_model(shipped("wt103_base").model, kWt103Vocab);
  EXPECT_EQ(count_parameters(*model), 151107538);
}

TEST(TransformerXLParameters, Wt103LargeMatchesPublishedCount) {
  auto model = build_model(shipped("wt103_large").model, kWt103Vocab);
  EXPECT_EQ(count_parameters(*model), 285170506);
}

TransformerXLOptions tiny(bool relative = true) {
  Lengths lengths;
  lengths.mem_len = 6;
  return TransformerXLOptions(40, 2, 2, 16, 8, 32)
      .d_embed(16)
      .cutoffs({10, 20})
      .div_val(2)
      .relative(relative)
      .lengths(lengths);
}

TEST(TransformerXL, ChangingAFutureTokenChangesNoEarlierLogProb) {
  for (const bool relative : {true, false}) {
    torch::manual_seed(3);
    auto model = std::make_shared<TransformerXLImpl>(tiny(relative));
    model->eval();
    const auto input = torch::randint(40, {8, 2});
    const auto target = torch::randint(40, {8, 2});
    const auto memory = model->forward(input, target, {}).mems;
    const auto base = model->forward(input, target, memory, true).log_probs;
    auto changed = input.clone();
    changed[5][0] = (changed[5][0].item<int64_t>() + 1) % 40;
    const auto after = model->forward(changed, target, memory, true).log_probs;
    EXPECT_TRUE(torch::equal(base.narrow(0, 0, 5), after.narrow(0, 0, 5)));
    EXPECT_FALSE(torch::equal(base[5], after[5]));
  }
}

TEST(TransformerXL, SegmentWithMemoryEqualsOneLongPass) {
  torch::manual_seed(4);
  auto options = tiny();
  Lengths lengths;
  lengths.mem_len = 12; // holds the whole first segment
  auto model = std::make_shared<TransformerXLImpl>(options.lengths(lengths));
  model->eval();
  const auto input = torch::randint(40, {10, 3});
  const auto target = torch::randint(40, {10, 3});
  const auto whole = model->forward(input, target, {}, true).log_probs;
  const auto first =
      model->forward(input.narrow(0, 0, 4), target.narrow(0, 0, 4), {}, true);
  const auto second = model->forward(
      input.narrow(0, 4, 6), target.narrow(0, 4, 6), first.mems, true);
  EXPECT_TRUE(
      torch::allclose(first.log_probs, whole.narrow(0, 0, 4), 1e-5, 1e-5));
  EXPECT_TRUE(
      torch::allclose(second.log_probs, whole.narrow(0, 4, 6), 1e-5, 1e-5));
  ASSERT_EQ(second.mems.size(), 2u);
  EXPECT_EQ(second.mems[0].size(0), 10);
}

TEST(TransformerXL, LossIsTheSumOfTokenLogProbs) {
  torch::manual_seed(5);
  auto model = std::make_shared<TransformerXLImpl>(tiny());
  model->eval();
  const auto input = torch::randint(40, {5, 2});
  const auto target = torch::randint(40, {3, 2});
  const auto out = model->forward(input, target, {}, true);
  EXPECT_EQ(out.count, 6);
  EXPECT_EQ(out.log_probs.sizes(), (std::vector<int64_t>{3, 2}));
  EXPECT_NEAR(
      out.nll_sum.item<double>(), -out.log_probs.sum().item<double>(), 1e-5);
}

TEST(TransformerXL, GradientsReachEveryParameter) {
  torch::manual_seed(6);
  auto model = std::make_shared<TransformerXLImpl>(tiny());
  // inputs and targets in every bin, so that every table and cluster takes part
  const auto input =
      torch::tensor({{1, 11}, {21, 39}, {2, 13}, {28, 3}, {4, 6}, {7, 8}});
  const auto target =
      torch::tensor({{0, 15}, {25, 39}, {5, 12}, {22, 1}, {2, 3}, {4, 5}});
  auto out = model->forward(input, target, {});
  out.nll_sum.backward();
  for (const auto& p : model->named_parameters()) {
    ASSERT_TRUE(p.value().grad().defined()) << "no gradient for " << p.key();
    EXPECT_GT(p.value().grad().abs().sum().item<double>(), 0.0) << p.key();
  }
}

} // namespace
} // namespace xl::models
