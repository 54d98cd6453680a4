// The character transformer: parameter counts of T12 / T64, the layer schedule at its
// boundaries, causality of every head, where each auxiliary term sends gradient, and what
// evaluation scores.
#include "xl/models/char_transformer/model.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "xl/config/config.h"
#include "xl/models/factory.h"
#include "xl/nn/masks.h"
#include "xl/nn/vanilla_decoder_layer.h"

namespace xl::models {
namespace {

config::Config char_config(const std::string& name) {
  return config::load(
      std::string(test::kSourceDir) + "/configs/char_transformer/" + name + ".yaml");
}

// The count from the architecture: per layer, attention without biases (q, k, v, o), two
// LayerNorms and the feed-forward; a position table per layer; the byte embedding; the final
// LayerNorm (pre-norm) and the output head; and 2n - 1 training heads.
struct Counts {
  int64_t inference;
  int64_t training;
};
Counts expected_counts(int64_t n_layer) {
  const int64_t d = 512;
  const int64_t v = 256;
  const int64_t layer = 4 * d * d + 2 * 2 * d + (d * 2048 + 2048) + (2048 * d + d);
  const int64_t head = d * v + v;
  const int64_t inference = n_layer * layer + n_layer * 512 * d + v * d + 2 * d + head;
  return {inference, inference + (2 * n_layer - 1) * head};
}

TEST(CharTransformerParameters, T64AndT12AsTheArchitectureAndThePaperSay) {
  for (const auto& [name, n_layer, paper_training, paper_inference] :
       {std::tuple<const char*, int64_t, double, double>{"enwik8_t64", 64, 235.5e6, 218.7e6},
        {"enwik8_t12", 12, 44.3e6, 41.1e6}}) {
    SCOPED_TRACE(name);
    const auto model =
        std::dynamic_pointer_cast<CharTransformerImpl>(build_model(char_config(name), 256));
    ASSERT_TRUE(model);
    const auto expected = expected_counts(n_layer);
    EXPECT_EQ(count_parameters(*model), expected.training);
    EXPECT_EQ(model->inference_parameters(), expected.inference);
    // The paper's rounded figures (its arithmetic counts attention biases, which
    // tensor2tensor's attention does not have): within 0.5%.
    EXPECT_NEAR(count_parameters(*model), paper_training, 0.005 * paper_training);
    EXPECT_NEAR(model->inference_parameters(), paper_inference, 0.005 * paper_inference);
  }
  EXPECT_EQ(expected_counts(64).training, 235340800);
  EXPECT_EQ(expected_counts(64).inference, 218662144);
  EXPECT_EQ(expected_counts(12).training, 44233728);
  EXPECT_EQ(expected_counts(12).inference, 41213184);
}

// n = 4 layers over 80 steps: layer l stops after l * 10 steps are done.
TEST(LayerSchedule, StopsLayerLAtLOverTwoNOfTraining) {
  LayerSchedule s;
  s.n_layer = 4;
  s.max_step = 80;
  const auto at = [&](int64_t step) { return layer_weights(s, step); };
  EXPECT_EQ(at(1), (std::vector<double>{1, 1, 1, 1}));
  for (int64_t l = 1; l < 4; ++l) {
    // Step 10 l is the last with l * 10 - 1 steps done; at step 10 l + 1 they are l * 10.
    EXPECT_EQ(at(10 * l)[static_cast<size_t>(l - 1)], 1.0) << "layer " << l;
    EXPECT_EQ(at(10 * l + 1)[static_cast<size_t>(l - 1)], 0.0) << "layer " << l;
  }
  EXPECT_EQ(at(31), (std::vector<double>{0, 0, 0, 1})); // half of training done
  EXPECT_EQ(at(80), (std::vector<double>{0, 0, 0, 1}));

  s.mean = true;
  EXPECT_EQ(at(1), (std::vector<double>{0.25, 0.25, 0.25, 0.25}));
  EXPECT_EQ(at(15), (std::vector<double>{0, 1.0 / 3, 1.0 / 3, 1.0 / 3}));
  s.mean = false;
  s.decay = LayerDecay::kLinear;
  EXPECT_EQ(at(1), (std::vector<double>{1, 1, 1, 1}));
  EXPECT_DOUBLE_EQ(at(6)[0], 0.5);  // 5 of layer 1's 10 steps done
  EXPECT_DOUBLE_EQ(at(11)[1], 0.5); // 10 of layer 2's 20
  EXPECT_EQ(at(11)[0], 0.0);
  s.intermediate = false;
  EXPECT_EQ(at(1), (std::vector<double>{0, 0, 0, 1}));
}

// A tiny model with every loss: 3 layers, t+1 and t+2 heads, over 100 steps.
CharTransformerOptions char_options(bool multiple_positions = true) {
  CharLosses losses;
  losses.multiple_positions = multiple_positions;
  losses.schedule.n_layer = 3;
  losses.schedule.max_step = 100;
  return CharTransformerOptions(
             20, {3, nn::DecoderLayerOptions(nn::AttentionOptions(16, 2, 8).pre_lnorm(true), 32)})
      .n_ctx(12)
      .losses(losses);
}

sources::Batch window(int64_t len, int64_t batch, int64_t seed) {
  torch::manual_seed(seed);
  const auto ids = torch::randint(20, {len + 1, batch});
  sources::Batch b;
  b.tokens = ids.narrow(0, 0, len);
  b.targets = ids.narrow(0, 1, len);
  b.n_targets = b.targets.numel();
  return b;
}

std::map<std::string, LossTerm> by_name(const ModelOutput& out) {
  std::map<std::string, LossTerm> terms;
  for (const auto& t : out.terms) {
    terms.emplace(t.name, t);
  }
  return terms;
}

TEST(CharTransformer, TermsFollowTheScheduleAndKeepTheirOrder) {
  torch::manual_seed(0);
  CharTransformerImpl model(char_options());
  const auto batch = window(10, 3, 1);
  ForwardArgs args;
  args.step = 1;
  auto out = model.forward(batch, {}, args);
  std::vector<std::string> names;
  for (const auto& t : out.terms) {
    names.push_back(t.name);
  }
  EXPECT_EQ(
      names, (std::vector<std::string>{"lm", "l1/t+1", "l1/t+2", "l2/t+1", "l2/t+2", "l3/t+2"}));
  const auto terms = by_name(out);
  EXPECT_EQ(terms.at("lm").count, 30);
  EXPECT_EQ(terms.at("l1/t+2").count, 27); // the last position has no t+2 target
  EXPECT_DOUBLE_EQ(terms.at("l1/t+2").weight, 0.5);
  // Layer 1 stops after 100 / 6 steps are done, layer 2 after 100 / 3: same names, count 0.
  args.step = 18;
  out = model.forward(batch, {}, args);
  ASSERT_EQ(out.terms.size(), names.size());
  EXPECT_EQ(by_name(out).at("l1/t+1").count, 0);
  EXPECT_EQ(by_name(out).at("l1/t+1").weight, 0.0);
  EXPECT_EQ(by_name(out).at("l2/t+1").count, 30);

  // Each loss switched off takes its terms (and heads) with it.
  auto options = char_options();
  auto& losses = options.losses();
  losses.schedule.intermediate = false;
  const auto names_of = [&](CharTransformerImpl& m) {
    std::vector<std::string> out_names;
    for (const auto& t : m.forward(batch, {}, args).terms) {
      out_names.push_back(t.name);
    }
    return out_names;
  };
  CharTransformerImpl last_layer_only(options);
  EXPECT_EQ(names_of(last_layer_only), (std::vector<std::string>{"lm", "l3/t+2"}));
  losses.target_weights = {1.0};
  CharTransformerImpl plain(options);
  EXPECT_EQ(names_of(plain), (std::vector<std::string>{"lm"}));
  EXPECT_FALSE(plain.heads);

  // One position: t+1 at the last, t+2 at the one before.
  CharTransformerImpl last(char_options(false));
  args.step = 1;
  const auto one = by_name(last.forward(batch, {}, args));
  EXPECT_EQ(one.at("lm").count, 3);
  EXPECT_EQ(one.at("l2/t+2").count, 3);

  // Evaluation: the last layer's t+1 head on the targets only.
  model.eval();
  sources::Batch scored = batch;
  scored.targets = batch.targets.narrow(0, 7, 3);
  scored.n_targets = 9;
  out = model.forward(scored, {}, args);
  ASSERT_EQ(out.terms.size(), 1U);
  EXPECT_EQ(out.terms[0].name, "lm");
  EXPECT_EQ(out.terms[0].count, 9);
}

// Generation's distribution is the last position's, with or without targets to score.
TEST(CharTransformer, NextTokenLogProbsScoreTheLastTargetWithoutTargetsToo) {
  torch::manual_seed(0);
  CharTransformerImpl model(char_options());
  model.eval();
  const auto batch = window(10, 3, 2);
  ForwardArgs args;
  args.log_probs = true;
  args.next_token = true;
  const auto out = model.forward(batch, {}, args);
  ASSERT_EQ(out.next_log_probs.sizes(), (std::vector<int64_t>{3, 20}));
  EXPECT_TRUE(torch::allclose(
      out.next_log_probs.gather(1, batch.targets[9].unsqueeze(1)).squeeze(1),
      out.log_probs[9],
      1e-6,
      1e-6));
  sources::Batch tokens_only;
  tokens_only.tokens = batch.tokens;
  ForwardArgs next;
  next.next_token = true;
  const auto alone = model.forward(tokens_only, {}, next);
  EXPECT_TRUE(alone.terms.empty());
  EXPECT_TRUE(torch::equal(alone.next_log_probs, out.next_log_probs));
  EXPECT_THROW(model.forward(tokens_only, {}, {}), c10::Error);
}

// Changing the bytes after position p changes no prediction at or before p, in any head.
TEST(CharTransformer, EveryHeadIsCausal) {
  torch::manual_seed(0);
  CharTransformerImpl model(char_options());
  model.eval();
  const auto a = window(10, 2, 3);
  auto b = a;
  b.tokens = a.tokens.clone();
  b.tokens.narrow(0, 6, 4).random_(0, 20);
  torch::NoGradGuard no_grad;
  const auto logits = [&](const sources::Batch& x) {
    std::vector<torch::Tensor> all;
    auto h = model.word_embedding(x.tokens);
    const auto mask = nn::causal_mask(10, 0, false, 0);
    for (int64_t l = 0; l < 3; ++l) {
      h = h + model.positions(l, 0, 10);
      h = model.layers->ptr<nn::VanillaDecoderLayerImpl>(l)->forward(h, mask, torch::Tensor());
      for (int64_t k = 0; k < 2; ++k) {
        const auto x_norm = model.final_norm(h);
        all.push_back(l == 2 && k == 0 ? model.out(x_norm) : model.heads->forward(l, k, x_norm));
      }
    }
    return all;
  };
  const auto la = logits(a);
  const auto lb = logits(b);
  for (size_t i = 0; i < la.size(); ++i) {
    EXPECT_TRUE(torch::equal(la[i].narrow(0, 0, 6), lb[i].narrow(0, 0, 6))) << "head " << i;
    EXPECT_FALSE(torch::equal(la[i].narrow(0, 6, 4), lb[i].narrow(0, 6, 4))) << "head " << i;
  }
  // The model's own terms read exactly these logits.
  const auto out = model.forward(a, {}, {});
  const auto expected = -torch::log_softmax(la[4], -1).gather(2, a.targets.unsqueeze(2)).sum();
  EXPECT_TRUE(torch::allclose(out.terms[0].sum, expected, 1e-5, 1e-5));
}

// Layer l's terms reach layers 1..l and their own heads only; a stopped layer's heads get no
// gradient at all.
TEST(CharTransformer, AuxiliaryTermsSendGradientWhereTheyShould) {
  torch::manual_seed(0);
  CharTransformerImpl model(char_options());
  const auto batch = window(10, 2, 5);
  const auto grads_of = [&](const std::string& name, int64_t step) {
    model.zero_grad();
    ForwardArgs args;
    args.step = step;
    for (const auto& t : model.forward(batch, {}, args).terms) {
      if (t.name == name && t.count > 0) {
        t.sum.backward();
      }
    }
    std::map<std::string, bool> reached;
    for (const auto& item : model.named_parameters()) {
      const auto& grad = item.value().grad();
      reached[item.key()] = grad.defined() && grad.abs().sum().item<double>() > 0;
    }
    return reached;
  };
  auto g = grads_of("l1/t+2", 1);
  EXPECT_TRUE(g.at("layers.0.pos_ff.fc1.weight"));
  EXPECT_FALSE(g.at("layers.1.pos_ff.fc1.weight"));
  EXPECT_FALSE(g.at("layers.2.pos_ff.fc1.weight"));
  EXPECT_TRUE(g.at("heads.heads.1.weight"));  // l1/t+2
  EXPECT_FALSE(g.at("heads.heads.0.weight")); // l1/t+1
  EXPECT_FALSE(g.at("out.weight"));
  g = grads_of("lm", 1);
  EXPECT_TRUE(g.at("layers.2.pos_ff.fc1.weight"));
  EXPECT_TRUE(g.at("out.weight"));
  EXPECT_FALSE(g.at("heads.heads.4.weight")); // l3/t+2
  // After layer 1 stopped, the whole objective leaves its heads alone.
  model.zero_grad();
  ForwardArgs late;
  late.step = 50;
  torch::Tensor objective = torch::zeros({});
  for (const auto& t : model.forward(batch, {}, late).terms) {
    if (t.count > 0) {
      objective = objective + t.sum * t.weight / static_cast<double>(t.count);
    }
  }
  objective.backward();
  for (const int64_t head : {0, 1, 2, 3}) { // layers 1 and 2
    const auto& grad = model.heads->heads->ptr<torch::nn::LinearImpl>(head)->weight.grad();
    EXPECT_FALSE(grad.defined()) << "head " << head;
  }
}

TEST(CharTransformer, RefusesWindowsLongerThanItsPositions) {
  CharTransformerImpl model(char_options());
  EXPECT_THROW(model.forward(window(13, 2, 0), {}, {}), c10::Error);
}

TEST(CharTransformerConfig, BadSettingsAreClearErrors) {
  const auto load = [](const std::string& sets) {
    return test::user_error([&] {
      config::load(std::string(test::kSourceDir) + "/configs/char_transformer/tiny.yaml", {sets});
    });
  };
  EXPECT_NE(load("train.tgt_len=33").find("model.char_transformer.n_ctx = 32"), std::string::npos);
  EXPECT_NE(load("eval.mode=memory").find("has no memory"), std::string::npos);
  EXPECT_NE(load("model.char_transformer.target_weights=[]").find("t+1 weight"), std::string::npos);
}

} // namespace
} // namespace xl::models
