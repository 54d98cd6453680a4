// Which rows of a list of token ids fall in each bin of an adaptive embedding or softmax.
//
// A bin's rows sized by a nonzero() on the device make the host wait for the device once per
// bin and step. The batch's ids are known on the host before they are moved, so the rows are
// found there and uploaded without waiting (sources::Batch::on_host keeps that copy).
#pragma once

#include <torch/torch.h>

#include <vector>

namespace xl::nn {

struct BinnedIds {
  /// per bin [n_i] int64: the rows of ids in [bounds[i], bounds[i + 1]), in order (n_i may be 0)
  std::vector<torch::Tensor> rows;
  /// per bin [n_i]: those ids less bounds[i]
  std::vector<torch::Tensor> local;
  /// [N]: a head softmax's column for each row: the id itself in bin 0, else the column of its
  /// bin's cluster, bounds[1] + i - 1
  torch::Tensor head_cols;
};

/// ids [N] (int64, on the model's device) split by `bounds` [0, c0, ..., n_token]. From
/// `host_ids` (the same ids on the CPU, or undefined) or from ids itself on the CPU, the rows are
/// found on the host and uploaded without waiting; otherwise with a nonzero() per bin. An id
/// outside [0, n_token) is an error.
BinnedIds bin_ids(
    const torch::Tensor& ids,
    const torch::Tensor& host_ids,
    const std::vector<int64_t>& bounds);

} // namespace xl::nn
