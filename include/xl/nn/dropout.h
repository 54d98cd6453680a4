// Dropout whose CPU mask costs one pass: LibTorch's CPU dropout draws its Bernoulli noise one
// element at a time from the Mersenne Twister (about 6 ns an element, a fifth of a small
// Transformer-XL step on the CPU), then scales it in a second pass. Here each call takes one
// 64-bit seed from the default CPU generator (so torch::manual_seed, the checkpointed generator
// state and activation checkpointing's replays govern it as before) and fills the noise from
// Philox4x32-10 streams, one per block of elements, in parallel: the same noise for any number
// of threads (kernels/philox.h). On CUDA it is torch::dropout, unchanged.
#pragma once

#include <torch/torch.h>

namespace xl::nn {

/// The CPU noise dropout multiplies by: a contiguous tensor of `like`'s shape and dtype holding
/// 1 / (1 - p) where an element is kept (probability 1 - p) and 0 elsewhere. 0 <= p <= 1.
torch::Tensor dropout_noise(const torch::Tensor& like, double p);

/// x with dropout p when `training` (CPU: x * dropout_noise(x, p); CUDA: torch::dropout).
/// [...] -> [...]
torch::Tensor dropout(const torch::Tensor& x, double p, bool training);

struct DropoutOptions {
  /* implicit */ DropoutOptions(double p = 0.5) : p_(p) {}
  /// the probability that an element is zeroed
  TORCH_ARG(double, p);
};

/// torch::nn::Dropout's module with the dropout above.
class DropoutImpl : public torch::nn::Cloneable<DropoutImpl> {
 public:
  explicit DropoutImpl(const DropoutOptions& options = {});
  void reset() override;
  void pretty_print(std::ostream& stream) const override;

  /// x [...] -> [...]
  torch::Tensor forward(const torch::Tensor& x);

  DropoutOptions options;
};
TORCH_MODULE(Dropout);

} // namespace xl::nn
