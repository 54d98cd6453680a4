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
#include <string>

#include "xl/config/schema.h"
#include "xl/formats/tokens.h"
#include "xl/formats/vocab.h"
#include "xl/sources/batch_source.h"
#include "xl/sources/unigram_baseline.h"

namespace xl::sources {

/// An evaluation's batches and what they are, in words.
struct EvalBatches {
  std::unique_ptr<BatchSource> source;
  std::string setting;
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
  /// One line for the log: the vocabulary and the training split.
  virtual std::string describe() = 0;
  /// The word or byte vocabulary that encodes prompts and decodes generated text; a UserError
  /// for data without one.
  virtual const formats::Vocab& text_vocab() const;
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
  /// Evaluation batches of a file the user names, prepared as the data.dir splits are (raw text
  /// for XLNet pretraining, labelled text for classification); a UserError for data that needs
  /// xl-prep first.
  virtual EvalBatches file_batches(const std::filesystem::path& file) = 0;

 protected:
  virtual std::unique_ptr<BatchSource> build_train_source() = 0;

 private:
  std::unique_ptr<BatchSource> prepared_;
};

/// Evaluation batches over one token stream as the eval section asks (memory mode: ordered
/// segments of eval.tgt_len; vanilla mode: sliding windows of train.tgt_len scoring the last
/// eval.stride positions); `validation` is always memory mode; the segments read `ext_len` tokens
/// of context past their targets. `tokens` must outlive the source.
EvalBatches token_eval_batches(
    const config::Config& config,
    const formats::Tokens& tokens,
    bool validation,
    int64_t ext_len);

/// The file of data.<split> ("train", "valid", "test").
const std::string& split_file(const config::DataConfig& data, const std::string& split);

/// A UserError unless data.dir is a folder, saying how relative paths are read.
void check_data_dir(const config::Config& config);

/// What a family configures of its word or byte token source.
struct TokenSourceOptions {
  /// the family's name where it reads bytes only (a word vocabulary is then a UserError naming
  /// it); empty where either will do
  std::string bytes_only;
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
