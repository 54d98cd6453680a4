// Gradients of data-parallel training, reduced by LibTorch's DistributedDataParallel engine
// (c10d::Reducer): buckets of about 25 MB are all-reduced while the backward pass still runs.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "xl/config/schema.h"
#include "xl/runtime/distributed.h"

namespace c10d {
class Reducer;
}

namespace xl::train {

/// Refuses (UserError on every rank, the same line) ranks that would train different things: a
/// resolved config, a model's parameter names and shapes, or one of `facts` (what the config does
/// not say: a deadline of the command line, the vocabulary its data.dir resolves to) other than
/// rank 0's. The message names the first that differs and both values. Every rank calls it,
/// before any other exchange of tensors whose shapes the config sets.
void require_same_setup(
    runtime::Group& group,
    const config::Config& config,
    const torch::nn::Module& model,
    const std::vector<std::pair<std::string, std::string>>& facts = {});

class DataParallel {
 public:
  /// Gives every rank rank 0's `params` first, so that all start from the same weights.
  DataParallel(
      runtime::Group& group,
      const std::vector<std::pair<std::string, torch::Tensor>>& named_params);
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  runtime::Group& group() const {
    return group_;
  }
  /// The backward pass of `objective` that ends a step's accumulation: when it returns, every
  /// parameter's gradient is the mean of the ranks' gradients. Earlier backward passes of the
  /// step (plain `backward()`) only accumulate locally.
  void backward_and_reduce(const torch::Tensor& objective);

 private:
  runtime::Group& group_;
  std::shared_ptr<c10d::Reducer> reducer_;
};

} // namespace xl::train
