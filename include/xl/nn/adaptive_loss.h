// The adaptive softmax's log-likelihood with a hand-written backward pass.
//
// Composed from LibTorch ops, the loss keeps a log_softmax output per bin, and its backward
// zero-fills a gather gradient per bin and a full table-sized gradient for every bin's slice of
// a shared table. This keeps only each bin's logits, turns them into the gradient in place, and
// writes each table's gradient once, slice by slice.
#pragma once

#include <torch/torch.h>

#include <vector>

namespace xl::nn {

/// The softmax's parameters, as AdaptiveLogSoftmax holds them.
struct AdaptiveLossParams {
  /// [0, c0, ..., n_token]
  std::vector<int64_t> bounds;
  /// one table [n_token, d] shared by every bin, or one [n_i, d_i] per bin; biases alike
  std::vector<torch::Tensor> weights;
  std::vector<torch::Tensor> biases;
  /// per bin [d_proj, d_i], or undefined
  std::vector<torch::Tensor> projs;
  /// [n_bins - 1, d_0] and [n_bins - 1], undefined with one bin
  torch::Tensor cluster_weight;
  torch::Tensor cluster_bias;
};

/// Bin `i`'s rows of the softmax's tables or biases (`leaves`: one shared by every bin, cut at
/// `bounds`, or one per bin) in `dtype` for a matrix product. Inside runtime::KeptWeightCasts
/// (an evaluation) a slice of the kept cast of the whole table, since autocast keeps no cast of
/// a slice; otherwise the slice cast alone.
torch::Tensor bin_rows(
    const std::vector<torch::Tensor>& leaves,
    const std::vector<int64_t>& bounds,
    size_t i,
    torch::ScalarType dtype);

/// hidden [N, d_proj] (float32), target [N] -> log p(target) [N] (float32), equal to
/// AdaptiveLogSoftmax's composed forward up to float rounding, gradients included. `dtype`
/// is the matrix products' (bf16: as the composed ops under autocast compute them, with
/// float32 logits for the softmax and float32 gradients for every parameter). `host_target`:
/// the same targets on the CPU, or undefined (nn/bins.h).
torch::Tensor adaptive_log_prob(
    const AdaptiveLossParams& params,
    const torch::Tensor& hidden,
    const torch::Tensor& target,
    torch::ScalarType dtype = torch::kFloat,
    const torch::Tensor& host_target = {});

} // namespace xl::nn
