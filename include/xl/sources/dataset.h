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

#include "xl/config/schema.h"
#include "xl/formats/labelled_file.h"
#include "xl/formats/tokens.h"
#include "xl/formats/vocab.h"
#include "xl/sources/batch_source.h"
#include "xl/sources/unigram_baseline.h"

namespace xl::sources {

/// What scoring a user's file (Dataset::file_batches) read of it.
struct TextReading {
  /// what the file was read as: "words", "bytes", "pieces", "tokens" (a token file) or
  /// "examples"
  std::string unit;
  /// the units read, and those the vocabulary lacks
  formats::UnknownCount count;
  /// what became of those: "<unk>" or "left out" ("" where none can be)
  std::string unknown_as;
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
  /// for a user's file: what was read of it
  std::optional<TextReading> reading;
};

/// The sources a Dataset hands out may read its data: keep it alive while they are used.
class Dataset {
 public:
  virtual ~Dataset() = default;
  /// Entries of the vocabulary the model embeds.
  virtual int64_t vocab_size() const = 0;
  /// How token losses read: perplexity per word or piece, or bits per byte.
  virtual formats::VocabKind unit() const = 0;
  /// Names the vocabulary with its checksum, for checkpoints to record and compare ("" for
  /// random data).
  virtual std::string vocabulary_fingerprint() const = 0;
  /// The file that holds the vocabulary (empty for random data), for messages.
  virtual std::filesystem::path vocabulary_file() const = 0;
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
  virtual const formats::Vocab& text_vocab() const;
  /// The ids of `text` under the data's vocabulary (a last line without a line break gets no
  /// <eos>) or SentencePiece model, and the text of `ids`: the library's Model::encode and
  /// decode. From text_vocab() unless a family's data has another.
  virtual std::vector<int64_t> encode_text(const std::string& text) const;
  virtual std::string decode_ids(const std::vector<int64_t>& ids) const;
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
  /// Evaluation batches of a file the user names, read as its text would be prepared for
  /// data.dir (UTF-8 text encoded with the run's word or byte vocabulary, or a token file
  /// xl-prep wrote with it; raw text for XLNet pretraining, labelled text for classification),
  /// with what was read of it; a text too short for the usual batches is scored in fewer or
  /// shorter ones. The data keeps what the batches read: one file's batches at a time.
  virtual EvalBatches file_batches(const std::filesystem::path& file) = 0;
  /// The text of token `id`, for listing scores token by token: a word, a byte, a piece.
  virtual std::string token_text(int64_t id) const = 0;
  /// A classifier's evaluation batches of `examples` (`name` says what they are), each row's
  /// example in its target_index: predictions over a file read in parts. A UserError for data
  /// that is not labelled().
  virtual std::unique_ptr<BatchSource> example_batches(
      const std::vector<formats::LabelledText>& examples,
      const std::string& name);

 protected:
  virtual std::unique_ptr<BatchSource> build_train_source() = 0;

 private:
  std::unique_ptr<BatchSource> prepared_;
};

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

/// token_eval_batches for a user's text, whose every token counts: in memory mode, when the text
/// is too short for eval.batch_size streams of one eval.tgt_len segment each, fewer streams
/// (down to one of one shorter segment); in vanilla mode with a lead window (so a text no
/// longer than one window is that window alone). `fitted` says how a short text was cut, in one
/// line ("" when it fits). A text of fewer than 2 tokens is a UserError.
EvalBatches text_eval_batches(
    const config::Config& config,
    const formats::Tokens& tokens,
    int64_t ext_len,
    std::string& fitted);

/// The file of data.<split> ("train", "valid", "test").
const std::string& split_file(const config::DataConfig& data, const std::string& split);

/// A UserError unless data.dir is a folder, saying how relative paths are read.
void check_data_dir(const config::Config& config);

/// What a family configures of its word or byte token source.
struct TokenSourceOptions {
  /// the family reads bytes only (a word vocabulary is then a UserError naming model.type)
  bool bytes_only = false;
  /// tokens of context each training and memory-mode segment reads past its targets
  /// (Transformer-XL's model.transformer_xl.ext_len)
  int64_t ext_len = 0;
};

/// A word or byte corpus prepared by xl-prep in data.dir, one long token stream per split.
std::unique_ptr<Dataset> open_token_dataset(
    const config::Config& config,
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
