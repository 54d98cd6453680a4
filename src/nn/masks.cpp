#include "xl/nn/masks.h"

namespace xl::nn {

torch::Tensor causal_mask(
    int64_t qlen,
    int64_t mlen,
    bool same_length,
    int64_t mem_len,
    const torch::Device& device) {
  TORCH_CHECK(
      !same_length || mem_len > 0,
      "same_length needs a memory (mem_len > 0): without one no query would see any key");
  const int64_t klen = mlen + qlen;
  const auto ones = torch::ones({qlen, klen}, torch::dtype(torch::kBool).device(device));
  auto mask = torch::triu(ones, 1 + mlen);
  if (same_length) {
    const int64_t excess = klen - mem_len;
    const int64_t shift = excess > 0 ? qlen - excess : qlen;
    mask = mask | torch::tril(ones, -shift);
  }
  return mask;
}

} // namespace xl::nn
