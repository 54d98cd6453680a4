// Activation checkpointing (named recompute here: a checkpoint in xl is a file, run/checkpoint.h):
// run a block without keeping its activations for the backward pass, and run it again when the
// backward pass reaches it. LibTorch has no torch.utils.checkpoint; this is its reentrant variant.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <vector>

namespace xl::nn {

using Block = std::function<std::vector<torch::Tensor>(const std::vector<torch::Tensor>&)>;

/// Returns block(inputs). When autograd would record the block (grad mode on and an input
/// requiring grad), it runs without recording; the outputs get one backward node that
/// replays the block with the forward's random-number state and autocast setting, so the
/// recomputation draws the same dropout masks, back-propagates through it (parameters the
/// block uses get their gradients there) and hands the inputs' gradients on. Every tensor
/// that carries gradient into the block and is not a parameter must be one of `inputs`
/// (all defined); the block may capture parameters and tensors without gradient.
std::vector<torch::Tensor> recompute(const Block& block, const std::vector<torch::Tensor>& inputs);

} // namespace xl::nn
