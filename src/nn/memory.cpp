#include "xl/nn/memory.h"

#include <algorithm>

namespace xl::nn {

Memory update_memory(
    const Memory& mems,
    const std::vector<torch::Tensor>& hiddens,
    int64_t mem_len,
    int64_t ext_len) {
  if (mem_len == 0 || hiddens.empty()) {
    return {};
  }
  TORCH_CHECK(
      mems.empty() || mems.size() == hiddens.size(),
      "memory has ",
      mems.size(),
      " layers, the model ",
      hiddens.size());
  const int64_t mlen = mems.empty() ? 0 : mems[0].size(0);
  const int64_t qlen = hiddens[0].size(0);
  const int64_t end = mlen + std::max<int64_t>(0, qlen - ext_len);
  const int64_t begin = std::max<int64_t>(0, end - mem_len);
  torch::NoGradGuard no_grad;
  Memory next;
  next.reserve(hiddens.size());
  for (size_t i = 0; i < hiddens.size(); ++i) {
    // Rows of the segment alone (mem_len <= qlen - ext_len, as in training) need no copy of
    // [memory | segment].
    const auto rows = begin >= mlen ? hiddens[i].slice(0, begin - mlen, end - mlen)
                                    : torch::cat({mems[i], hiddens[i]}, 0).slice(0, begin, end);
    next.push_back(rows.detach());
  }
  return next;
}

} // namespace xl::nn
