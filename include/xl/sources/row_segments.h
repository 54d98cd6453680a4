// Rows of tokens read side by side in segments, each row's memory carried from one segment to the
// next: the documents of xl-eval --documents (a row each, scored from an empty memory), or the
// contiguous streams a text is cut into. Rows may differ in length: a row that ends early is
// padded, its padding never counted (target_mask) and never seen by a real position (the
// families attend causally), so that a row scores as it would alone.
//
// Two layouts, by what the family predicts:
//   next   (causal models: Transformer-XL)  segment k of a row reads tokens [i, i + s) and
//          scores the next ones, [i + 1, i + 1 + s), i = k * tgt_len: what OrderedSegments gives
//          one stream
//   self   (XLNet, a fixed factorization order)  segment k reads [i, i + s) and scores those same
//          tokens, each by the query stream from the tokens before it (perm_mask hides j >= i
//          from query i; the content stream sees j <= i) and the memory of the segments before;
//          every position is predicted (target_mapping is the identity), the row's first token
//          excepted, which nothing precedes (as a causal model does not score it)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "xl/formats/tokens.h"
#include "xl/sources/batch_source.h"

namespace xl::sources {

/// Tokens [start, start + length) of `tokens` (which must outlive the source).
struct TokenRow {
  const formats::Tokens* tokens = nullptr;
  int64_t start = 0;
  int64_t length = 0;
};

enum class RowLayout { kNext, kSelf };

class RowSegments : public BatchSource {
 public:
  /// `rows` (each of at least 2 tokens) in segments of `tgt_len`; `name` says what they are.
  /// target_index holds each target's place in its row's Tokens.
  RowSegments(std::vector<TokenRow> rows, int64_t tgt_len, RowLayout layout, std::string name);

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

 private:
  // Positions of row r read as inputs in all (the last one only as a target for kNext).
  int64_t inputs_of(const TokenRow& row) const;

  std::vector<TokenRow> rows_;
  int64_t tgt_len_;
  RowLayout layout_;
  std::string name_;
  int64_t longest_ = 0; // inputs of the longest row
  int64_t epoch_ = 0;
  int64_t position_ = 0;
};

} // namespace xl::sources
