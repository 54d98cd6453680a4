// The base of the optimizers LibTorch implements (Adam, AdamW, SGD: train/adam.h, train/sgd.h):
// one LibTorch parameter group per ParameterGroup, the schedule's rate times each group's
// lr_scale in the groups' options, and LibTorch's own save and load, so that a checkpoint holds
// LibTorch's state whichever path made the steps: LibTorch's own, or (train.fused_optim) the
// optimizer's fused step, every parameter of a group in one update, skipped on the device.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "xl/train/optimizer.h"
#include "xl/train/parameter_groups.h"

namespace xl::train {

template <class Torch, class Options>
class TorchOptimizer : public Optimizer {
 public:
  TorchOptimizer(const std::vector<ParameterGroup>& groups, const Options& defaults, bool fused)
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
    before_save();
    optimizer_.save(archive);
  }
  void load(torch::serialize::InputArchive& archive) override {
    optimizer_.load(archive);
    after_load();
    // The saved options come back with the state; the weight decay is the config's (a resume
    // may change it), and set_lr sets the rates before every step.
    auto& groups = optimizer_.param_groups();
    for (size_t i = 0; i < groups.size(); ++i) {
      static_cast<Options&>(groups[i].options()).weight_decay(weight_decay_[i]);
    }
  }

 protected:
  /// What a path keeps outside LibTorch's state goes into it before a save, and is made again
  /// from it after a load.
  virtual void before_save() const {}
  virtual void after_load() {}
  /// The fused update; a `skip` of 1 (undefined: none) leaves the weights and the state.
  virtual void fused_step(const torch::Tensor& skip) = 0;

  mutable Torch optimizer_;

 private:
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

  bool fused_;
  std::vector<double> lr_scale_;
  std::vector<double> weight_decay_;
};

} // namespace xl::train
