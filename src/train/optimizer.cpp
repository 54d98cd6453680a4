#include "xl/train/optimizer.h"

#include <unordered_map>

#include "xl/train/lamb.h"
#include "xl/train/multi_tensor.h"

namespace xl::train {

namespace {

template <class Torch>
constexpr bool kIsAdam =
    std::is_same_v<Torch, torch::optim::Adam> || std::is_same_v<Torch, torch::optim::AdamW>;

template <class Torch>
using AdamState = std::conditional_t<
    std::is_same_v<Torch, torch::optim::Adam>,
    torch::optim::AdamParamState,
    torch::optim::AdamWParamState>;

// Any LibTorch optimizer, one LibTorch parameter group per ParameterGroup; the learning rate
// lives in the groups' options. Adam and AdamW can run their update as one fused multi-tensor
// kernel on LibTorch's own state, so checkpoints do not depend on the path.
template <class Torch, class Options>
class TorchOptimizer : public Optimizer {
 public:
  TorchOptimizer(
      const std::vector<ParameterGroup>& groups,
      const Options& defaults,
      bool fused = false)
      : optimizer_(torch_groups(groups, defaults), defaults), fused_(fused) {
    for (const auto& group : groups) {
      lr_scale_.push_back(group.lr_scale);
      weight_decay_.push_back(group.weight_decay);
    }
  }
  void step() override {
    if (fused_) {
      fused_step({});
    } else {
      optimizer_.step();
    }
  }
  void step_unless(const torch::Tensor& skip) override {
    if (fused_) {
      fused_step(skip);
    } else {
      Optimizer::step_unless(skip);
    }
  }
  void zero_grad() override {
    // None, as LibTorch's zero_grad leaves them, without its detach_ of each first: no
    // gradient here is part of a graph.
    for (auto& group : optimizer_.param_groups()) {
      for (auto& p : group.params()) {
        p.mutable_grad().reset();
      }
    }
  }
  void set_lr(double lr) override {
    auto& groups = optimizer_.param_groups();
    for (size_t i = 0; i < groups.size(); ++i) {
      static_cast<Options&>(groups[i].options()).lr(lr * lr_scale_[i]);
    }
  }
  void save(torch::serialize::OutputArchive& archive) const override {
    read_step_counts();
    optimizer_.save(archive);
  }
  void load(torch::serialize::InputArchive& archive) override {
    optimizer_.load(archive);
    device_steps_.clear(); // made again from the loaded counts
    // The saved options come back with the state; the weight decay is the config's (a resume
    // may change it), and set_lr sets the rates before every step.
    auto& groups = optimizer_.param_groups();
    for (size_t i = 0; i < groups.size(); ++i) {
      static_cast<Options&>(groups[i].options()).weight_decay(weight_decay_[i]);
    }
  }
  std::vector<torch::Tensor> state_tensors() const override {
    std::vector<torch::Tensor> out;
    for (const auto& [key, state] : optimizer_.state()) {
      if constexpr (std::is_same_v<Torch, torch::optim::SGD>) {
        out.push_back(static_cast<const torch::optim::SGDParamState&>(*state).momentum_buffer());
      } else {
        const auto& s = static_cast<const AdamState<Torch>&>(*state);
        out.insert(out.end(), {s.exp_avg(), s.exp_avg_sq(), s.max_exp_avg_sq()});
      }
    }
    return out;
  }

 private:
  // The update as one multi-tensor kernel per group, on LibTorch's own state (checkpoints do not
  // depend on the path): the same formula, float rounding can differ in the last bits. A `skip`
  // of 1 leaves the weights and the state as they were, decided on the device.
  void fused_step(const torch::Tensor& skip) {
    if constexpr (kIsAdam<Torch>) {
      fused_adam_step(skip);
    } else if constexpr (std::is_same_v<Torch, torch::optim::SGD>) {
      fused_sgd_step(skip);
    } else {
      TORCH_CHECK(false, "no fused step for this optimizer");
    }
  }

  // LibTorch's SGD (dampening 0: a momentum buffer starts at the first gradient, as a zero
  // buffer after one update does) for every parameter of a group at once, skipped on the device
  // when `skip` is 1.
  void fused_sgd_step(const torch::Tensor& skip) {
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
          auto& slot = optimizer_.state()[p.unsafeGetTensorImpl()];
          if (!slot) {
            auto state = std::make_unique<torch::optim::SGDParamState>();
            state->momentum_buffer(torch::zeros_like(p, torch::MemoryFormat::Preserve));
            slot = std::move(state);
          }
          buffers.push_back(static_cast<torch::optim::SGDParamState&>(*slot).momentum_buffer());
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

  // LibTorch's Adam step (state created on a parameter's first gradient, weight decay as L2 for
  // Adam and decoupled for AdamW). The step counts live on the device (device_steps_), so that
  // a skipped step leaves them too; LibTorch's state gets them when saved. On the CPU one
  // kernel steps every parameter of a group (train/multi_tensor.h).
  void fused_adam_step(const torch::Tensor& skip) {
    torch::NoGradGuard no_grad;
    for (auto& group : optimizer_.param_groups()) {
      const auto& o = static_cast<const Options&>(group.options());
      TORCH_CHECK(!o.amsgrad(), "the fused Adam step has no amsgrad");
      std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, steps;
      for (auto& p : group.params()) {
        if (!p.grad().defined()) {
          continue;
        }
        auto& state = state_of(p);
        params.push_back(p);
        grads.push_back(p.grad());
        exp_avgs.push_back(state.exp_avg());
        exp_avg_sqs.push_back(state.exp_avg_sq());
        steps.push_back(device_step(p, state));
      }
      if (params.empty()) {
        continue;
      }
      if (cpu_adam_group(o, params, grads, exp_avgs, exp_avg_sqs, steps, skip)) {
        continue;
      }
      const auto [beta1, beta2] = o.betas();
      if (skip.defined()) {
        torch::_foreach_add_(steps, 1.0 - skip);
      } else {
        torch::_foreach_add_(steps, 1.0);
      }
      const auto fused = [](auto&&... args) {
        if constexpr (std::is_same_v<Torch, torch::optim::Adam>) {
          at::_fused_adam_(args...);
        } else {
          at::_fused_adamw_(args...);
        }
      };
      fused(
          params,
          grads,
          exp_avgs,
          exp_avg_sqs,
          std::vector<torch::Tensor>{},
          steps,
          o.lr(),
          beta1,
          beta2,
          o.weight_decay(),
          o.eps(),
          /*amsgrad=*/false,
          /*maximize=*/false,
          std::nullopt,
          skip.defined() ? std::optional<torch::Tensor>(skip) : std::nullopt);
    }
  }

  // One group's step through the CPU kernel, where every tensor allows it (false otherwise).
  // On the CPU `skip` and the step counts are read where they lie: nothing waits.
  static bool cpu_adam_group(
      const Options& o,
      const std::vector<torch::Tensor>& params,
      const std::vector<torch::Tensor>& grads,
      const std::vector<torch::Tensor>& exp_avgs,
      const std::vector<torch::Tensor>& exp_avg_sqs,
      const std::vector<torch::Tensor>& steps,
      const torch::Tensor& skip) {
    if (!cpu_multi_tensor_applies({params, grads, exp_avgs, exp_avg_sqs, steps}) ||
        (skip.defined() && !cpu_multi_tensor_applies({{skip}}))) {
      return false;
    }
    if (skip.defined() && *skip.const_data_ptr<float>() != 0.0F) {
      return true;
    }
    std::vector<double> counts;
    for (const auto& count : steps) {
      counts.push_back(*count.data_ptr<float>() += 1.0F);
    }
    const auto [beta1, beta2] = o.betas();
    cpu_adam_step(
        params,
        grads,
        exp_avgs,
        exp_avg_sqs,
        counts,
        {o.lr(),
         beta1,
         beta2,
         o.eps(),
         o.weight_decay(),
         std::is_same_v<Torch, torch::optim::AdamW>});
    return true;
  }

  // p's Adam state, made (step 0, zero moments) on its first gradient.
  AdamState<Torch>& state_of(const torch::Tensor& p) {
    auto& slot = optimizer_.state()[p.unsafeGetTensorImpl()];
    if (!slot) {
      auto state = std::make_unique<AdamState<Torch>>();
      state->step(0);
      state->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
      state->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
      slot = std::move(state);
    }
    return static_cast<AdamState<Torch>&>(*slot);
  }

  // p's step count as a float scalar on its device, from LibTorch's count when first needed.
  torch::Tensor device_step(const torch::Tensor& p, const AdamState<Torch>& state) {
    auto& t = device_steps_[p.unsafeGetTensorImpl()];
    if (!t.defined()) {
      t = torch::full({}, static_cast<float>(state.step()), p.options().requires_grad(false));
    }
    return t;
  }

  // The device's step counts into LibTorch's state (one read), for a checkpoint.
  void read_step_counts() const {
    if (device_steps_.empty()) {
      return;
    }
    std::vector<c10::TensorImpl*> keys;
    std::vector<torch::Tensor> counts;
    for (const auto& [key, count] : device_steps_) {
      keys.push_back(key);
      counts.push_back(count);
    }
    const auto host = torch::stack(counts).to(torch::kDouble).cpu();
    const auto* values = host.data_ptr<double>();
    for (size_t i = 0; i < keys.size(); ++i) {
      static_cast<AdamState<Torch>&>(*optimizer_.state().at(keys[i]))
          .step(static_cast<int64_t>(values[i]));
    }
  }

  static std::vector<torch::optim::OptimizerParamGroup> torch_groups(
      const std::vector<ParameterGroup>& groups,
      const Options& defaults) {
    std::vector<torch::optim::OptimizerParamGroup> out;
    for (const auto& group : groups) {
      auto options = std::make_unique<Options>(defaults);
      options->weight_decay(group.weight_decay);
      out.emplace_back(group.params, std::move(options));
    }
    return out;
  }

  mutable Torch optimizer_;
  bool fused_;
  /// the fused step's counts, per parameter
  std::unordered_map<c10::TensorImpl*, torch::Tensor> device_steps_;
  std::vector<double> lr_scale_;
  std::vector<double> weight_decay_;
};

} // namespace

std::unique_ptr<Optimizer> make_optimizer(
    const config::TrainConfig& t,
    std::vector<ParameterGroup> groups) {
  switch (t.optim) {
    case config::Optim::kAdam:
      return std::make_unique<TorchOptimizer<torch::optim::Adam, torch::optim::AdamOptions>>(
          groups,
          torch::optim::AdamOptions(t.lr).betas({t.beta1, t.beta2}).eps(t.eps),
          t.fused_optim);
    case config::Optim::kAdamW:
      return std::make_unique<TorchOptimizer<torch::optim::AdamW, torch::optim::AdamWOptions>>(
          groups,
          torch::optim::AdamWOptions(t.lr).betas({t.beta1, t.beta2}).eps(t.eps),
          t.fused_optim);
    case config::Optim::kSgd:
      return std::make_unique<TorchOptimizer<torch::optim::SGD, torch::optim::SGDOptions>>(
          groups, torch::optim::SGDOptions(t.lr).momentum(t.mom), t.fused_optim);
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
