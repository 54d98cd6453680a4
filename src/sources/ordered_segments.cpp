#include "xl/sources/ordered_segments.h"

#include <fmt/format.h>

#include <algorithm>

#include "source_state.h"
#include "xl/io/archive.h"
#include "xl/util/error.h"

namespace xl::sources {

OrderedSegments::OrderedSegments(
    const formats::Tokens& tokens,
    int64_t batch_size,
    int64_t tgt_len,
    int64_t ext_len)
    : tokens_(tokens),
      batch_size_(batch_size),
      tgt_len_(tgt_len),
      ext_len_(ext_len),
      n_step_(batch_size > 0 ? tokens.size() / batch_size : 0) {
  TORCH_CHECK(
      batch_size > 0 && tgt_len > 0 && ext_len >= 0,
      "ordered segments need batch_size > 0, tgt_len > 0 and ext_len >= 0, got ",
      batch_size,
      ", ",
      tgt_len,
      ", ",
      ext_len);
  if (n_step_ < 2) {
    throw UserError(fmt::format(
        "{} holds {} tokens: too few for {} streams of at least 2 tokens; lower the batch "
        "size",
        tokens.name(),
        tokens.size(),
        batch_size));
  }
}

int64_t OrderedSegments::batches_per_pass() const {
  return (n_step_ - 1 + tgt_len_ - 1) / tgt_len_;
}

std::string OrderedSegments::describe() const {
  return fmt::format(
      "ordered segments: {} streams x {} tokens{} of {} ({} tokens)",
      batch_size_,
      tgt_len_,
      ext_len_ > 0 ? fmt::format(" (+{} context)", ext_len_) : "",
      tokens_.name(),
      tokens_.size());
}

std::optional<Batch> OrderedSegments::next() {
  if (row_ >= n_step_ - 1) {
    ++epoch_;
    row_ = 0;
    return std::nullopt;
  }
  const int64_t len = std::min(tgt_len_, n_step_ - 1 - row_);
  const int64_t begin = std::max<int64_t>(0, row_ - ext_len_);
  const int64_t in_len = row_ + len - begin;
  std::vector<torch::Tensor> inputs;
  std::vector<torch::Tensor> targets;
  inputs.reserve(static_cast<size_t>(batch_size_));
  targets.reserve(static_cast<size_t>(batch_size_));
  for (int64_t b = 0; b < batch_size_; ++b) {
    const int64_t stream = b * n_step_;
    // One read covers the input rows and the target rows one token later.
    const auto span = tokens_.slice(stream + begin, row_ + len + 1 - begin);
    inputs.push_back(span.narrow(0, 0, in_len));
    targets.push_back(span.narrow(0, row_ + 1 - begin, len));
  }
  Batch batch;
  batch.tokens = torch::stack(inputs, 1);
  batch.targets = torch::stack(targets, 1);
  // target t of stream b is token b * n_step + row + 1 + t
  batch.target_index = (torch::arange(len, torch::kLong) + (row_ + 1)).unsqueeze(1) +
      (torch::arange(batch_size_, torch::kLong) * n_step_).unsqueeze(0);
  row_ += len;
  batch.n_targets = len * batch_size_;
  return batch;
}

void OrderedSegments::seek(int64_t epoch, int64_t row) {
  TORCH_CHECK(
      epoch >= 0 && row >= 0 && row <= n_step_ - 1,
      "position (epoch ",
      epoch,
      ", row ",
      row,
      ") outside rows [0, ",
      n_step_ - 1,
      "]");
  epoch_ = epoch;
  row_ = row;
}

void OrderedSegments::save(torch::serialize::OutputArchive& archive) const {
  write_source_identity(archive, *this);
  io::write_int(archive, "data.epoch", epoch_);
  io::write_int(archive, "data.row", row_);
}

void OrderedSegments::load(torch::serialize::InputArchive& archive) {
  check_source_identity(archive, *this);
  seek(io::read_int(archive, "data.epoch"), io::read_int(archive, "data.row"));
}

} // namespace xl::sources
