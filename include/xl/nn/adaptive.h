// Adaptive input embeddings and the projected adaptive log-softmax (Baevski &
// Auli 2019; Grave et al. 2017), as Transformer-XL uses them.
//
// The vocabulary is split by `cutoffs` into bins [0, c0), [c0, c1), ...,
// [c_last, n_token). Bin i has embedding size d_embed / div_val^i and a
// projection P_i [d_proj, d_i] to the model size. With div_val == 1 there is
// one table, and one projection only when d_proj != d_embed.
//
// Softmax: the head scores the c0 shortlist tokens plus one logit per tail
// cluster; a token in tail bin i >= 1 has log p = log p_head(cluster i) + log
// p_tail_i(token). Cluster order: the logit of cluster i is head column c0 + i
// - 1 (cluster_weight row i - 1), the order of Hugging Face's forward pass and
// the TF code. kimiyoung's and NVIDIA's PyTorch code use row nc - i instead;
// import those weights with reversed cluster rows (see models/<family>/hf.h).
#pragma once

#include <torch/torch.h>

#include <vector>

#include "xl/nn/init.h"

namespace xl::nn {

struct AdaptiveOptions {
  AdaptiveOptions(int64_t n_token, int64_t d_embed, int64_t d_proj)
      : n_token_(n_token), d_embed_(d_embed), d_proj_(d_proj) {}
  TORCH_ARG(int64_t, n_token);
  TORCH_ARG(int64_t, d_embed);
  /// the model size the embeddings are projected to
  TORCH_ARG(int64_t, d_proj);
  /// bin boundaries, strictly increasing, each < n_token; empty: one bin
  TORCH_ARG(std::vector<int64_t>, cutoffs) = {};
  TORCH_ARG(int64_t, div_val) = 1;
  /// embedding: sparse table gradients, for a table tied to the softmax: they are added into
  /// the softmax's dense gradient, with no table-sized zero fill. The softmax must give the
  /// table a gradient every step, as it does for one shared table (div_val 1); a table left
  /// with a sparse gradient alone would stop Adam.
  TORCH_ARG(bool, sparse_grad) = false;

 public:
  /// [0, c0, ..., n_token]
  std::vector<int64_t> bounds() const;
  /// embedding size of bin i
  int64_t bin_dim(size_t i) const;
  /// whether bin i has a projection
  bool has_proj(size_t i) const;
  void validate() const;
};

class AdaptiveEmbeddingImpl : public torch::nn::Cloneable<AdaptiveEmbeddingImpl> {
 public:
  explicit AdaptiveEmbeddingImpl(const AdaptiveOptions& options);
  void reset() override;
  /// Tables by the weight rule, projections by the projection rule.
  void reset_parameters(const InitOptions& init);

  /// tokens [...] (int64) -> [..., d_proj], scaled by sqrt(d_proj). `host_tokens`: the same
  /// tokens on the CPU when `tokens` are on a GPU (the bins are found there without waiting,
  /// nn/bins.h), or undefined.
  torch::Tensor forward(const torch::Tensor& tokens, const torch::Tensor& host_tokens = {});

  /// embedding table of bin i ([n_token, d_embed] for div_val == 1)
  const torch::Tensor& weight(size_t i) const;
  /// projection of bin i ([d_proj, d_i]), undefined if none
  torch::Tensor proj(size_t i) const;

  AdaptiveOptions options;
  torch::nn::ModuleList emb_layers{nullptr};
  torch::nn::ParameterList emb_projs{nullptr};
};
TORCH_MODULE(AdaptiveEmbedding);

struct AdaptiveSoftmaxOptions {
  explicit AdaptiveSoftmaxOptions(AdaptiveOptions adaptive) : adaptive_(std::move(adaptive)) {}
  TORCH_ARG(AdaptiveOptions, adaptive);
  /// share each bin's weight with the embedding (biases are never shared)
  TORCH_ARG(bool, tie_weight) = true;
  /// share bin i's projection with the embedding's (div_val == 1: its only
  /// projection); empty: no sharing
  TORCH_ARG(std::vector<bool>, tie_projs) = {};
  /// forward with the hand-written backward of nn/adaptive_loss.h where it applies (float32
  /// hidden states, no autocast); false: composed LibTorch ops
  TORCH_ARG(bool, fused_loss) = true;
};

class AdaptiveLogSoftmaxImpl : public torch::nn::Cloneable<AdaptiveLogSoftmaxImpl> {
 public:
  explicit AdaptiveLogSoftmaxImpl(const AdaptiveSoftmaxOptions& options);
  /// Registers the parameters that are not tied; tied ones come from tie_to().
  void reset() override;
  /// Points the tied weights and projections at `embedding`'s parameters. Must
  /// be called once after construction when anything is tied.
  void tie_to(const AdaptiveEmbeddingImpl& embedding);
  /// The parameters that are not tied (tied ones are the embedding's to initialise): weights and
  /// cluster weights by the weight rule, projections by the projection rule, biases 0.
  void reset_parameters(const InitOptions& init);

  /// hidden [N, d_proj], target [N] -> log p(target) [N] in float32, in token order.
  /// `host_target`: the same targets on the CPU, or undefined (as for AdaptiveEmbedding).
  torch::Tensor forward(
      const torch::Tensor& hidden,
      const torch::Tensor& target,
      const torch::Tensor& host_target = {});
  /// hidden [N, d_proj] -> log-probabilities over the whole vocabulary [N,
  /// n_token]
  torch::Tensor log_probs(const torch::Tensor& hidden);

  /// weight ([n_i, d_i]), bias, projection (or undefined) of bin i
  torch::Tensor weight(size_t i) const;
  torch::Tensor bias(size_t i) const;
  torch::Tensor proj(size_t i) const;

  AdaptiveSoftmaxOptions options;
  /// bin weights (div_val == 1: one [n_token, d_embed] table) and biases
  std::vector<torch::Tensor> out_weights;
  std::vector<torch::Tensor> out_biases;
  std::vector<torch::Tensor> out_projs;
  torch::Tensor cluster_weight; // [n_clusters, d_embed]
  torch::Tensor cluster_bias;   // [n_clusters]

 private:
  bool weight_tied(size_t i) const;
  bool proj_tied(size_t i) const;
  /// head log-probabilities [N, c0 + n_clusters] and per-bin logits
  torch::Tensor head_log_probs(const torch::Tensor& hidden) const;
  torch::Tensor tail_logits(size_t i, const torch::Tensor& hidden) const;
};
TORCH_MODULE(AdaptiveLogSoftmax);

} // namespace xl::nn
