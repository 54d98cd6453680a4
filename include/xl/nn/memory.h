// Segment-level recurrence: the memory of layer i is the input of layer i over
// the most recent positions, detached (stop-gradient), as in Transformer-XL
// §3.2.
#pragma once

#include <torch/torch.h>

#include <vector>

namespace xl::nn {

/// One tensor per layer, each [M, B, D]; empty when the model keeps no memory.
using Memory = std::vector<torch::Tensor>;

/// The next memory from the previous one (`mems`, possibly empty: no memory
/// yet) and this segment's layer inputs (`hiddens`, each [L, B, D]). Keeps the
/// last `mem_len` positions of [memory | segment] that precede the `ext_len`
/// extended-context positions at the end of the segment (those are re-read next
/// time):
///   end = M + max(0, L - ext_len),  begin = max(0, end - mem_len).
/// Returns an empty Memory when mem_len == 0.
Memory update_memory(
    const Memory& mems,
    const std::vector<torch::Tensor>& hiddens,
    int64_t mem_len,
    int64_t ext_len);

} // namespace xl::nn
