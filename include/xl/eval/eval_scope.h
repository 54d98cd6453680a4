// A module in eval mode for a scope (no dropout, the evaluation's lengths), and as it was after.
#pragma once

#include <torch/nn/module.h>

namespace xl::eval {

class EvalScope {
 public:
  explicit EvalScope(torch::nn::Module& module)
      : module_(module), was_training_(module.is_training()) {
    module_.eval();
  }
  ~EvalScope() {
    module_.train(was_training_);
  }
  EvalScope(const EvalScope&) = delete;
  EvalScope& operator=(const EvalScope&) = delete;

 private:
  torch::nn::Module& module_;
  bool was_training_;
};

} // namespace xl::eval
