#include "xl/train/adam.h"

#include <unordered_map>

#include "xl/kernels/multi_tensor.h"
#include "xl/train/torch_optimizer.h"

namespace xl::train {

namespace {

template <class Torch>
using AdamState = std::conditional_t<
    std::is_same_v<Torch, torch::optim::Adam>,
    torch::optim::AdamParamState,
    torch::optim::AdamWParamState>;

// Torch: torch::optim::Adam or AdamW, whose states a checkpoint holds.
template <class Torch, class Options>
class AdamOptimizer : public TorchOptimizer<Torch, Options> {
 public:
  AdamOptimizer(const std::vector<ParameterGroup>& groups, const Options& defaults, bool fused)
      : TorchOptimizer<Torch, Options>(groups, defaults, fused) {}

  std::vector<torch::Tensor> state_tensors() const override {
    std::vector<torch::Tensor> out;
    for (const auto& [key, state] : this->optimizer_.state()) {
      const auto& s = static_cast<const AdamState<Torch>&>(*state);
      out.insert(out.end(), {s.exp_avg(), s.exp_avg_sq(), s.max_exp_avg_sq()});
    }
    return out;
  }

 protected:
  // The device's step counts into LibTorch's state (one read), for a checkpoint.
  void before_save() const override {
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
      static_cast<AdamState<Torch>&>(*this->optimizer_.state().at(keys[i]))
          .step(static_cast<int64_t>(values[i]));
    }
  }
  void after_load() override {
    device_steps_.clear(); // made again from the loaded counts
  }
  // The update of every parameter of a group at once, on LibTorch's own state (state made on a
  // parameter's first gradient): the same formula, float rounding may differ in the last bits.
  // The step counts live on the device (device_steps_), so that a skipped step leaves them
  // too. On the CPU one kernel steps a group (train/multi_tensor.h), elsewhere LibTorch's fused
  // kernel. A `skip` of 1 leaves the weights and the state as they were, decided on the device.
  void fused_step(const torch::Tensor& skip) override {
    torch::NoGradGuard no_grad;
    for (auto& group : this->optimizer_.param_groups()) {
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
      if (params.empty() || cpu_group(o, params, grads, exp_avgs, exp_avg_sqs, steps, skip)) {
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

 private:
  // One group's step through the CPU kernel, where every tensor allows it (false otherwise).
  // On the CPU `skip` and the step counts are read where they lie: nothing waits.
  static bool cpu_group(
      const Options& o,
      const std::vector<torch::Tensor>& params,
      const std::vector<torch::Tensor>& grads,
      const std::vector<torch::Tensor>& exp_avgs,
      const std::vector<torch::Tensor>& exp_avg_sqs,
      const std::vector<torch::Tensor>& steps,
      const torch::Tensor& skip) {
    if (!kernels::cpu_multi_tensor_applies({params, grads, exp_avgs, exp_avg_sqs, steps}) ||
        (skip.defined() && !kernels::cpu_multi_tensor_applies({{skip}}))) {
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
    kernels::cpu_adam_step(
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
    auto& slot = this->optimizer_.state()[p.unsafeGetTensorImpl()];
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

  /// the fused step's counts, per parameter
  std::unordered_map<c10::TensorImpl*, torch::Tensor> device_steps_;
};

} // namespace

std::unique_ptr<Optimizer> make_adam(
    const std::vector<ParameterGroup>& groups,
    const AdamSettings& s) {
  if (s.decoupled) {
    return std::make_unique<AdamOptimizer<torch::optim::AdamW, torch::optim::AdamWOptions>>(
        groups, torch::optim::AdamWOptions(s.lr).betas({s.beta1, s.beta2}).eps(s.eps), s.fused);
  }
  return std::make_unique<AdamOptimizer<torch::optim::Adam, torch::optim::AdamOptions>>(
      groups, torch::optim::AdamOptions(s.lr).betas({s.beta1, s.beta2}).eps(s.eps), s.fused);
}

} // namespace xl::train
