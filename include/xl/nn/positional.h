// Sinusoidal position embeddings (Vaswani et al.), laid out as Transformer-XL
// does: [sin | cos] concatenated (not interleaved), inv_freq[f] = 1 / 10000^(2f
// / D).
#pragma once

#include <torch/torch.h>

namespace xl::nn {

/// Positions for relative attention over `klen` keys: klen-1, ..., 1, 0 (the
/// distance of each key to the last query), clamped to `clamp_len` when
/// clamp_len > 0.
torch::Tensor relative_positions(
    int64_t klen,
    int64_t clamp_len,
    const torch::TensorOptions& options);

struct SinusoidEmbeddingOptions {
  explicit SinusoidEmbeddingOptions(int64_t d_model) : d_model_(d_model) {}
  /// size of each embedding; must be even
  TORCH_ARG(int64_t, d_model);
};

/// Maps positions to fixed sinusoid vectors. No parameters; `inv_freq` is a
/// buffer so that it follows the module's device.
class SinusoidEmbeddingImpl : public torch::nn::Cloneable<SinusoidEmbeddingImpl> {
 public:
  explicit SinusoidEmbeddingImpl(const SinusoidEmbeddingOptions& options);
  void reset() override;

  /// positions [S] (float) -> embeddings [S, D]
  torch::Tensor forward(const torch::Tensor& positions);

  SinusoidEmbeddingOptions options;
  torch::Tensor inv_freq;
};
TORCH_MODULE(SinusoidEmbedding);

} // namespace xl::nn
