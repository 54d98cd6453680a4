#include "xl/nn/positional.h"

namespace xl::nn {

torch::Tensor relative_positions(
    int64_t klen,
    int64_t clamp_len,
    const torch::TensorOptions& options) {
  auto positions = torch::arange(klen - 1, -1, -1, options);
  if (clamp_len > 0) {
    positions = positions.clamp_max(static_cast<double>(clamp_len));
  }
  return positions;
}

SinusoidEmbeddingImpl::SinusoidEmbeddingImpl(const SinusoidEmbeddingOptions& options_)
    : options(options_) {
  reset();
}

void SinusoidEmbeddingImpl::reset() {
  TORCH_CHECK(
      options.d_model() > 0 && options.d_model() % 2 == 0,
      "SinusoidEmbedding needs an even d_model, got ",
      options.d_model());
  const auto d = static_cast<double>(options.d_model());
  inv_freq = register_buffer("inv_freq", 1.0 / torch::pow(10000.0, torch::arange(0.0, d, 2.0) / d));
}

torch::Tensor SinusoidEmbeddingImpl::forward(const torch::Tensor& positions) {
  TORCH_CHECK(
      positions.dim() == 1, "SinusoidEmbedding expects positions [S], got ", positions.sizes());
  const auto angles = torch::outer(positions.to(inv_freq.dtype()), inv_freq);
  return torch::cat({angles.sin(), angles.cos()}, -1);
}

} // namespace xl::nn
