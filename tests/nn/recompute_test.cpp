// Activation checkpointing gives the plain path's numbers: gradients, losses and the random
// stream after a step, for a bare block and for every model family with dropout on (a replay
// that drew other dropout masks would give other gradients), in float32 and under bf16
// autocast.
#include "xl/nn/recompute.h"

#include <gtest/gtest.h>

#include <deque>
#include <set>

#include "test_util.h"
#include "xl/config/config.h"
#include "xl/models/factory.h"
#include "xl/sources/dataset.h"
#include "xl/train/optimizer.h"
#include "xl/train/step.h"

namespace xl::train {
namespace {

// Whether the autograd graph behind `t` holds a node called `name`.
bool graph_has(const torch::Tensor& t, const std::string& name) {
  std::deque<torch::autograd::Node*> queue{t.grad_fn().get()};
  std::set<torch::autograd::Node*> seen;
  while (!queue.empty()) {
    auto* node = queue.front();
    queue.pop_front();
    if (node == nullptr || !seen.insert(node).second) {
      continue;
    }
    if (node->name() == name) {
      return true;
    }
    for (const auto& edge : node->next_edges()) {
      queue.push_back(edge.function.get());
    }
  }
  return false;
}

constexpr const char* kReplay = "xl::nn::CheckpointBackward";

TEST(ActivationCheckpointing, ABlockGivesThePlainGradientsAndLeavesTheRandomStreamAsItWas) {
  torch::manual_seed(1);
  torch::nn::Linear linear(6, 6);
  const auto x0 = torch::randn({5, 6});
  const auto y0 = torch::randn({5, 6});
  // Two inputs, two outputs, a parameter inside and dropout.
  const nn::Block block = [&](const std::vector<torch::Tensor>& in) {
    const auto a = torch::dropout(linear(in[0]), 0.5, true);
    return std::vector<torch::Tensor>{a * in[1], a.tanh()};
  };
  const auto run = [&](bool checkpointed) {
    linear->zero_grad();
    auto x = x0.clone().requires_grad_(true);
    auto y = y0.clone().requires_grad_(true);
    torch::manual_seed(9);
    const auto out = checkpointed ? nn::recompute(block, {x, y}) : block({x, y});
    EXPECT_EQ(graph_has(out[0], kReplay), checkpointed);
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

struct Steps {
  std::vector<double> sums; // every term of both steps
  std::vector<torch::Tensor> grads;
  torch::Tensor next_draws;
};

// Two training steps (the memory carried from the first into the second) from the same
// initial weights and batches.
Steps two_steps(
    config::Config c,
    bool checkpointed,
    bool bf16,
    const std::vector<sources::Batch>& batches,
    bool continues,
    int64_t n_token) {
  c.train.activation_checkpointing = checkpointed;
  torch::manual_seed(5);
  auto model = models::build_model(c, n_token);
  model->train();
  auto optimizer = make_optimizer(c.train, model->parameters());
  std::vector<nn::Memory> mems(1);
  StepOptions options;
  options.clip = c.train.clip;
  options.bf16 = bf16;
  Steps steps;
  for (size_t s = 0; s < batches.size(); ++s) {
    const auto result = read_step(train_step(
        *model,
        *optimizer,
        batches[s],
        continues,
        mems,
        c.train.lr,
        static_cast<int64_t>(s) + 1,
        options));
    EXPECT_TRUE(result.finite);
    for (const auto& term : result.terms) {
      steps.sums.push_back(term.sum);
    }
  }
  for (const auto& p : model->parameters()) {
    EXPECT_EQ(p.scalar_type(), torch::kFloat); // master weights stay float32
    steps.grads.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros({0}));
  }
  steps.next_draws = torch::rand({4});
  // The flag reaches the layers: the graph holds replay nodes exactly when it is on.
  const auto out = model->forward(batches[0], {}, {});
  EXPECT_EQ(graph_has(out.terms.front().sum, kReplay), checkpointed);
  return steps;
}

TEST(ActivationCheckpointing, EveryFamilyTrainsAsWithoutIt) {
  // Every family's tiny configs, and Transformer-XL's learned positions (a table per layer).
  std::vector<std::pair<std::string, std::vector<std::string>>> cases;
  for (const std::string& name : test::tiny_configs()) {
    cases.push_back({name, {}});
  }
  cases.push_back( // the tables cover the evaluation's memory too
      {"configs/txl/tiny.yaml",
       {"model.transformer_xl.attn_type=learned", "model.transformer_xl.n_ctx=48"}});
  for (const auto& [name, variant] : cases) {
    SCOPED_TRACE(name + (variant.empty() ? "" : " " + variant.front()));
    std::vector<std::string> sets{"model.dropout=0.3", "model.dropatt=0.2", "train.threads=1"};
    sets.insert(sets.end(), variant.begin(), variant.end());
    const auto c = config::load(std::string(test::kSourceDir) + "/" + name, sets);
    const int64_t n_token = 3000;
    torch::manual_seed(2);
    const auto dataset = models::random_dataset(c, n_token, 4000);
    auto source = dataset->train_source();
    const std::vector<sources::Batch> batches{
        sources::next_cycling(*source), sources::next_cycling(*source)};
    const bool continues = source->continues_streams();
    // Under bf16 autocast too (on the CPU here, as on CUDA): the replay runs under the
    // forward's autocast, so it computes in the same dtypes.
    for (const bool bf16 : {false, true}) {
      SCOPED_TRACE(bf16 ? "bf16" : "float32");
      const auto plain = two_steps(c, false, bf16, batches, continues, n_token);
      const auto replayed = two_steps(c, true, bf16, batches, continues, n_token);
      ASSERT_EQ(plain.sums.size(), replayed.sums.size());
      for (size_t i = 0; i < plain.sums.size(); ++i) {
        EXPECT_NEAR(plain.sums[i], replayed.sums[i], 1e-6 * std::abs(plain.sums[i]))
            << "term " << i;
      }
      ASSERT_EQ(plain.grads.size(), replayed.grads.size());
      for (size_t i = 0; i < plain.grads.size(); ++i) {
        EXPECT_TRUE(torch::allclose(plain.grads[i], replayed.grads[i], 1e-5, 1e-7))
            << "parameter " << i;
      }
      EXPECT_TRUE(torch::equal(plain.next_draws, replayed.next_draws));
    }
  }
}

} // namespace
} // namespace xl::train
