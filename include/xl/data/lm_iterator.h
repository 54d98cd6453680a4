// The ordered language-model iterator of Transformer-XL: the token stream is
// cut into B contiguous streams (stream b holds tokens [b * n_step, (b + 1) *
// n_step)), read as a [n_step, B] matrix in segments of `tgt_len` rows. Segment
// k gives input rows [i - ext_len, i + s) and target rows [i + 1, i + 1 + s),
// with i = k * tgt_len and s = min(tgt_len, n_step - 1 - i), so consecutive
// segments continue each stream and the model's memory carries across them.
#pragma once

#include <torch/torch.h>

#include "xl/data/token_file.h"

namespace xl::data {

struct Segment {
  torch::Tensor input;  // [ext + s, B] int64
  torch::Tensor target; // [s, B] int64
};

class LMOrderedIterator {
 public:
  /// `tokens` must outlive the iterator. At least two tokens per stream are
  /// required.
  LMOrderedIterator(
      const TokenFile& tokens,
      int64_t batch_size,
      int64_t tgt_len,
      int64_t ext_len = 0);

  /// Rows per stream.
  int64_t n_step() const {
    return n_step_;
  }
  /// Segments per pass over the data.
  int64_t segments_per_epoch() const;
  /// Whether the current pass has segments left.
  bool has_next() const {
    return row_ < n_step_ - 1;
  }
  /// The next segment of the current pass (has_next() must hold).
  Segment next();
  /// The next segment, starting a new pass (epoch) when the current one is
  /// done.
  Segment next_cycling();

  /// Position for checkpoints: passes completed and the next row.
  int64_t epoch() const {
    return epoch_;
  }
  int64_t row() const {
    return row_;
  }
  void seek(int64_t epoch, int64_t row);

 private:
  const TokenFile& tokens_;
  int64_t batch_size_;
  int64_t tgt_len_;
  int64_t ext_len_;
  int64_t n_step_;
  int64_t epoch_ = 0;
  int64_t row_ = 0;
};

} // namespace xl::data
