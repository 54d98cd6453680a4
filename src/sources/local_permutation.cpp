#include "xl/sources/local_permutation.h"

#include <c10/util/Exception.h>

#include "xl/formats/sentencepiece.h"

namespace xl::sources {

LocalPermutation local_perm(
    const std::vector<int64_t>& inputs,
    const std::vector<uint8_t>& is_masked,
    const std::vector<int64_t>& order) {
  const auto n = static_cast<int64_t>(inputs.size());
  const auto perm_size = static_cast<int64_t>(order.size());
  TORCH_CHECK(
      perm_size > 0 && n % perm_size == 0 && is_masked.size() == inputs.size(),
      "local_perm: ",
      n,
      " inputs, ",
      is_masked.size(),
      " mask flags, order of ",
      perm_size);
  // rev[j]: j's place in the factorisation order, -1 for ordinary context (everyone sees it);
  // self[i]: i sees the masked and functional positions placed before it, and itself unless it
  // is a target.
  std::vector<int64_t> rev(inputs.size());
  std::vector<int64_t> self(inputs.size());
  std::vector<uint8_t> hidden(inputs.size()); // masked or functional
  LocalPermutation out;
  out.is_target.resize(inputs.size());
  for (int64_t k = 0; k < n; ++k) {
    const auto i = static_cast<size_t>(k);
    const bool functional = inputs[i] == formats::kSepId || inputs[i] == formats::kClsId;
    hidden[i] = is_masked[i] != 0 || functional;
    out.is_target[i] = is_masked[i] != 0 && !functional;
    const int64_t block = k - k % perm_size;
    rev[i] = hidden[i] ? block + order[static_cast<size_t>(k % perm_size)] : -1;
    self[i] = out.is_target[i] != 0 ? rev[i] : rev[i] + 1;
  }
  out.cannot_see.resize(inputs.size() * inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    for (size_t j = 0; j < inputs.size(); ++j) {
      out.cannot_see[i * inputs.size() + j] = hidden[j] != 0 && self[i] <= rev[j];
    }
  }
  return out;
}

std::vector<uint8_t> compose_halves(
    const LocalPermutation& first,
    const LocalPermutation& second,
    int64_t reuse,
    int64_t len) {
  std::vector<uint8_t> cannot_see(static_cast<size_t>(len * len), 0);
  for (int64_t i = 0; i < len; ++i) {
    for (int64_t j = 0; j < len; ++j) {
      uint8_t hidden = 0;
      if (i < reuse && j < reuse) {
        hidden = first.cannot_see[static_cast<size_t>(i * reuse + j)];
      } else if (i >= reuse && j >= reuse) {
        hidden = second.cannot_see[static_cast<size_t>((i - reuse) * (len - reuse) + j - reuse)];
      } else {
        hidden = i < reuse ? 1 : 0;
      }
      cannot_see[static_cast<size_t>(i * len + j)] = hidden;
    }
  }
  return cannot_see;
}

} // namespace xl::sources
