// The layer stack alone, on a toy model whose layer call reads a per-call tensor by name and a
// bias the model owns outside the stack: recomputation gives the plain gradients, a graph
// (emulated on the CPU) gives the eager outputs and gradients, the outside bias's included, and
// the stack keeps the cache's tails and the memory's shape.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "xl/models/layer_stack.h"
#include "xl/nn/init.h"
#include "xl/nn/vanilla_decoder_layer.h"

namespace xl::models {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kWidth = 4;
constexpr int64_t kLayers = 3;

struct ToyImpl : torch::nn::Module {
  explicit ToyImpl(bool recompute) {
    bias = register_parameter("bias", torch::randn({kWidth}));
    layers = register_layer_stack(*this, LayerStackOptions(kLayers, [](int64_t) {
                                           return torch::nn::Linear(kWidth, kWidth).ptr();
                                         }).recompute(recompute));
  }

  // [L, B, W] -> [L, B, W]: each layer tanh(linear(h) * scale + bias), `unused` passed on.
  StackOutput forward(const torch::Tensor& x, const torch::Tensor& scale, nn::Memory mems = {}) {
    return layers->forward(
        [this](const std::vector<torch::Tensor>& h, const LayerArgs& a) {
          EXPECT_FALSE(a.tensors["unused"].defined());
          const auto& linear = layers->ptr<torch::nn::LinearImpl>(static_cast<size_t>(a.index));
          return std::vector<torch::Tensor>{
              torch::tanh(linear->forward(h[0]) * a.tensors["scale"] + bias)};
        },
        StackInput{
            {x}, {{"scale", scale}, {"unused", torch::Tensor()}}, std::move(mems), nullptr, true});
  }

  torch::Tensor bias;
  LayerStack layers{nullptr};
};
TORCH_MODULE(Toy);

// Two toys with the same weights.
std::pair<Toy, Toy> twins(bool recompute_second) {
  torch::manual_seed(7);
  Toy a(false);
  Toy b(recompute_second);
  torch::NoGradGuard no_grad;
  const auto from = a->parameters();
  const auto to = b->parameters();
  for (size_t i = 0; i < from.size(); ++i) {
    to[i].copy_(from[i]);
  }
  return {a, b};
}

// The gradients of sum(out^2) over (x, scale) for each parameter, after one step.
std::vector<torch::Tensor> gradients(Toy& toy, const torch::Tensor& x, const torch::Tensor& scale) {
  toy->zero_grad();
  toy->forward(x, scale).streams[0].pow(2).sum().backward();
  std::vector<torch::Tensor> grads;
  for (const auto& p : toy->parameters()) {
    grads.push_back(p.grad().clone());
  }
  return grads;
}

void expect_same(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_TRUE(a[i].defined() && b[i].defined()) << "parameter " << i;
    EXPECT_TRUE(torch::allclose(a[i], b[i], 1e-6, 1e-6)) << "parameter " << i;
  }
}

TEST(LayerStack, RecomputationGivesThePlainGradients) {
  auto [plain, recomputed] = twins(true);
  const auto x = torch::randn({5, 2, kWidth});
  const auto scale = torch::rand({1, 1, kWidth}) + 0.5;
  expect_same(gradients(plain, x, scale), gradients(recomputed, x, scale));
}

TEST(LayerStack, AGraphGivesTheEagerNumbersAndReachesTheParametersOutsideIt) {
  auto [eager, graphed] = twins(false);
  ASSERT_EQ(use_graphs(*graphed, runtime::GraphReplay::kEmulated), "");
  ASSERT_TRUE(graphed->layers->uses_graphs());
  for (int call = 0; call < 3; ++call) { // the capture, then replays
    const auto x = torch::randn({5, 2, kWidth});
    const auto scale = torch::rand({1, 1, kWidth}) + 0.5;
    const auto want = eager->forward(x, scale);
    const auto got = graphed->forward(x, scale);
    EXPECT_TRUE(got.graphed);
    EXPECT_TRUE(torch::allclose(want.streams[0], got.streams[0], 1e-6, 1e-6)) << call;
    ASSERT_EQ(got.hiddens.size(), static_cast<size_t>(kLayers + 1));
    // The bias lives outside the stack: its gradient comes from inside the graph alone.
    const auto want_grads = gradients(eager, x, scale);
    const auto got_grads = gradients(graphed, x, scale);
    expect_same(want_grads, got_grads);
    EXPECT_GT(graphed->bias.grad().abs().sum().item<double>(), 0.0) << call;
  }
}

TEST(LayerStack, KeepsTheCachesTailsAndTellsAFullMemory) {
  Toy toy(false);
  const auto x = torch::randn({4, 2, kWidth});
  const auto scale = torch::ones({1, 1, kWidth});
  EXPECT_TRUE(full_memory({}, 0));
  EXPECT_FALSE(full_memory({}, 3));
  nn::Memory mems(kLayers, torch::zeros({3, 2, kWidth}));
  EXPECT_TRUE(full_memory(mems, 3));
  EXPECT_FALSE(full_memory(mems, 4));
  ProjectionCache cache;
  cache.layers.resize(kLayers);
  auto out = toy->forward(x, scale, mems);
  out.cache = &cache;
  const auto next = out.next_memory(mems, 3, 1);
  ASSERT_EQ(next.size(), static_cast<size_t>(kLayers));
  EXPECT_EQ(next[0].size(0), 3); // the last 3 rows before the 1 left out
  for (const auto& layer : cache.layers) {
    EXPECT_EQ(layer.tail, 1);
  }
}

TEST(LayerStack, PerCallTensorsAreReadByName) {
  const CallTensors tensors{{"mask", torch::ones({2})}, {"r", torch::Tensor()}};
  EXPECT_EQ(tensors["mask"].size(0), 2);
  EXPECT_FALSE(tensors["r"].defined());
  try {
    (void)tensors["positions"];
    ADD_FAILURE() << "no error";
  } catch (const c10::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("no per-call tensor named positions was given"));
  }
}

// A family's shape makes its stack: n_layer layers alike, recomputed where the shape asks, and
// refused without a layer or a head.
TEST(LayerStack, IsMadeFromAFamilysShape) {
  const nn::DecoderLayerOptions layer(nn::AttentionOptions(8, 2, 4), 16);
  const auto options =
      layers_alike<nn::VanillaDecoderLayer>(StackShape(3, layer).checkpoint_layers(true));
  EXPECT_EQ(options.n_layer(), 3);
  EXPECT_TRUE(options.recompute());
  const LayerStack stack(options);
  ASSERT_EQ(stack->size(), 3u);
  EXPECT_NE(stack->ptr<nn::VanillaDecoderLayerImpl>(2), nullptr);
  EXPECT_FALSE(layers_alike<nn::VanillaDecoderLayer>(StackShape(1, layer)).recompute());
  for (const auto& [n_layer, n_head] : {std::pair{0, 2}, std::pair{2, 0}}) {
    try {
      (void)layers_alike<nn::VanillaDecoderLayer>(
          StackShape(n_layer, nn::DecoderLayerOptions(nn::AttentionOptions(8, n_head, 4), 16)));
      ADD_FAILURE() << "no error for " << n_layer << " layers of " << n_head << " heads";
    } catch (const c10::Error& e) {
      EXPECT_THAT(
          e.what(),
          HasSubstr(
              "a layer stack needs at least one layer and head, got " + std::to_string(n_layer) +
              " layers of " + std::to_string(n_head) + " heads of 4"));
    }
  }
}

} // namespace
} // namespace xl::models
