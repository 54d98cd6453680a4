// Attention building blocks: the relative shift against an explicit gather,
// masks, positions.
#include <gtest/gtest.h>

#include "xl/nn/masks.h"
#include "xl/nn/positional.h"
#include "xl/nn/rel_partial_attention.h"

namespace xl::nn {
namespace {

TEST(RelShift, EqualsExplicitGatherOnTheUnmaskedRegion) {
  torch::manual_seed(0);
  for (const auto& [qlen, mlen] :
       std::vector<std::pair<int64_t, int64_t>>{{1, 0}, {4, 0}, {3, 5}, {7, 2}, {5, 11}}) {
    const int64_t klen = qlen + mlen;
    // With gradients a padded copy; without, a view (also of a transposed batch).
    const auto x = torch::randn({2, 3, qlen, klen}).requires_grad_(true);
    const auto y = rel_shift(x);
    ASSERT_EQ(y.sizes(), x.sizes());
    const auto view = rel_shift(x.detach().transpose(0, 1).contiguous().transpose(0, 1));
    ASSERT_EQ(view.sizes(), x.sizes());
    // index[i, j] = j + L - 1 - i: key j of query i is at distance (M + i) - j,
    // whose embedding is row S - 1 - distance of R.
    const auto i = torch::arange(qlen).unsqueeze(1);
    const auto j = torch::arange(klen).unsqueeze(0);
    const auto index = (j + qlen - 1 - i).clamp(0, klen - 1);
    const auto gathered = x.detach().gather(3, index.expand({2, 3, qlen, klen}).contiguous());
    const auto visible = (j <= mlen + i).expand({2, 3, qlen, klen});
    EXPECT_TRUE(torch::equal(y.masked_select(visible), gathered.masked_select(visible)))
        << "qlen " << qlen << " mlen " << mlen;
    EXPECT_TRUE(torch::equal(view.masked_select(visible), gathered.masked_select(visible)))
        << "qlen " << qlen << " mlen " << mlen;
  }
}

TEST(CausalMask, SeesMemoryAndPastOnly) {
  const auto mask = causal_mask(3, 2, false, 2);
  const auto expected =
      torch::tensor({{0, 0, 0, 1, 1}, {0, 0, 0, 0, 1}, {0, 0, 0, 0, 0}}, torch::kBool);
  EXPECT_TRUE(torch::equal(mask, expected));
}

TEST(CausalMask, SameLengthGivesEveryQueryMemLenKeys) {
  // Steady state, mlen == mem_len == 3: query i sees keys (i, 3 + i].
  const auto mask = causal_mask(3, 3, true, 3);
  const auto expected =
      torch::tensor({{1, 0, 0, 0, 1, 1}, {1, 1, 0, 0, 0, 1}, {1, 1, 1, 0, 0, 0}}, torch::kBool);
  EXPECT_TRUE(torch::equal(mask, expected));
  const auto visible = (~mask).sum(1);
  EXPECT_TRUE(torch::equal(visible, torch::full({3}, 3, torch::kLong)));
  // Memory not yet full (klen <= mem_len): plain causal.
  EXPECT_TRUE(torch::equal(causal_mask(2, 1, true, 5), causal_mask(2, 1, false, 5)));
}

TEST(CausalMask, SameLengthWithoutMemoryIsRefused) {
  // Every key of every query would be hidden: softmax over nothing is NaN.
  try {
    causal_mask(4, 0, true, 0);
    FAIL();
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("same_length needs a memory"), std::string::npos);
  }
}

TEST(Positions, ReverseOrderWithClamp) {
  const auto p = relative_positions(6, 3, torch::kFloat);
  EXPECT_TRUE(torch::equal(p, torch::tensor({3.f, 3.f, 3.f, 2.f, 1.f, 0.f})));
  EXPECT_TRUE(
      torch::equal(relative_positions(3, -1, torch::kFloat), torch::tensor({2.f, 1.f, 0.f})));
}

TEST(SinusoidEmbedding, ConcatenatesSinThenCos) {
  SinusoidEmbedding emb(SinusoidEmbeddingOptions(6));
  const auto r = emb(torch::tensor({0.f, 2.f}));
  ASSERT_EQ(r.sizes(), (std::vector<int64_t>{2, 6}));
  for (int f = 0; f < 3; ++f) {
    const double inv = 1.0 / std::pow(10000.0, 2.0 * f / 6.0);
    EXPECT_NEAR(r[1][f].item<double>(), std::sin(2.0 * inv), 1e-6);
    EXPECT_NEAR(r[1][3 + f].item<double>(), std::cos(2.0 * inv), 1e-6);
    EXPECT_NEAR(r[0][3 + f].item<double>(), 1.0, 1e-7);
  }
}

TEST(RelPartialAttention, ChecksShapesWithActualSizes) {
  RelPartialAttention attn(AttentionOptions(8, 2, 4));
  const auto h = torch::randn({3, 2, 8});
  try {
    attn->forward(
        h,
        {torch::randn({4, 8}), torch::zeros({2, 4}), torch::zeros({2, 4})},
        causal_mask(3, 0, false, 0));
    FAIL();
  } catch (const c10::Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("position embeddings must be [3, 8], got [4, 8]"),
        std::string::npos);
  }
}

} // namespace
} // namespace xl::nn
