// A module in eval mode for a scope (no dropout, the evaluation's lengths), and as it was after.
// A module in eval mode already (a trained run opened for inference, which threads share) is
// not touched: no thread writes its flags while another reads them.
#pragma once

#include <torch/nn/module.h>

namespace xl::eval {

class EvalScope {
 public:
  explicit EvalScope(torch::nn::Module& module)
      : module_(module), was_training_(module.is_training()) {
    if (was_training_) {
      module_.eval();
    }
  }
  ~EvalScope() {
    if (was_training_) {
      module_.train(true);
    }
  }
  EvalScope(const EvalScope&) = delete;
  EvalScope& operator=(const EvalScope&) = delete;

 private:
  torch::nn::Module& module_;
  bool was_training_;
};

} // namespace xl::eval
