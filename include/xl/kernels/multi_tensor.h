// The optimizer's per-parameter work on the CPU as one kernel over every parameter: LibTorch's
// CPU paths for lists of tensors (_foreach_norm, _foreach_mul_, _foreach_add_, the fused Adam's
// read of each step count) call the dispatcher once or more per tensor, about seven calls per
// parameter and step (1,400 of a wt103_base step's 8,400). These loops touch the tensors' data
// directly, in parallel over fixed pieces, so that their results do not depend on the number of
// threads. On CUDA LibTorch's multi-tensor kernels are one launch each and stay.
#pragma once

#include <torch/torch.h>

#include <vector>

namespace xl::kernels {

/// Whether every tensor of every list is a contiguous float32 CPU tensor: the kernels apply.
bool cpu_multi_tensor_applies(const std::vector<std::vector<torch::Tensor>>& lists);

/// The sum of the squares of every element of `tensors`, accumulated in double.
double cpu_sum_of_squares(const std::vector<torch::Tensor>& tensors);

/// Multiplies every element of `tensors` by `factor`, in place.
void cpu_scale_(const std::vector<torch::Tensor>& tensors, float factor);

/// One step of Adam (decoupled: AdamW's weight decay) as LibTorch's Adam writes it.
struct AdamHyper {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool decoupled = false;
};

/// Updates params[i], exp_avgs[i] and exp_avg_sqs[i] in place from grads[i] at step count
/// steps[i] (after this step's increment, from 1).
void cpu_adam_step(
    const std::vector<torch::Tensor>& params,
    const std::vector<torch::Tensor>& grads,
    const std::vector<torch::Tensor>& exp_avgs,
    const std::vector<torch::Tensor>& exp_avg_sqs,
    const std::vector<double>& steps,
    const AdamHyper& hyper);

} // namespace xl::kernels
