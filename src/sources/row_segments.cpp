#include "xl/sources/row_segments.h"

#include <fmt/format.h>

#include <algorithm>

#include "source_state.h"
#include "xl/io/archive.h"

namespace xl::sources {

RowSegments::RowSegments(
    std::vector<TokenRow> rows,
    int64_t tgt_len,
    RowLayout layout,
    std::string name)
    : rows_(std::move(rows)), tgt_len_(tgt_len), layout_(layout), name_(std::move(name)) {
  TORCH_CHECK(!rows_.empty() && tgt_len_ > 0, "row segments need rows and tgt_len > 0");
  for (const auto& row : rows_) {
    TORCH_CHECK(
        row.tokens != nullptr && row.length >= 2 && row.start >= 0 &&
            row.start + row.length <= row.tokens->size(),
        "a row of at least 2 tokens within its text, got [",
        row.start,
        ", ",
        row.start + row.length,
        ")");
    longest_ = std::max(longest_, inputs_of(row));
  }
}

int64_t RowSegments::inputs_of(const TokenRow& row) const {
  return layout_ == RowLayout::kNext ? row.length - 1 : row.length;
}

int64_t RowSegments::batches_per_pass() const {
  return (longest_ + tgt_len_ - 1) / tgt_len_;
}

std::string RowSegments::describe() const {
  return fmt::format(
      "{} rows of {} x {} tokens, {} ({})",
      rows_.size(),
      name_,
      tgt_len_,
      layout_ == RowLayout::kNext ? "each scoring the next" : "each scored left to right",
      fmt::format("the longest {}", longest_));
}

std::optional<Batch> RowSegments::next() {
  if (position_ >= longest_) {
    ++epoch_;
    position_ = 0;
    return std::nullopt;
  }
  const int64_t len = std::min(tgt_len_, longest_ - position_);
  const auto rows = static_cast<int64_t>(rows_.size());
  const bool self = layout_ == RowLayout::kSelf;
  Batch batch;
  batch.tokens = torch::zeros({len, rows}, torch::kLong);
  batch.targets = torch::zeros({len, rows}, torch::kLong);
  batch.target_mask = torch::zeros({len, rows}, torch::kBool);
  batch.target_index = torch::full({len, rows}, -1, torch::kLong);
  for (int64_t r = 0; r < rows; ++r) {
    const TokenRow& row = rows_[static_cast<size_t>(r)];
    const int64_t s = std::clamp<int64_t>(inputs_of(row) - position_, 0, len);
    if (s == 0) {
      continue; // the row ended: padding alone
    }
    const int64_t first = row.start + position_;
    // One read covers the inputs and, one token later, the next ones.
    const auto read = row.tokens->slice(first, self ? s : s + 1);
    batch.tokens.narrow(0, 0, s).select(1, r).copy_(read.narrow(0, 0, s));
    batch.targets.narrow(0, 0, s).select(1, r).copy_(read.narrow(0, self ? 0 : 1, s));
    batch.target_mask.narrow(0, 0, s).select(1, r).fill_(true);
    batch.target_index.narrow(0, 0, s).select(1, r).copy_(
        torch::arange(first + (self ? 0 : 1), first + (self ? 0 : 1) + s, torch::kLong));
    if (self && position_ == 0) {
      batch.target_mask[0][r] = false; // nothing precedes a row's first token
      batch.target_index[0][r] = -1;
    }
  }
  if (self) {
    // Query i sees the positions before it; the content stream sees i too.
    batch.perm_mask = torch::ones({len, len}, torch::kBool)
                          .triu()
                          .unsqueeze(2)
                          .expand({len, len, rows})
                          .contiguous();
    batch.target_mapping =
        torch::eye(len, torch::kFloat).unsqueeze(2).expand({len, len, rows}).contiguous();
    batch.segment_ids = torch::zeros({len, rows}, torch::kLong);
  }
  batch.n_targets = batch.target_mask.sum().item<int64_t>();
  position_ += len;
  return batch;
}

void RowSegments::save(torch::serialize::OutputArchive& archive) const {
  write_source_identity(archive, *this);
  io::write_int(archive, "data.epoch", epoch_);
  io::write_int(archive, "data.row", position_);
}

void RowSegments::load(torch::serialize::InputArchive& archive) {
  check_source_identity(archive, *this);
  epoch_ = io::read_int(archive, "data.epoch");
  position_ = io::read_int(archive, "data.row");
}

} // namespace xl::sources
