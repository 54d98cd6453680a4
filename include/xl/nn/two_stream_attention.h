// XLNet's relative attention (Yang et al. 2019, §2.3 and appendix A.2), in two streams that share
// every weight. For a query at input position p (M + p in [memory | segment]) and key j:
//   score = (q + r_w) . k_j                    content term
//         + (q + r_r) . W_R R_{M+p-j}          position term, distances in both directions
//         + (q + r_s) . s_{same/diff}(p, j)    segment term: whether p and j share a segment
// with R the sinusoid of the signed distance (negated for rows that read their stream
// backwards, bi_data). The content stream h attends with its own content visible; the query
// stream g (one query per prediction, its input position given) asks the same question without
// seeing its own content. Both use the q/k/v/o/r projections, LayerNorm and (in the layer) the
// feed-forward of this one module.
#pragma once

#include <torch/torch.h>

#include <utility>

#include "xl/nn/attention_core.h"
#include "xl/nn/dropout.h"

namespace xl::nn {

/// XLNet's bidirectional relative shift. x [B, H, Q, R] holds, for each query, the scores
/// against the position rows of the distances K, K-1, ..., K-R+1 (R = K + L: K keys, L inputs);
/// positions [B or 1, Q] (int64) is each query's input position p in 0..L-1. Returns y
/// [B, H, Q, K] with y[..., q, j] = x[..., q, j + L - p]: the distance (M + p) - j, M = K - L.
/// (Transformer-XL's shift, rel_shift, only keeps the distances >= 0.)
torch::Tensor xlnet_rel_shift(const torch::Tensor& x, const torch::Tensor& positions, int64_t klen);

/// One stream's queries: where they sit and what they may not see.
struct StreamQueries {
  /// [B or 1, Q] int64: the input position of each query
  torch::Tensor positions;
  /// [B, 1, Q, K] bool, true = hidden; undefined: every key visible
  torch::Tensor mask;
  /// [B, 1, Q, K] bool, true = the key is in another segment; undefined: no segment term
  torch::Tensor other_segment;
};

/// What every layer shares for one batch.
struct TwoStreamTerms {
  /// [G, R, D] position embeddings of the distances K .. -L+1; G = 2 holds the forward and the
  /// backward (negated) ones
  torch::Tensor r;
  /// [B] int64 row -> index into r's first dimension; undefined when G = 1
  torch::Tensor direction;
  /// the biases of this layer, [H, Dh] each
  torch::Tensor r_w_bias;
  torch::Tensor r_r_bias;
  torch::Tensor r_s_bias;
  /// the content stream (positions 0..L-1)
  StreamQueries content;
  /// the query stream, when there is one
  StreamQueries query;
  /// [P, B, 1] float: 1 for a real prediction, 0 for a padding row of the query stream
  torch::Tensor query_valid;
};

class TwoStreamAttentionImpl : public torch::nn::Cloneable<TwoStreamAttentionImpl> {
 public:
  explicit TwoStreamAttentionImpl(const AttentionOptions& options);
  void reset() override;
  void reset_parameters(const InitOptions& init);

  /// h [L, B, D] content stream, g [P, B, D] query stream or undefined, mem [M, B, D] or
  /// undefined -> (h' [L, B, D], g' [P, B, D] or undefined); `cache`: the projections kept
  /// from the previous call of this stream (see AttentionCache)
  std::pair<torch::Tensor, torch::Tensor> forward(
      const torch::Tensor& h,
      const torch::Tensor& g,
      const TwoStreamTerms& terms,
      const torch::Tensor& mem,
      AttentionCache* cache = nullptr);

  AttentionOptions options;
  torch::nn::Linear qkv_net{nullptr};
  torch::nn::Linear o_net{nullptr};
  torch::nn::LayerNorm layer_norm{nullptr};
  Dropout drop{nullptr};
  Dropout dropatt{nullptr};
  torch::nn::Linear r_net{nullptr};
  /// [2, H, Dh]: the segment embeddings of "same segment" (0) and "other segment" (1)
  torch::Tensor seg_embed;

 private:
  /// Attention vectors [Q, B, H * Dh] of queries q [B, H, Q, Dh].
  torch::Tensor attend_stream(
      const torch::Tensor& q,
      const StreamQueries& queries,
      const TwoStreamTerms& terms,
      const torch::Tensor& k_r,
      const Heads& heads);
};
TORCH_MODULE(TwoStreamAttention);

} // namespace xl::nn
