#include "xl/train/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>

#include "test_util.h"
#include "xl/train/lamb.h"
#include "xl/train/schedule.h"

namespace xl::train {
namespace {

config::TrainConfig schedule(config::Scheduler kind, int64_t warmup) {
  config::TrainConfig t;
  t.scheduler = kind;
  t.lr = 1.0;
  t.warmup_step = warmup;
  t.max_step = 110;
  t.eta_min = 0.1;
  return t;
}

TEST(LRSchedule, CosineWarmsUpLinearlyThenDecaysToEtaMin) {
  const LRSchedule s(schedule(config::Scheduler::kCosine, 10));
  EXPECT_DOUBLE_EQ(s.lr(1), 0.1);
  EXPECT_DOUBLE_EQ(s.lr(5), 0.5);
  EXPECT_DOUBLE_EQ(s.lr(10), 1.0);
  EXPECT_NEAR(s.lr(60), 0.1 + 0.9 * 0.5, 1e-12); // half way through the decay
  EXPECT_NEAR(s.lr(110), 0.1, 1e-12);
}

TEST(LRSchedule, PolyWarmsUpLinearlyThenDecaysLinearlyToEtaMin) {
  const LRSchedule s(schedule(config::Scheduler::kPoly, 10));
  EXPECT_DOUBLE_EQ(s.lr(5), 0.5);
  EXPECT_DOUBLE_EQ(s.lr(10), 1.0);
  EXPECT_NEAR(s.lr(35), 0.1 + 0.9 * 0.75, 1e-12); // a quarter of the decay
  EXPECT_NEAR(s.lr(60), 0.1 + 0.9 * 0.5, 1e-12);
  EXPECT_NEAR(s.lr(110), 0.1, 1e-12);
}

TEST(LRSchedule, InverseSquareRootFollowsKimiyoung) {
  const LRSchedule s(schedule(config::Scheduler::kInvSqrt, 16));
  EXPECT_DOUBLE_EQ(s.lr(4), 4.0 / 64.0);
  EXPECT_DOUBLE_EQ(s.lr(16), 0.25); // continuous: 16 / 16^1.5 == 1 / sqrt(16)
  EXPECT_DOUBLE_EQ(s.lr(100), 0.1);
  const LRSchedule none(schedule(config::Scheduler::kInvSqrt, 0));
  EXPECT_DOUBLE_EQ(none.lr(1), 1.0);
  EXPECT_DOUBLE_EQ(none.lr(4), 0.5);
}

TEST(LRSchedule, PlateauDecaysAfterPatienceAndRoundTrips) {
  auto t = schedule(config::Scheduler::kPlateau, 0);
  t.patience = 1;
  t.decay_rate = 0.5;
  t.lr_min = 0.2;
  LRSchedule s(t);
  EXPECT_FALSE(s.observe(3.0));
  EXPECT_FALSE(s.observe(3.0)); // first bad evaluation: within patience
  EXPECT_TRUE(s.observe(3.1));  // second: decay
  EXPECT_DOUBLE_EQ(s.lr(50), 0.5);
  EXPECT_FALSE(s.observe(2.0));
  LRSchedule restored(t);
  test::transfer(s, restored);
  EXPECT_DOUBLE_EQ(restored.lr(50), 0.5);
  EXPECT_FALSE(restored.observe(2.0)); // best (2.0) came back too: a tie is one bad eval
  EXPECT_TRUE(restored.observe(2.0));
  EXPECT_DOUBLE_EQ(restored.lr(50), 0.25);
  EXPECT_FALSE(restored.observe(2.0));
  EXPECT_TRUE(restored.observe(2.0));
  EXPECT_DOUBLE_EQ(restored.lr(50), 0.2); // 0.125 floored at lr_min
}

TEST(Lamb, OneStepMatchesTheFormula) {
  auto w = torch::tensor({3.0, 4.0}, torch::dtype(torch::kDouble)).requires_grad_();
  w.mutable_grad() = torch::tensor({1.0, -2.0}, torch::kDouble);
  Lamb lamb({{{w}, 1.0, 0.01}}, 0.1, 0.9, 0.999, 1e-6);
  lamb.step();
  // m = 0.1 g, v = 0.001 g^2 -> r = m / (sqrt(v) + eps) + wd w
  const auto g = torch::tensor({1.0, -2.0}, torch::kDouble);
  const auto w0 = torch::tensor({3.0, 4.0}, torch::kDouble);
  const auto r = 0.1 * g / ((0.001 * g * g).sqrt() + 1e-6) + 0.01 * w0;
  const double trust = 5.0 / (r.norm().item<double>() + 1e-6);
  EXPECT_TRUE(torch::allclose(w.detach(), w0 - 0.1 * trust * r, 1e-12, 1e-12));
}

TEST(Optimizers, EveryKindStepsAndSetsItsRate) {
  for (const auto& [kind, name] : config::Choices<config::Optim>::all) {
    config::TrainConfig t;
    t.optim = kind;
    t.lr = 0.1;
    t.mom = 0.9;
    auto w = torch::ones({3}, torch::requires_grad());
    auto optimizer = make_optimizer(t, {w});
    optimizer->zero_grad();
    (w * torch::tensor({1.0f, 2.0f, 3.0f})).sum().backward();
    optimizer->set_lr(0.01);
    optimizer->step();
    EXPECT_TRUE((w.detach() < 1.0).all().item<bool>()) << name;
    EXPECT_LT(w.detach()[0].item<double>(), 1.0) << name;
    EXPECT_GT(w.detach()[0].item<double>(), 0.9) << name << ": the new rate was used";
  }
}

// The fused Adam step keeps LibTorch's state, so it matches LibTorch's step and a checkpoint of
// one continues in the other.
TEST(Optimizers, FusedAdamMatchesLibTorchsStepAndState) {
  for (const auto kind : {config::Optim::kAdam, config::Optim::kAdamW}) {
    config::TrainConfig t;
    t.optim = kind;
    t.lr = 0.01;
    t.weight_decay = 0.1;
    torch::manual_seed(3);
    const std::vector<torch::Tensor> start{torch::randn({4, 5}), torch::randn({7})};
    std::vector<std::vector<torch::Tensor>> grads;
    for (int step = 0; step < 6; ++step) {
      grads.push_back({torch::randn({4, 5}), torch::randn({7})});
    }
    std::vector<std::vector<torch::Tensor>> finals;
    for (const auto& [first, second] : std::vector<std::pair<bool, bool>>{
             {false, false}, {true, true}, {true, false}, {false, true}}) {
      std::vector<torch::Tensor> params;
      for (const auto& p : start) {
        params.push_back(p.clone().requires_grad_());
      }
      t.fused_optim = first;
      auto optimizer = make_optimizer(t, params);
      const auto run = [&](Optimizer& o, size_t from, size_t to) {
        for (size_t s = from; s < to; ++s) {
          for (size_t i = 0; i < params.size(); ++i) {
            params[i].mutable_grad() = grads[s][i].clone();
          }
          o.step();
        }
      };
      run(*optimizer, 0, 3);
      // Halfway, the state goes through a checkpoint into an optimizer of the other kind.
      t.fused_optim = second;
      auto resumed = make_optimizer(t, params);
      test::transfer(*optimizer, *resumed);
      run(*resumed, 3, 6);
      finals.push_back({params[0].detach(), params[1].detach()});
      const auto state = resumed->state_tensors();
      EXPECT_EQ(state.size(), 6U) << "exp_avg, exp_avg_sq, max_exp_avg_sq per parameter";
    }
    for (size_t run = 1; run < finals.size(); ++run) {
      for (size_t i = 0; i < 2; ++i) {
        EXPECT_TRUE(torch::allclose(finals[run][i], finals[0][i], 1e-6, 1e-6))
            << "run " << run << " parameter " << i << ": "
            << (finals[run][i] - finals[0][i]).abs().max().item<double>();
      }
    }
    // Six steps of lr 0.01 moved the parameters well beyond the tolerance.
    EXPECT_GT((finals[0][0] - start[0]).abs().max().item<double>(), 0.03);
  }
}

} // namespace
} // namespace xl::train
