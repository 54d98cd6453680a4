#include "xl/train/optimizer.h"

#include "xl/train/adam.h"
#include "xl/train/lamb.h"
#include "xl/train/sgd.h"

namespace xl::train {

std::unique_ptr<Optimizer> make_optimizer(
    const config::TrainConfig& t,
    std::vector<ParameterGroup> groups) {
  switch (t.optim) {
    case config::Optim::kAdam:
    case config::Optim::kAdamW:
      return make_adam(
          groups, {t.lr, t.beta1, t.beta2, t.eps, t.optim == config::Optim::kAdamW, t.fused_optim});
    case config::Optim::kSgd:
      return make_sgd(groups, t.lr, t.mom, t.fused_optim);
    case config::Optim::kLamb:
      return std::make_unique<Lamb>(std::move(groups), t.lr, t.beta1, t.beta2, t.eps);
  }
  TORCH_CHECK(false, "unhandled train.optim");
}

std::unique_ptr<Optimizer> make_optimizer(
    const config::TrainConfig& t,
    std::vector<torch::Tensor> params) {
  return make_optimizer(t, std::vector<ParameterGroup>{{std::move(params), 1.0, t.weight_decay}});
}

} // namespace xl::train
