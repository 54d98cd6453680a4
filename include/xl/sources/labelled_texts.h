// The batch source of XLNet fine-tuning: labelled texts (formats/labelled_file.h), encoded.
//
// LabelledTexts rows are laid out as zihangdai/xlnet's run_classifier does:
//   [<pad> ... <pad> | pieces[:L-2] <sep> <cls>]     segment ids  4 ... 4 | 0 ... 0 0 2
// padded on the left so that <cls>, which the classification head reads, is always position
// L - 1. The padding is <pad> (id 5; run_classifier pads with id 0), segment id 4 marks it.
#pragma once

#include <ATen/core/Generator.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "xl/formats/sentencepiece.h"
#include "xl/sources/batch_source.h"

namespace xl::sources {

/// An example as SentencePiece ids.
struct EncodedExample {
  int64_t label = 0;
  std::vector<int64_t> ids;
};

struct LabelledOptions {
  int64_t batch_size = 128;
  int64_t seq_len = 64;
  /// Training: rows in a fresh order every pass, full batches only. Evaluation (false): file
  /// order, the last partial batch kept.
  bool shuffle = true;
  uint64_t seed = 0;
  /// Only the first N examples (fewer labels); more than the file holds is a UserError.
  std::optional<int64_t> max_examples;
  /// The classes of the model: a label of the file outside 0..n_class-1 is a UserError when
  /// the file is opened (unset: not checked).
  std::optional<int64_t> n_class;
  /// Batches of examples of similar lengths, each cut to its longest row (the positions every
  /// row pads are left out, which changes no score): training sorts each window of
  /// kGroupBatches batches of a fresh order by length and reads those batches in random order;
  /// evaluation reads the examples from the shortest to the longest.
  bool group_by_length = false;
};

/// Batches per window that group_by_length sorts: long enough to find partners of a similar
/// length, short enough that every stretch of the pass still mixes the whole file.
inline constexpr int64_t kGroupBatches = 50;

class LabelledTexts : public BatchSource {
 public:
  /// Reads and encodes `path` with `model` (which need not outlive the source).
  LabelledTexts(
      const std::filesystem::path& path,
      const formats::SentencePiece& model,
      const LabelledOptions& options);
  /// Examples already encoded; `name` says what they are, for messages.
  LabelledTexts(
      const std::vector<EncodedExample>& examples,
      std::string name,
      const LabelledOptions& options);

  /// tokens and segment_ids [L, B], labels [B]; n_targets = B.
  std::optional<Batch> next() override;
  bool continues_streams() const override {
    return false;
  }
  int64_t batches_per_pass() const override;
  /// The examples a pass reads.
  int64_t examples() const {
    return labels_.size(0);
  }
  int64_t epoch() const override {
    return epoch_;
  }
  std::string describe() const override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

 private:
  LabelledOptions options_;
  std::string name_;
  /// per example: [L] ids and segment ids, laid out and padded
  torch::Tensor tokens_;
  torch::Tensor segment_ids_;
  torch::Tensor labels_;
  /// [N] the positions of each row that are not padding
  torch::Tensor lengths_;
  at::Generator generator_;
  /// the examples the file holds; labels_ keeps the first max_examples of them
  int64_t available_ = 0;
  /// the order of the current pass
  torch::Tensor order_;
  /// A pass's order: file order or shuffled, grouped by length when asked (see LabelledOptions).
  torch::Tensor pass_order();
  int64_t epoch_ = 0;
  /// batches read in the current pass
  int64_t read_ = 0;
};

} // namespace xl::sources
