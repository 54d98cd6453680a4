// The fused Transformer-XL layer against the composed modules it replaces in training: values
// and every gradient, with and without memory, with dropout, under bf16 autocast; and the
// operator calls it saves.
#include <gtest/gtest.h>

#include "xl/nn/fused_rel_layer.h"
#include "xl/nn/masks.h"
#include "xl/nn/rel_decoder_layer.h"
#include "xl/runtime/autocast.h"
#include "xl/runtime/op_counter.h"

namespace xl::nn {
namespace {

struct Layers {
  RelDecoderLayer fused{nullptr};
  RelDecoderLayer composed{nullptr};
};

Layers layers(double dropout, double dropatt) {
  torch::manual_seed(1);
  const auto attention = AttentionOptions(16, 2, 5).dropout(dropout).dropatt(dropatt);
  Layers out{RelDecoderLayer(DecoderLayerOptions(attention, 24)), nullptr};
  out.composed =
      RelDecoderLayer(std::dynamic_pointer_cast<RelDecoderLayerImpl>(out.fused->clone()));
  out.composed->options.fused(false);
  EXPECT_TRUE(fused_rel_layer_applies(out.fused->options));
  EXPECT_FALSE(fused_rel_layer_applies(out.composed->options));
  return out;
}

struct Inputs {
  torch::Tensor h, mem, r, u, v, mask, grad;
};

Inputs inputs(int64_t qlen, int64_t mlen, int64_t batch) {
  torch::manual_seed(2);
  Inputs in;
  in.h = torch::randn({qlen, batch, 16});
  in.mem = mlen > 0 ? torch::randn({mlen, batch, 16}) : torch::Tensor();
  in.r = torch::randn({qlen + mlen, 16});
  in.u = torch::randn({2, 5});
  in.v = torch::randn({2, 5});
  in.mask = causal_mask(qlen, mlen, false, mlen);
  in.grad = torch::randn({qlen, batch, 16});
  return in;
}

// The output, then the gradients of h, u, v and every parameter.
std::vector<torch::Tensor> run(RelDecoderLayer& layer, const Inputs& in, uint64_t seed) {
  const auto h = in.h.clone().requires_grad_(true);
  const auto u = in.u.clone().requires_grad_(true);
  const auto v = in.v.clone().requires_grad_(true);
  layer->zero_grad();
  torch::manual_seed(seed);
  const auto y = layer->forward(h, {in.r, u, v}, in.mask, in.mem);
  y.backward(in.grad);
  std::vector<torch::Tensor> out{y.detach(), h.grad(), u.grad(), v.grad()};
  for (const auto& p : layer->parameters()) {
    out.push_back(p.grad());
  }
  return out;
}

void expect_close(
    const std::vector<torch::Tensor>& a,
    const std::vector<torch::Tensor>& b,
    double rtol,
    double atol,
    const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_TRUE(a[i].defined() && b[i].defined()) << what << ": tensor " << i;
    EXPECT_TRUE(torch::allclose(a[i].to(torch::kFloat), b[i].to(torch::kFloat), rtol, atol))
        << what << ": tensor " << i << " (0: output, 1-3: h, u, v, then the parameters) differs"
        << " by " << (a[i].to(torch::kFloat) - b[i].to(torch::kFloat)).abs().max().item<float>();
  }
}

TEST(FusedRelLayer, EqualsTheComposedLayerAndEveryGradient) {
  for (const auto& [qlen, mlen] :
       std::vector<std::pair<int64_t, int64_t>>{{4, 0}, {3, 5}, {1, 2}, {6, 6}}) {
    auto l = layers(0.0, 0.0);
    const auto in = inputs(qlen, mlen, 3);
    expect_close(
        run(l.fused, in, 0),
        run(l.composed, in, 0),
        1e-5,
        1e-5,
        "qlen " + std::to_string(qlen) + " mlen " + std::to_string(mlen));
  }
}

TEST(FusedRelLayer, DrawsTheComposedLayersDropoutMasks) {
  // The same draws in the same order on the CPU: dropout after the output projection, inside
  // and after the feed-forward. (Attention dropout draws over another layout.)
  auto l = layers(0.3, 0.0);
  const auto in = inputs(5, 4, 2);
  expect_close(run(l.fused, in, 7), run(l.composed, in, 7), 1e-5, 1e-5, "dropout 0.3");
  // Evaluation mode turns them off in both.
  l.fused->eval();
  l.composed->eval();
  expect_close(run(l.fused, in, 7), run(l.composed, in, 8), 1e-5, 1e-5, "eval");
}

TEST(FusedRelLayer, AttentionDropoutGradientsMatchFiniteDifferences) {
  // The composed layer draws attention dropout over another layout, so the fused layer's
  // gradients under it are checked against central differences of its own forward, with the
  // same masks (the same seed) each time.
  auto l = layers(0.1, 0.5);
  const auto in = inputs(4, 3, 2);
  const auto grads = run(l.fused, in, 11);
  torch::manual_seed(12);
  const auto dh = torch::randn_like(in.h);
  const auto du = torch::randn_like(in.u);
  const double eps = 1e-2;
  // With gradients enabled: without them the layer runs the composed modules.
  const auto loss = [&](const torch::Tensor& h, const torch::Tensor& u) {
    torch::manual_seed(11);
    const auto y = l.fused->forward(h, {in.r, u, in.v}, in.mask, in.mem);
    return (y.detach().to(torch::kDouble) * in.grad).sum().item<double>();
  };
  const double numeric_h = (loss(in.h + eps * dh, in.u) - loss(in.h - eps * dh, in.u)) / (2 * eps);
  const double numeric_u = (loss(in.h, in.u + eps * du) - loss(in.h, in.u - eps * du)) / (2 * eps);
  EXPECT_NEAR((grads[1] * dh).sum().item<double>(), numeric_h, 1e-2 * std::abs(numeric_h) + 1e-3);
  EXPECT_NEAR((grads[2] * du).sum().item<double>(), numeric_u, 1e-2 * std::abs(numeric_u) + 1e-3);
}

TEST(FusedRelLayer, AgreesWithTheComposedLayerUnderBf16Autocast) {
  auto l = layers(0.0, 0.0);
  const auto in = inputs(4, 3, 2);
  const auto fused = [&] {
    const runtime::AutocastGuard bf16(torch::kCPU, true);
    return run(l.fused, in, 0);
  }();
  const auto composed = [&] {
    const runtime::AutocastGuard bf16(torch::kCPU, true);
    return run(l.composed, in, 0);
  }();
  expect_close(fused, composed, 2e-2, 3e-2, "bf16");
  // and both stay near float32
  expect_close(fused, run(l.composed, in, 0), 5e-2, 1e-1, "bf16 against float32");
}

TEST(FusedRelLayer, RunsAsOneAutogradNodeWithFewerOperatorCalls) {
  auto l = layers(0.1, 0.0);
  const auto in = inputs(8, 8, 2);
  // The forward and backward passes alone.
  const auto calls = [&](RelDecoderLayer& layer) {
    const auto h = in.h.clone().requires_grad_(true);
    const auto u = in.u.clone().requires_grad_(true);
    const auto v = in.v.clone().requires_grad_(true);
    const runtime::OpCounter counter;
    layer->forward(h, {in.r, u, v}, in.mask, in.mem).backward(in.grad);
    return counter.counts();
  };
  const auto fused = calls(l.fused);
  const auto composed = calls(l.composed);
  // One node, then the leaves' gradients: h, u, v and the 11 weights.
  EXPECT_EQ(fused.backward_nodes, 1 + 14);
  EXPECT_GT(composed.backward_nodes, 80);
  EXPECT_LT(fused.ops * 3, composed.ops * 2) << fused.ops << " against " << composed.ops;
}

} // namespace
} // namespace xl::nn
