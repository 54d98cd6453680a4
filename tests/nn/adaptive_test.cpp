#include <gtest/gtest.h>

#include "xl/models/language_model.h"
#include "xl/nn/adaptive.h"
#include "xl/nn/memory.h"

namespace xl::nn {
namespace {

AdaptiveOptions small(int64_t div_val, int64_t d_embed = 16) {
  return AdaptiveOptions(50, d_embed, 12).cutoffs({10, 30}).div_val(div_val);
}

void randomize(torch::nn::Module& m) {
  torch::NoGradGuard no_grad;
  for (auto& p : m.parameters()) {
    p.normal_(0, 0.5);
  }
}

TEST(AdaptiveEmbedding, EachBinUsesItsTableAndProjection) {
  torch::manual_seed(1);
  AdaptiveEmbedding emb(small(2));
  randomize(*emb);
  const auto tokens = torch::tensor({{3, 12}, {49, 29}});
  const auto out = emb(tokens);
  ASSERT_EQ(out.sizes(), (std::vector<int64_t>{2, 2, 12}));
  const double scale = std::sqrt(12.0);
  const auto manual = [&](int64_t t, size_t bin, int64_t start) {
    return torch::matmul(emb->weight(bin)[t - start], emb->proj(bin).t()) *
        scale;
  };
  EXPECT_TRUE(torch::allclose(out[0][0], manual(3, 0, 0), 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(out[0][1], manual(12, 1, 10), 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(out[1][0], manual(49, 2, 30), 1e-5, 1e-6));
  EXPECT_EQ(emb->weight(2).size(1), 4); // 16 / 2^2
}

TEST(AdaptiveLogSoftmax, IsANormalisedDistributionMatchingPerTargetValues) {
  torch::manual_seed(2);
  for (const int64_t div_val : {1, 2}) {
    AdaptiveEmbedding emb(small(div_val, div_val == 1 ? 12 : 16));
    AdaptiveLogSoftmax crit(
        AdaptiveSoftmaxOptions(small(div_val, div_val == 1 ? 12 : 16))
            .tie_weight(false));
    randomize(*crit);
    const auto hidden = torch::randn({7, 12});
    const auto full = crit->log_probs(hidden);
    ASSERT_EQ(full.sizes(), (std::vector<int64_t>{7, 50}));
    EXPECT_TRUE(
        torch::allclose(full.logsumexp(1), torch::zeros({7}), 1e-5, 1e-5));
    const auto target = torch::tensor({0, 9, 10, 29, 30, 49, 15});
    const auto picked = full.gather(1, target.unsqueeze(1)).squeeze(1);
    EXPECT_TRUE(torch::allclose(crit(hidden, target), picked, 1e-5, 1e-6));
  }
}

TEST(AdaptiveLogSoftmax, TyingSharesStorageAndCountsOnce) {
  AdaptiveEmbedding emb(small(2));
  AdaptiveLogSoftmax crit(
      AdaptiveSoftmaxOptions(small(2)).tie_weight(true).tie_projs(
          {false, true, true}));
  crit->tie_to(*emb);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(crit->weight(i).is_same(emb->weight(i)));
  }
  EXPECT_FALSE(crit->proj(0).is_same(emb->proj(0)));
  EXPECT_TRUE(crit->proj(1).is_same(emb->proj(1)));
  // untied: head projection [12, 16] + biases (50) + clusters (2 x 16 + 2)
  EXPECT_EQ(models::count_parameters(*crit), 12 * 16 + 50 + 2 * 16 + 2);
}

TEST(UpdateMemory, KeepsLastMemLenDetached) {
  const auto h1 =
      torch::arange(3, torch::kFloat).view({3, 1, 1}).requires_grad_();
  Memory mems = update_memory({}, {h1 * 1}, 4, 0);
  ASSERT_EQ(mems.size(), 1u);
  EXPECT_EQ(mems[0].size(0), 3);
  EXPECT_FALSE(mems[0].requires_grad());
  const auto h2 = torch::arange(3, 6, torch::kFloat).view({3, 1, 1});
  mems = update_memory(mems, {h2}, 4, 0);
  EXPECT_TRUE(
      torch::equal(mems[0].flatten(), torch::tensor({2.f, 3.f, 4.f, 5.f})));
  // ext_len: the last ext_len positions are not memorised.
  mems = update_memory({}, {h2}, 4, 1);
  EXPECT_TRUE(torch::equal(mems[0].flatten(), torch::tensor({3.f, 4.f})));
  EXPECT_TRUE(update_memory(mems, {h2}, 0, 0).empty());
}

} // namespace
} // namespace xl::nn
