#include "xl/data/lm_iterator.h"

#include <fmt/format.h>

#include <algorithm>

#include "xl/util/error.h"

namespace xl::data {

LMOrderedIterator::LMOrderedIterator(
    const TokenFile& tokens,
    int64_t batch_size,
    int64_t tgt_len,
    int64_t ext_len)
    : tokens_(tokens),
      batch_size_(batch_size),
      tgt_len_(tgt_len),
      ext_len_(ext_len),
      n_step_(tokens.size() / batch_size) {
  TORCH_CHECK(
      batch_size > 0 && tgt_len > 0 && ext_len >= 0, "bad iterator sizes");
  if (n_step_ < 2) {
    throw UserError(fmt::format(
        "{} holds {} tokens: too few for {} streams of at least 2 tokens; lower the batch "
        "size",
        tokens.path().string(),
        tokens.size(),
        batch_size));
  }
}

int64_t LMOrderedIterator::segments_per_epoch() const {
  return (n_step_ - 1 + tgt_len_ - 1) / tgt_len_;
}

Segment LMOrderedIterator::next() {
  TORCH_CHECK(
      has_next(), "the pass over ", tokens_.path().string(), " is done");
  const int64_t len = std::min(tgt_len_, n_step_ - 1 - row_);
  const int64_t begin = std::max<int64_t>(0, row_ - ext_len_);
  const int64_t in_len = row_ + len - begin;
  std::vector<torch::Tensor> inputs;
  std::vector<torch::Tensor> targets;
  inputs.reserve(batch_size_);
  targets.reserve(batch_size_);
  for (int64_t b = 0; b < batch_size_; ++b) {
    const int64_t stream = b * n_step_;
    // One read covers the input rows and the target rows one token later.
    const auto span = tokens_.slice(stream + begin, row_ + len + 1 - begin);
    inputs.push_back(span.narrow(0, 0, in_len));
    targets.push_back(span.narrow(0, row_ + 1 - begin, len));
  }
  row_ += len;
  return Segment{torch::stack(inputs, 1), torch::stack(targets, 1)};
}

Segment LMOrderedIterator::next_cycling() {
  if (!has_next()) {
    ++epoch_;
    row_ = 0;
  }
  return next();
}

void LMOrderedIterator::seek(int64_t epoch, int64_t row) {
  TORCH_CHECK(
      row >= 0 && row <= n_step_ - 1,
      "iterator row ",
      row,
      " outside [0, ",
      n_step_ - 1,
      "]");
  epoch_ = epoch;
  row_ = row;
}

} // namespace xl::data
