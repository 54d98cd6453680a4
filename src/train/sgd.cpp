#include "xl/train/sgd.h"

#include "xl/train/torch_optimizer.h"

namespace xl::train {

namespace {

class Sgd : public TorchOptimizer<torch::optim::SGD, torch::optim::SGDOptions> {
 public:
  Sgd(const std::vector<ParameterGroup>& groups,
      const torch::optim::SGDOptions& defaults,
      bool fused)
      : TorchOptimizer(groups, defaults, fused) {}

  std::vector<torch::Tensor> state_tensors() const override {
    std::vector<torch::Tensor> out;
    for (const auto& [key, state] : optimizer_.state()) {
      out.push_back(static_cast<const torch::optim::SGDParamState&>(*state).momentum_buffer());
    }
    return out;
  }

 private:
  // Every parameter of a group at once (a momentum buffer starts at the first gradient, as a
  // zero buffer after one update does), on LibTorch's own state; skipped on the device when
  // `skip` is 1.
  void fused_step(const torch::Tensor& skip) override {
    torch::NoGradGuard no_grad;
    for (auto& group : optimizer_.param_groups()) {
      const auto& o = static_cast<const torch::optim::SGDOptions&>(group.options());
      TORCH_CHECK(o.dampening() == 0.0, "the fused SGD step has no dampening");
      std::vector<torch::Tensor> params, grads, buffers;
      for (auto& p : group.params()) {
        if (!p.grad().defined()) {
          continue;
        }
        params.push_back(p);
        grads.push_back(p.grad());
        if (o.momentum() != 0.0) {
          buffers.push_back(buffer_of(p));
        }
      }
      if (params.empty()) {
        continue;
      }
      at::_fused_sgd_(
          params,
          grads,
          buffers,
          o.weight_decay(),
          o.momentum(),
          o.lr(),
          o.dampening(),
          o.nesterov(),
          /*maximize=*/false,
          /*is_first_step=*/false,
          std::nullopt,
          skip.defined() ? std::optional<torch::Tensor>(skip) : std::nullopt);
    }
  }

  // p's momentum buffer, zero until its first update.
  torch::Tensor buffer_of(const torch::Tensor& p) {
    auto& slot = optimizer_.state()[p.unsafeGetTensorImpl()];
    if (!slot) {
      auto state = std::make_unique<torch::optim::SGDParamState>();
      state->momentum_buffer(torch::zeros_like(p, torch::MemoryFormat::Preserve));
      slot = std::move(state);
    }
    return static_cast<torch::optim::SGDParamState&>(*slot).momentum_buffer();
  }
};

} // namespace

std::unique_ptr<Optimizer> make_sgd(
    const std::vector<ParameterGroup>& groups,
    double lr,
    double momentum,
    bool fused) {
  return std::make_unique<Sgd>(groups, torch::optim::SGDOptions(lr).momentum(momentum), fused);
}

} // namespace xl::train
