// Transformer-XL's ordered batches. The tokens are cut into B contiguous streams (stream b holds
// tokens [b * n_step, (b + 1) * n_step)), read as a [n_step, B] matrix in segments of `tgt_len`
// rows. Segment k gives input rows [i - ext_len, i + s) and target rows [i + 1, i + 1 + s), with
// i = k * tgt_len and s = min(tgt_len, n_step - 1 - i): consecutive segments continue each stream,
// so the model's memory carries across them.
#pragma once

#include "xl/formats/tokens.h"
#include "xl/sources/batch_source.h"

namespace xl::sources {

class OrderedSegments : public BatchSource {
 public:
  /// `tokens` must outlive the source. At least two tokens per stream are required.
  OrderedSegments(
      const formats::Tokens& tokens,
      int64_t batch_size,
      int64_t tgt_len,
      int64_t ext_len = 0);

  std::optional<Batch> next() override;
  bool continues_streams() const override {
    return true;
  }
  int64_t batches_per_pass() const override;
  int64_t epoch() const override {
    return epoch_;
  }
  std::string describe() const override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

  /// Rows per stream.
  int64_t n_step() const {
    return n_step_;
  }
  /// Moves to `row` of pass `epoch`.
  void seek(int64_t epoch, int64_t row);

 private:
  const formats::Tokens& tokens_;
  int64_t batch_size_;
  int64_t tgt_len_;
  int64_t ext_len_;
  int64_t n_step_;
  int64_t epoch_ = 0;
  int64_t row_ = 0;
};

} // namespace xl::sources
