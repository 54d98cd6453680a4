#include <gtest/gtest.h>

#include "xl/models/language_model.h"
#include "xl/nn/adaptive.h"
#include "xl/nn/memory.h"
#include "xl/runtime/autocast.h"
#include "xl/runtime/device.h"

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
    return torch::matmul(emb->weight(bin)[t - start], emb->proj(bin).t()) * scale;
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
        AdaptiveSoftmaxOptions(small(div_val, div_val == 1 ? 12 : 16)).tie_weight(false));
    randomize(*crit);
    const auto hidden = torch::randn({7, 12});
    const auto full = crit->log_probs(hidden);
    ASSERT_EQ(full.sizes(), (std::vector<int64_t>{7, 50}));
    EXPECT_TRUE(torch::allclose(full.logsumexp(1), torch::zeros({7}), 1e-5, 1e-5));
    const auto target = torch::tensor({0, 9, 10, 29, 30, 49, 15});
    const auto picked = full.gather(1, target.unsqueeze(1)).squeeze(1);
    EXPECT_TRUE(torch::allclose(crit(hidden, target), picked, 1e-5, 1e-6));
  }
}

TEST(AdaptiveLogSoftmax, TyingSharesStorageAndCountsOnce) {
  AdaptiveEmbedding emb(small(2));
  AdaptiveLogSoftmax crit(
      AdaptiveSoftmaxOptions(small(2)).tie_weight(true).tie_projs({false, true, true}));
  crit->tie_to(*emb);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(crit->weight(i).is_same(emb->weight(i)));
  }
  EXPECT_FALSE(crit->proj(0).is_same(emb->proj(0)));
  EXPECT_TRUE(crit->proj(1).is_same(emb->proj(1)));
  // untied: head projection [12, 16] + biases (50) + clusters (2 x 16 + 2)
  EXPECT_EQ(models::count_parameters(*crit), 12 * 16 + 50 + 2 * 16 + 2);
}

// The hand-written backward against the composed ops: values, the gradient of every parameter
// and of the hidden states, with tied and untied tables, projections, per-row loss weights and a
// tail bin no target falls in. The tied run feeds the embedding into the softmax, so its sparse
// table gradient is added into the softmax's dense one. Under bf16 autocast both multiply in
// bf16: the same values up to the order of bf16 roundings, float32 gradients within bf16's
// precision (the fused loss sums the biases' gradients in float32, the composed ops in bf16).
TEST(AdaptiveLogSoftmax, FusedLossEqualsTheComposedOps) {
  for (const bool bf16 : {false, true}) {
    for (const int64_t div_val : {1, 2}) {
      for (const bool tied : {false, true}) {
        for (const bool empty_bin : {false, true}) {
          torch::manual_seed(5);
          const auto options = small(div_val);
          AdaptiveEmbedding emb(AdaptiveOptions(options).sparse_grad(tied));
          AdaptiveLogSoftmax crit(
              AdaptiveSoftmaxOptions(options).tie_weight(tied).tie_projs({false, tied, tied}));
          crit->tie_to(*emb);
          randomize(*emb);
          randomize(*crit);
          const auto tokens = torch::tensor({1, 12, 49, 5, 33, 7, 20, 0, 29});
          const auto target = empty_bin ? torch::tensor({0, 9, 10, 29, 15, 3, 11, 2, 28})
                                        : torch::tensor({0, 9, 10, 29, 30, 49, 15, 31, 2});
          const auto row_weight = torch::rand({9}) + 0.5;
          const auto noise = torch::randn({9, 12});
          std::vector<std::vector<torch::Tensor>> grads;
          std::vector<torch::Tensor> values;
          for (const bool fused : {false, true}) {
            crit->options.fused_loss(fused);
            emb->zero_grad();
            crit->zero_grad();
            const auto hidden = (emb(tokens) * 0.1 + noise).requires_grad_();
            hidden.retain_grad();
            torch::Tensor logp;
            {
              const runtime::AutocastGuard autocast(torch::kCPU, bf16);
              logp = crit(hidden, target);
            }
            ASSERT_EQ(logp.scalar_type(), torch::kFloat);
            EXPECT_EQ(logp.grad_fn()->name() == "AdaptiveLossBackward", fused)
                << logp.grad_fn()->name();
            (-(logp * row_weight).sum()).backward();
            values.push_back(logp.detach());
            std::vector<torch::Tensor> g{hidden.grad()};
            // The composed ops leave an empty bin's tensors without a gradient.
            for (const torch::nn::Module* module :
                 std::vector<const torch::nn::Module*>{emb.get(), crit.get()}) {
              for (const auto& p : module->parameters()) {
                g.push_back(p.grad().defined() ? p.grad().to_dense() : torch::zeros_like(p));
              }
            }
            if (fused && tied) {
              EXPECT_FALSE(emb->weight(0).grad().is_sparse())
                  << "the embedding's rows were added into the softmax's dense gradient";
            }
            grads.push_back(std::move(g));
          }
          const std::string where = "div_val " + std::to_string(div_val) + (tied ? " tied" : "") +
              (empty_bin ? " empty bin" : "") + (bf16 ? " bf16" : "");
          const double value_tol = bf16 ? 1e-3 : 1e-5;
          EXPECT_TRUE(torch::allclose(values[1], values[0], value_tol, value_tol))
              << where << ": " << (values[1] - values[0]).abs().max().item<double>();
          ASSERT_EQ(grads[0].size(), grads[1].size());
          for (size_t i = 0; i < grads[0].size(); ++i) {
            EXPECT_EQ(grads[1][i].scalar_type(), torch::kFloat);
            if (bf16) {
              // bf16 keeps 8 bits: each value within a few of its roundings at the tensor's scale
              const double scale = grads[0][i].abs().max().item<double>();
              const double diff = (grads[1][i] - grads[0][i]).abs().max().item<double>();
              EXPECT_LE(diff, 1e-2 * scale + 1e-6)
                  << where << " tensor " << i << ": " << diff << " at scale " << scale;
            } else {
              EXPECT_TRUE(torch::allclose(grads[1][i], grads[0][i], 1e-4, 1e-5))
                  << where << " tensor " << i << ": "
                  << (grads[1][i] - grads[0][i]).abs().max().item<double>();
            }
          }
          if (bf16) {
            // A float32 loss would agree to 1e-5: the fused loss did multiply in bf16.
            crit->options.fused_loss(true);
            const auto fp32 = crit(emb(tokens) * 0.1 + noise, target).detach();
            EXPECT_GT((fp32 - values[1]).abs().max().item<double>(), 1e-5) << where;
          }
        }
      }
    }
  }
}

// Under bf16 the fused loss keeps its logits in bf16 and works through them a few rows at a time
// in float32: a head of 20,001 logits over 300 rows takes three slices.
TEST(AdaptiveLogSoftmax, FusedBf16LossWorksThroughWideBinsInSlicesOfRows) {
  torch::manual_seed(3);
  AdaptiveLogSoftmax crit(
      AdaptiveSoftmaxOptions(AdaptiveOptions(30000, 8, 8).cutoffs({20000})).tie_weight(false));
  randomize(*crit);
  const auto hidden = torch::randn({300, 8});
  const auto target = torch::randint(0, 30000, {300});
  std::vector<std::vector<torch::Tensor>> grads;
  std::vector<torch::Tensor> values;
  for (const bool fused : {false, true}) {
    crit->options.fused_loss(fused);
    crit->zero_grad();
    const auto h = hidden.clone().requires_grad_();
    torch::Tensor logp;
    {
      const runtime::AutocastGuard autocast(torch::kCPU, true);
      logp = crit(h, target);
    }
    logp.sum().backward();
    values.push_back(logp.detach());
    std::vector<torch::Tensor> g{h.grad()};
    for (const auto& p : crit->parameters()) {
      g.push_back(p.grad());
    }
    grads.push_back(std::move(g));
  }
  EXPECT_LE((values[1] - values[0]).abs().max().item<double>(), 1e-3);
  for (size_t i = 0; i < grads[0].size(); ++i) {
    const double scale = grads[0][i].abs().max().item<double>();
    EXPECT_LE((grads[1][i] - grads[0][i]).abs().max().item<double>(), 1e-2 * scale + 1e-6)
        << "tensor " << i;
  }
}

TEST(UpdateMemory, KeepsLastMemLenDetached) {
  const auto h1 = torch::arange(3, torch::kFloat).view({3, 1, 1}).requires_grad_();
  Memory mems = update_memory({}, {h1 * 1}, 4, 0);
  ASSERT_EQ(mems.size(), 1u);
  EXPECT_EQ(mems[0].size(0), 3);
  EXPECT_FALSE(mems[0].requires_grad());
  const auto h2 = torch::arange(3, 6, torch::kFloat).view({3, 1, 1});
  mems = update_memory(mems, {h2}, 4, 0);
  EXPECT_TRUE(torch::equal(mems[0].flatten(), torch::tensor({2.f, 3.f, 4.f, 5.f})));
  // ext_len: the last ext_len positions are not memorised.
  mems = update_memory({}, {h2}, 4, 1);
  EXPECT_TRUE(torch::equal(mems[0].flatten(), torch::tensor({3.f, 4.f})));
  EXPECT_TRUE(update_memory(mems, {h2}, 0, 0).empty());
}

} // namespace
} // namespace xl::nn
