// Checkpoint averaging (fairseq's average_checkpoints): the element-wise mean of the model
// weights of several checkpoints of one run, often a better model than any one of them.
//   xl-average --run runs/wt103_base --last 5      (snapshots kept by train.keep_snapshots)
#pragma once

#include <filesystem>
#include <vector>

namespace xl::lab {

/// Saves to `out` a checkpoint whose model weights are the mean (summed in float64) of those of
/// `inputs`, with the newest input's step, config and vocabulary, and nothing else (no
/// optimizer or data state: it evaluates and initialises, it does not resume). Inputs of
/// another model or data config, another vocabulary, or with other tensors are refused.
void average_checkpoints(
    const std::vector<std::filesystem::path>& inputs,
    const std::filesystem::path& out);

} // namespace xl::lab
