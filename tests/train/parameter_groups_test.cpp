// train.freeze, train.lr_layer_decay and train.decay_vectors: which parameters train, at which
// rate and weight decay.
#include "xl/train/parameter_groups.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "test_util.h"
#include "xl/config/config.h"
#include "xl/models/factory.h"
#include "xl/train/optimizer.h"
#include "xl/train/step.h"

namespace xl::train {
namespace {

using ::testing::HasSubstr;

// tiny_cls.yaml (2 layers of an XLNet with a 2-class head) with `overrides`.
config::Config classifier(std::vector<std::string> overrides) {
  return config::load(std::string(test::kSourceDir) + "/configs/xlnet/tiny_cls.yaml", overrides);
}

sources::Batch reviews(int64_t len, int64_t rows) {
  sources::Batch batch;
  batch.tokens = torch::randint(9, 50, {len, rows});
  batch.segment_ids = torch::zeros({len, rows}, torch::kLong);
  batch.labels = torch::randint(2, {rows});
  batch.n_targets = rows;
  return batch;
}

std::map<std::string, torch::Tensor> snapshot(const torch::nn::Module& model) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& item : model.named_parameters()) {
    out.emplace(item.key(), item.value().detach().clone());
  }
  return out;
}

// One step of the plan's optimizer at rate 0.1 with every gradient `fill`; the parameters as
// they were before it.
std::map<std::string, torch::Tensor> sgd_step(
    const config::Config& config,
    torch::nn::Module& model,
    const ParameterPlan& plan,
    double fill) {
  const auto before = snapshot(model);
  auto optimizer = make_optimizer(config.train, plan.groups);
  for (auto& p : model.parameters()) {
    p.mutable_grad() = torch::full_like(p, fill);
  }
  optimizer->set_lr(0.1);
  optimizer->step();
  return before;
}

// A linear probe: everything but the classification head frozen. The frozen parameters are
// listed, compute no gradient and stay exactly as they were; the head trains.
TEST(ParameterPlan, FrozenParametersReceiveNoUpdateAndAreListed) {
  const auto config = classifier(
      {"train.freeze=[word_embedding.weight, mask_emb, 'r_*_bias', lm_bias, 'layers.*']",
       "train.lr=0.01"});
  torch::manual_seed(1);
  auto model = models::build_model(config, 50);
  const auto plan = plan_parameters(config, *model);
  std::vector<std::string> body;
  int64_t head = 0;
  for (const auto& item : model->named_parameters()) {
    const bool in_head =
        item.key().rfind("summary.", 0) == 0 || item.key().rfind("logits_proj.", 0) == 0;
    if (in_head) {
      head += item.value().numel();
    } else {
      body.push_back(item.key());
    }
  }
  EXPECT_EQ(plan.frozen, body);
  EXPECT_EQ(plan.trainable, head);
  EXPECT_EQ(plan.total, models::count_parameters(*model));
  EXPECT_THAT(plan.describe(), HasSubstr("frozen by train.freeze"));
  EXPECT_THAT(plan.describe(), HasSubstr("layers.1.ff.layer_norm.weight"));

  const auto before = snapshot(*model);
  auto optimizer = make_optimizer(config.train, plan.groups);
  std::vector<nn::Memory> mems(1);
  StepOptions options;
  for (int64_t step = 1; step <= 2; ++step) {
    const auto result =
        read_step(train_step(*model, *optimizer, reviews(12, 4), false, mems, 0.01, step, options));
    ASSERT_TRUE(result.finite);
  }
  for (const auto& item : model->named_parameters()) {
    const auto& name = item.key();
    const bool frozen = std::find(body.begin(), body.end(), name) != body.end();
    if (frozen) {
      EXPECT_FALSE(item.value().grad().defined()) << name;
      EXPECT_TRUE(torch::equal(item.value(), before.at(name))) << name;
    } else {
      EXPECT_FALSE(torch::equal(item.value(), before.at(name))) << name;
    }
  }
}

// Plain SGD makes the rates visible: one step with every gradient 1 moves each parameter by its
// group's rate. 3 layers at lr_layer_decay 0.5: layers.0 x0.25, layers.1 x0.5, layers.2 and
// everything outside the layers x1.
TEST(ParameterPlan, LayerDecayGivesTheRatesWrittenByHand) {
  const auto config = classifier(
      {"model.n_layer=3", "train.optim=sgd", "train.lr=0.1", "train.lr_layer_decay=0.5"});
  auto model = models::build_model(config, 50);
  const auto plan = plan_parameters(config, *model);
  EXPECT_EQ(plan.layer_rates, (std::vector<std::string>{"layers.0 x0.25", "layers.1 x0.5"}));
  const auto before = sgd_step(config, *model, plan, 1.0);
  const std::map<std::string, double> expected{
      {"layers.0.ff.fc1.weight", -0.025},
      {"layers.1.rel_attn.o_net.weight", -0.05},
      {"layers.2.ff.layer_norm.bias", -0.1},
      {"word_embedding.weight", -0.1},
      {"logits_proj.weight", -0.1}};
  const auto params = model->named_parameters();
  for (const auto& [name, step] : expected) {
    ASSERT_TRUE(params.contains(name)) << name;
    EXPECT_TRUE(torch::allclose(
        params[name] - before.at(name), torch::full_like(params[name], step), 0, 1e-6))
        << name;
  }
}

// A model whose stack is named otherwise would take the decay silently: it is refused.
TEST(ParameterPlan, LayerDecayWithoutALayerStackIsRefused) {
  const auto config = classifier({"train.lr_layer_decay=0.5"});
  torch::nn::Sequential model(torch::nn::Linear(4, 4), torch::nn::Linear(4, 2));
  EXPECT_THAT(
      test::user_error([&] { plan_parameters(config, *model); }),
      HasSubstr("train.lr_layer_decay is 0.5, but this model has no trainable layer stack named "
                "`layers` (parameters layers.<i>.*) for it to reach: leave it at 1 (its "
                "parameters: 0.weight"));
}

// decay_vectors false: weight decay shrinks the matrices and leaves every 1-D parameter
// (LayerNorm gains and biases, bias vectors) alone.
TEST(ParameterPlan, VectorsCanBeLeftOutOfWeightDecay) {
  const auto config = classifier(
      {"train.optim=sgd", "train.lr=0.1", "train.weight_decay=0.5", "train.decay_vectors=false"});
  auto model = models::build_model(config, 50);
  const auto plan = plan_parameters(config, *model);
  EXPECT_THAT(plan.describe(), HasSubstr("no weight decay on"));
  const auto before = sgd_step(config, *model, plan, 0.0);
  for (const auto& item : model->named_parameters()) {
    const auto& old = before.at(item.key());
    const auto expected = item.value().dim() <= 1 ? old : old * (1.0 - 0.05);
    EXPECT_TRUE(torch::allclose(item.value(), expected, 1e-6, 1e-7)) << item.key();
  }
}

TEST(ParameterPlan, BadPatternsAreConfigErrorsNamingTheKey) {
  auto model = models::build_model(classifier({}), 50);
  const auto message = [&](const std::string& freeze) {
    try {
      plan_parameters(classifier({"train.freeze=" + freeze}), *model);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(
      message("[word_embedding.weight, encoder.*]"),
      HasSubstr("train.freeze[1]: 'encoder.*' names no parameter of this model; its "
                "parameters are mask_emb, r_w_bias"));
  // Nothing left to train: a pretraining model has no head to probe.
  auto lm = models::build_model(classifier({"model.xlnet.n_class=0"}), 50);
  EXPECT_THROW(
      {
        try {
          plan_parameters(classifier({"model.xlnet.n_class=0", "train.freeze=['*']"}), *lm);
        } catch (const ConfigError& e) {
          EXPECT_THAT(e.what(), HasSubstr("model.xlnet.n_class > 0"));
          throw;
        }
      },
      ConfigError);
}

TEST(LayerOf, ReadsTheIndexOfLayersOnly) {
  EXPECT_EQ(layer_of("layers.0.attn.q.weight"), 0);
  EXPECT_EQ(layer_of("layers.12.ff.layer_1.bias"), 12);
  EXPECT_EQ(layer_of("word_embedding.weight"), -1);
  EXPECT_EQ(layer_of("layers.x.weight"), -1);
  EXPECT_EQ(layer_of("mylayers.1.weight"), -1);
}

} // namespace
} // namespace xl::train
