// Checks of one model config that the library half of the family contract
// (models/family_contract_test.cpp) runs for every family's tiny config, and other tests for
// their variants: activation checkpointing gives the plain training steps' numbers, and
// training steps read nothing from the device.
#pragma once

#include <torch/torch.h>

#include <string>

#include "xl/config/config.h"

namespace xl::test {

/// The name of the backward node nn::recompute gives its outputs.
inline constexpr const char* kReplay = "xl::nn::CheckpointBackward";

/// Whether the autograd graph behind `t` holds a node called `name`.
bool graph_has(const torch::Tensor& t, const std::string& name);

/// Two training steps of `config` (dropout on: a replay that drew other dropout masks would
/// give other gradients), with and without train.activation_checkpointing, in float32 and under
/// bf16 autocast: the same losses, gradients and random stream after them, and replay nodes
/// exactly where checkpointing is on.
void expect_recompute_gives_the_plain_steps(const config::Config& config);

/// Four training steps of `config` on random data in its shapes: steps 2 to 4 read no value from
/// the device (item, nonzero, a copy to the CPU), and read_steps then reads finite losses and
/// gradient norms for all four.
void expect_steps_read_nothing(const config::Config& config);

/// The name of the backward node of a graphed block (runtime/cuda_graph.h).
inline constexpr const char* kGraphed = "GraphedBackward";

/// Four training steps and an evaluation of `config`, with the model's graphs emulated on the CPU
/// (runtime::GraphReplay::kEmulated: the buffers, gradients and order of calls of CUDA graphs)
/// and without: the same losses and weights, the same evaluation within float rounding (the
/// graphed evaluation keeps no projections), and the graphed forward runs through the graph's
/// node. Returns the family's reason where it runs no graphs ("" where it does).
std::string expect_graphs_give_the_eager_numbers(const config::Config& config);

/// A run of `config` with its model's graphs emulated, stopped at a checkpoint and resumed,
/// trains the steps after it as the uninterrupted run does: the same losses, to the bit. Returns
/// the family's reason where it runs no graphs ("" where it does).
std::string expect_graphed_runs_resume_exactly(const config::Config& config);

} // namespace xl::test
