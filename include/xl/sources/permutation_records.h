// XLNet pretraining batches (zihangdai/xlnet data_utils.py: create_tfrecords, _split_a_and_b,
// _sample_mask, and the online parser with _local_perm), made on the fly.
//
// Rows are contiguous streams (batchify): B rows, or with bi_data B/2 forward rows followed by
// the same B/2 rows reversed in time; row b of consecutive batches continues the same stream,
// so the model carries memory (reuse_len). Windows start at 0 and step by reuse_len while a
// whole window fits. Each record is
//
//   [ reuse part (reuse_len tokens) | A <sep> B <sep> <cls> ]      segment ids 0.. | 0..0 0 1..1 1 2
//
// where B is A's true continuation or a random stretch of the stream, 50/50, both cut at
// sentence boundaries. Masked spans (alpha/beta context, n-grams with p(n) ~ 1/n, n <= 5) are
// drawn separately on the reuse part (num_predict - num_predict/2 pieces at most) and on the rest
// (num_predict/2), in reading order (backward rows are flipped back first). The permutation
// mask is _local_perm on each half with one random order per half, shared by its perm_size
// blocks; the reuse half sees nothing of the second half (it becomes memory, and the next window
// re-reads that text), the second half sees all of the first. <sep> and <cls> are never
// predicted; targets are the input tokens at the predicted positions (the original's targets
// equal its inputs there), padded to num_predict.
//
// Decisions that differ from the original:
// - Spans cover whole words: n words where the original takes n pieces (it tests the span's
//   first piece instead of the current one, zihangdai/xlnet PR #16, issue #220). A span that
//   would exceed a half's budget loses its last words, and the budget is filled up with random
//   whole words that fit (the original adds random single pieces), so a half never holds more
//   than its share and a record may predict slightly fewer than num_predict pieces.
// - Masks, A/B splits and orders are drawn afresh every pass from the source's own generator;
//   the original fixes the masks offline, so every epoch predicts the same tokens (issue #241).
#pragma once

#include <ATen/core/Generator.h>

#include <cstdint>
#include <vector>

#include "xl/formats/sentence_tokens.h"
#include "xl/sources/batch_source.h"
#include "xl/sources/local_permutation.h"
#include "xl/sources/permutation_options.h"

namespace xl::sources {

class PermutationRecords : public BatchSource {
 public:
  /// `word_starts[id]`: whether piece `id` starts a word (SentencePiece::word_starts()). Bad
  /// options, or a corpus too short for one window, are UserErrors naming the options.
  PermutationRecords(
      const formats::SentenceTokens& tokens,
      std::vector<bool> word_starts,
      const PermutationOptions& options);

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
  struct Row {
    std::vector<int64_t> ids;
    std::vector<uint8_t> sent_ids;
    /// where the row's first token sits in the text, and whether it reads the text backwards
    int64_t start = 0;
    bool backward = false;
    /// the text position of the row's token `i`
    int64_t position(int64_t i) const {
      return backward ? start - i : start + i;
    }
  };
  struct Record {
    std::vector<int64_t> tokens;
    /// the text position of each token (-1: <sep> and <cls>)
    std::vector<int64_t> positions;
    std::vector<int64_t> segment_ids;
    std::vector<uint8_t> cannot_see; // [L * L]
    std::vector<uint8_t> is_target;
  };

  /// A record's A and B parts: [a_begin, a_end) and [b_begin, b_end) of its row.
  struct Split {
    int64_t a_begin, a_end, b_begin, b_end;
  };
  /// Which positions of one half start a word (permutation_records.cpp).
  class Words;

  Record make_record(const Row& row, int64_t begin, bool reverse);
  Split split_a_and_b(const Row& row, int64_t begin);
  std::vector<uint8_t> sample_mask(const std::vector<int64_t>& tokens, int64_t goal, bool reverse);
  int64_t mask_spans(const Words& words, int64_t goal, std::vector<uint8_t>& mask);
  int64_t mask_whole_words(
      const Words& words,
      int64_t goal,
      int64_t num,
      std::vector<uint8_t>& mask);
  void mask_single_pieces(const Words& words, int64_t goal, std::vector<uint8_t>& mask);
  std::vector<int64_t> draw_order();
  /// Uniform in [0, n).
  int64_t draw(int64_t n);
  double uniform();

  PermutationOptions options_;
  std::vector<bool> word_starts_;
  std::string name_;
  int64_t n_tokens_;
  std::vector<Row> rows_;
  int64_t row_len_;
  at::Generator generator_;
  int64_t epoch_ = 0;
  /// windows read in the current pass
  int64_t window_ = 0;
};

} // namespace xl::sources
