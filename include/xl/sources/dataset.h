// What a run reads, whichever the model family: the vocabulary size, how token losses read, and
// the batch sources of the training and evaluation splits. The trainer, the evaluation commands
// and the benchmark go through this interface; each model family opens its own data
// (models::open_dataset asks the family's descriptor):
//
//   model family            data.dir holds (xl-prep --format ...)       batches
//   transformer_xl          vocab.txt, <split>.bin (word, byte)          ordered segments, windows
//   char_transformer        vocab.txt, <split>.bin (byte)                windows
//   xlnet, n_class 0        spiece.model, <split>.pieces (xlnet)         permutation records
//   xlnet, n_class > 0      spiece.model, <split>.tsv (nsmc)             labelled texts
//
// Token corpora (one long stream per split) live here; XLNet's data in models/xlnet/data.h.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "xl/config/schema.h"
#include "xl/formats/labelled_file.h"
#include "xl/formats/text_tokens.h"
#include "xl/formats/tokenizer.h"
#include "xl/formats/tokens.h"
#include "xl/formats/vocab.h"
#include "xl/sources/batch_source.h"
#include "xl/sources/row_segments.h"
#include "xl/sources/unigram_baseline.h"

namespace xl::sources {

/// What scoring a user's text (Dataset::text_batches) read of it.
struct TextReading {
  /// what the text was read as: "words", "bytes", "pieces", "tokens" (a token file) or
  /// "examples"
  std::string unit;
  /// the units read, and those the vocabulary lacks
  formats::UnknownCount count;
  /// what became of those: "<unk>" or "left out" ("" where none can be)
  std::string unknown_as;
  /// the rules that split raw text into words (formats::Tokenization: "wikitext"), "" for none
  std::string rules;
  /// how a text too short for the evaluation's usual batches was cut, in one line ("": it was
  /// not)
  std::string fitted;
};

/// An evaluation's batches and what they are, in words.
struct EvalBatches {
  std::unique_ptr<BatchSource> source;
  std::string setting;
  /// the tokens in text order, into which the batches' target_index point, each target once
  /// (null where a pass scores no text in order: XLNet's permutation records, labelled texts)
  const formats::Tokens* tokens = nullptr;
  /// for a user's text: what was read of it
  std::optional<TextReading> reading;
  /// what the source reads and `tokens` points into, where the batches own it (a user's text)
  std::shared_ptr<const formats::Tokens> owned;
  /// the positions of each batch that go into the memory, where the source decides it (0: all
  /// of them; unset: the model's own setting, XLNet's reuse_len)
  std::optional<int64_t> reuse_len;
  /// a user's text: the streams it is read in, side by side (unset: a split's eval.batch_size)
  std::optional<int64_t> streams;
};

/// A user's text to score: a file, or text held in memory.
struct UserText {
  /// the file (unset: `text`)
  std::optional<std::filesystem::path> file;
  /// the text itself, when there is no file
  std::string_view text;
  /// what messages call it: the file, or a name the caller gives ("the text")
  std::string name;
  /// tokenized already, or raw text under the vocabulary's rules; keep the tokens' origins
  formats::TextOptions options;
};

/// How a user's text is scored.
struct TextScoring {
  /// the contiguous streams a memory-mode evaluation cuts the text into, each read with the
  /// memory from its own start: 1 reads the whole text with the long memory (fewer where the
  /// text is too short for this many)
  int64_t streams = 1;
  /// XLNet: the permutation LM's sampled estimate of pretraining's evaluation (num_predict
  /// targets per record) instead of every token left to right
  bool permutation = false;
};

/// The sources a Dataset hands out may read its data: keep it alive while they are used. The
/// data of a trained run opened for inference (models::open_dataset with the run's tokenizer)
/// reads data.dir only when a split is asked for; what it hands out for a user's text or
/// examples reads nothing of the Dataset's own, so threads may ask for them at once.
class Dataset {
 public:
  virtual ~Dataset() = default;
  /// Entries of the vocabulary the model embeds.
  virtual int64_t vocab_size() const = 0;
  /// How token losses read: perplexity per word or piece, or bits per byte.
  virtual formats::VocabKind unit() const = 0;
  /// The vocabulary or SentencePiece model that encodes and decodes the data's text (null for
  /// random data).
  virtual const formats::Tokenizer* tokenizer() const = 0;
  /// Names the vocabulary with its checksum, for checkpoints to record and compare ("" for
  /// random data).
  std::string vocabulary_fingerprint() const;
  /// The file that holds the vocabulary (empty for random data), for messages.
  std::filesystem::path vocabulary_file() const;
  /// What a language model's targets score under the training split's unigram counts, for
  /// evaluations to print beside the model's loss; null where the data has none (random data,
  /// classification).
  virtual const UnigramBaseline* unigram_baseline() {
    return nullptr;
  }
  /// Whether the data are labelled texts for a classifier (no language model to score tokens).
  virtual bool labelled() const {
    return false;
  }
  /// One line for the log: the vocabulary and the training split.
  virtual std::string describe() = 0;
  /// The word or byte vocabulary that encodes prompts and decodes generated text; a UserError
  /// for data without one.
  const formats::Vocab& text_vocab() const;
  /// Builds the training batches now, so that options the data cannot serve fail before a run
  /// writes anything; the next train_source() hands them out.
  void prepare_training() {
    prepared_ = build_train_source();
  }
  /// The training batches (the split data.train names).
  std::unique_ptr<BatchSource> train_source() {
    return prepared_ ? std::move(prepared_) : build_train_source();
  }
  /// Batches of `split` ("valid" or "test"); `validation`: the periodic validation of training,
  /// otherwise the final evaluation the eval section describes.
  virtual EvalBatches eval_batches(const std::string& split, bool validation) = 0;
  /// Evaluation batches of a text the user gives, read as its text would be prepared for
  /// data.dir (UTF-8 text encoded with the run's word or byte vocabulary, or a token file
  /// xl-prep wrote with it; raw text for XLNet, scored left to right or by permutations as
  /// `scoring` says; labelled text for classification), with what was read of it; a text too
  /// short for the usual batches is scored in fewer or shorter ones. The batches own what they
  /// read.
  virtual EvalBatches text_batches(const UserText& text, const TextScoring& scoring) const = 0;
  /// Batches that score `documents` (each of at least 2 tokens, outliving the batches) side by
  /// side, a row each, every document read from its own start with a memory of its own
  /// (RowSegments), so that each scores as text_batches scores it alone; no source where the
  /// data's evaluation cannot put documents side by side (vanilla windows, ext_len), and each is
  /// then scored on its own.
  virtual EvalBatches document_batches(const std::vector<const formats::Tokens*>& documents) const;
  /// A classifier's evaluation batches of `examples` (`name` says what they are), each row's
  /// example in its target_index: predictions over a file read in parts. A UserError for data
  /// that is not labelled().
  virtual std::unique_ptr<BatchSource> example_batches(
      const std::vector<formats::LabelledText>& examples,
      const std::string& name) const;

 protected:
  virtual std::unique_ptr<BatchSource> build_train_source() = 0;

 private:
  std::unique_ptr<BatchSource> prepared_;
};

/// Documents side by side in segments of eval.tgt_len, one row each (Dataset::document_batches).
EvalBatches row_batches(
    const config::Config& config,
    const std::vector<const formats::Tokens*>& documents,
    RowLayout layout);

/// Batches of `source` over `tokens` (EvalBatches::tokens), `setting` saying what they are.
EvalBatches over_tokens(
    std::unique_ptr<BatchSource> source,
    std::string setting,
    const formats::Tokens& tokens);

/// Evaluation batches over one token stream as the eval section asks (memory mode: ordered
/// segments of eval.tgt_len; vanilla mode: sliding windows of train.tgt_len scoring the last
/// eval.stride positions, with `lead` also the targets before the first full window);
/// `validation` is always memory mode; the segments read `ext_len` tokens of context past their
/// targets. `tokens` must outlive the source.
EvalBatches token_eval_batches(
    const config::Config& config,
    const formats::Tokens& tokens,
    bool validation,
    int64_t ext_len,
    bool lead = false);

/// token_eval_batches for a user's text, whose every token counts: in memory mode, `streams`
/// streams, fewer when the text is too short for that many of one eval.tgt_len segment each
/// (down to one of one shorter segment); in vanilla mode with a lead window (so a text no
/// longer than one window is that window alone). `fitted` says how a short text was cut, in one
/// line ("" when it fits). A text of fewer than 2 tokens is a UserError.
EvalBatches text_eval_batches(
    const config::Config& config,
    const formats::Tokens& tokens,
    int64_t ext_len,
    int64_t streams,
    std::string& fitted);

/// The tokens of a user's text (a file read in bounded memory, or text held in memory) encoded
/// with `tokenizer`, and what was read of it (`unit`, the unknown words); a token file or a
/// pieces file that xl-prep wrote with the same vocabulary is read as it is, one of another
/// kind refused (refuse_encoded_file).
/// Refuses `file` where `tokenizer` reads text when xl-prep wrote it (a token file or a pieces
/// file, told by its magic), naming what it is and what the run reads instead.
void refuse_encoded_file(const std::filesystem::path& file, const formats::Tokenizer& tokenizer);

std::shared_ptr<const formats::Tokens> read_user_text(
    const UserText& text,
    const formats::Tokenizer& tokenizer,
    TextReading& reading);

/// The file of data.<split> ("train", "valid", "test").
const std::string& split_file(const config::DataConfig& data, const std::string& split);

/// A UserError unless `dir` (data.dir) is a folder, saying how relative paths are read.
void check_data_dir(const std::filesystem::path& dir);

/// What a family configures of its word or byte token source.
struct TokenSourceOptions {
  /// the family reads bytes only (a word vocabulary is then a UserError naming model.type)
  bool bytes_only = false;
  /// tokens of context each training and memory-mode segment reads past its targets
  /// (Transformer-XL's model.transformer_xl.ext_len)
  int64_t ext_len = 0;
};

/// A word or byte corpus prepared by xl-prep in data.dir, one long token stream per split,
/// encoded with `tokenizer` (a vocabulary: the corpus's own, or a trained run's copy of it).
std::unique_ptr<Dataset> open_token_dataset(
    const config::Config& config,
    std::shared_ptr<const formats::Tokenizer> tokenizer,
    const TokenSourceOptions& options = {});

/// `size` uniform ids below `n_token` that every split shares (benchmarks: no prepared data
/// needed), read as bytes where `options` reads bytes only and else as words, with segments as
/// open_token_dataset's.
std::unique_ptr<Dataset> random_token_dataset(
    const config::Config& config,
    int64_t n_token,
    int64_t size,
    const TokenSourceOptions& options = {});

} // namespace xl::sources
