// The score of every token of a text, for surprisal studies (xl-eval --per-token): a TSV file
// with a header line and one row per token,
//
//   index<TAB>token<TAB>log_prob
//
// the token's position in the text's token sequence (from 0), its text (a word, a byte or a
// piece: tsv_field) and ln p(token | what precedes it) under the model, in nats. A user's text
// read with a word or byte vocabulary adds two columns,
//
//   index<TAB>token<TAB>log_prob<TAB>offset<TAB>text
//
// the byte of the text the token starts at and the text's bytes it stems from: the word as the
// user wrote it where the model reads <unk>, the line break of an <eos>, the "-" of a "@-@".
// A language model lists the tokens in
// text order, each once; where the evaluation scored no target (the first token, the context of
// vanilla windows, what a partial pass did not reach) log_prob is empty. XLNet's permutation LM
// lists its predictions in the order it scored them: a row per predicted piece, positions
// repeating across passes and bi_data's backward rows.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "xl/formats/tokens.h"
#include "xl/sources/batch.h"
#include "xl/util/scratch_file.h"

namespace xl::eval {

class PerTokenListing {
 public:
  /// A listing for `out` (checked beforehand: run::check_output_file), or kept in memory for
  /// each_row() (no `out`). With `tokens` (into which the batches' target_index point), in text
  /// order, the scores kept in scratch space beside `out` until write(): a text of any size
  /// costs bounded memory. Without, in scoring order.
  PerTokenListing(
      std::optional<std::filesystem::path> out,
      const formats::Tokens* tokens,
      std::function<std::string(int64_t)> token_text);

  /// The log-probabilities [T, B] of `batch`'s targets (CPU), placed by its target_index.
  void add(const sources::Batch& batch, const torch::Tensor& log_probs);
  /// Writes the file atomically, with a progress line at least every `progress_seconds` when it
  /// is long; returns its rows.
  int64_t write(double progress_seconds) const;

  /// Receives a row: the token's position, its text, log p (NaN: not scored) and where it
  /// stands in the text (null: the tokens keep no origins).
  using RowSink = std::function<void(
      int64_t index,
      const std::string& token,
      float log_prob,
      const formats::TokenOrigin* origin)>;
  /// Each row in the file's order (what write() writes), in bounded memory, with a progress line
  /// at least every `progress_seconds` (0: none); returns their count.
  int64_t each_row(const RowSink& sink, double progress_seconds = 0.0) const;

 private:
  /// a target scored in scoring order: its position, its id, its log p
  struct Scored {
    int64_t index;
    int64_t id;
    float log_prob;
    float padding;
  };

  std::optional<std::filesystem::path> out_;
  const formats::Tokens* tokens_;
  std::function<std::string(int64_t)> token_text_;
  /// text order: a float per token (NaN: not scored); scoring order: a Scored per row
  std::unique_ptr<ScratchFile> scratch_;
  int64_t rows_ = 0;
};

/// `text` as one TSV field: \t, \n, \r and \\ escaped, other control bytes as \xNN, and so are
/// the bytes of a field that is no UTF-8 on its own (a byte of a longer character).
std::string tsv_field(const std::string& text);

} // namespace xl::eval
