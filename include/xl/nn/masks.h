// Attention masks over [memory | segment] keys. true = masked (may not be
// attended).
#pragma once

#include <torch/torch.h>

namespace xl::nn {

/// Mask [qlen, mlen + qlen] for `qlen` queries after `mlen` memory positions.
///
/// Causal: query i sees keys j <= mlen + i.
/// same_length (the kimiyoung/Hugging Face convention, which we use): once
/// memory and segment together exceed `mem_len` keys, query i additionally
/// stops seeing keys j <= i - s with s = qlen - (klen - mem_len), so at steady
/// state (mlen == mem_len) every query attends to exactly mem_len keys: (i,
/// mlen + i]. NVIDIA and the TF code keep mem_len + 1 keys instead. same_length needs
/// mem_len > 0 (with none, no query would see any key).
torch::Tensor causal_mask(
    int64_t qlen,
    int64_t mlen,
    bool same_length,
    int64_t mem_len,
    const torch::Device& device = torch::kCPU);

} // namespace xl::nn
