#include "xl/data/dataset.h"

#include <fmt/format.h>

#include "xl/data/corpus.h"
#include "xl/data/labelled_texts.h"
#include "xl/data/ordered_segments.h"
#include "xl/data/permutation_records.h"
#include "xl/data/sentence_tokens.h"
#include "xl/data/sources.h"
#include "xl/data/windows.h"
#include "xl/models/factory.h"
#include "xl/util/error.h"

namespace xl::data {

namespace {

namespace fs = std::filesystem;

const std::string& split_file(
    const config::DataConfig& d,
    const std::string& split) {
  if (split == "train") {
    return d.train;
  }
  return split == "valid" ? d.valid : d.test;
}

// Word or byte corpora (Transformer-XL, fixed-context models): one long token stream per split.
class TokenDataset : public Dataset {
 public:
  explicit TokenDataset(const config::Config& c) : c_(c), corpus_(c.data) {}

  int64_t vocab_size() const override {
    return corpus_.vocab().size();
  }
  VocabKind unit() const override {
    return corpus_.vocab().kind();
  }
  std::string describe() override {
    return fmt::format(
        "{}-level vocabulary of {}, {} training and {} validation tokens",
        to_string(unit()),
        vocab_size(),
        corpus_.split("train").size(),
        corpus_.split("valid").size());
  }
  std::unique_ptr<BatchSource> build_train_source() override {
    return make_train_source(c_.train, corpus_.split("train"), ext_len());
  }
  EvalBatches eval_batches(const std::string& split, bool validation) override {
    return token_eval_batches(c_, corpus_.split(split), validation);
  }
  EvalBatches file_batches(const fs::path& file) override {
    throw UserError(fmt::format(
        "{}: a {}-level corpus evaluates prepared splits; encode the file with xl-prep "
        "--vocab {} and name it in data.test",
        file.string(),
        to_string(unit()),
        (fs::path(c_.data.dir) / c_.data.vocab).string()));
  }

 private:
  int64_t ext_len() const {
    return models::training_span(c_.model).ext_len.value_or(0);
  }

  config::Config c_;
  Corpus corpus_;
};

// XLNet: a SentencePiece model and either encoded raw text (pretraining: permutation records)
// or labelled texts (classification).
class XLNetDataset : public Dataset {
 public:
  explicit XLNetDataset(const config::Config& c)
      : c_(c), dir_(c.data.dir), pieces_(dir_ / c.data.vocab) {}

  int64_t vocab_size() const override {
    return pieces_.size();
  }
  VocabKind unit() const override {
    return VocabKind::kWord;
  }
  std::string describe() override {
    return fmt::format(
        "SentencePiece vocabulary of {} ({}), {} from {}",
        vocab_size(),
        pieces_.path().string(),
        classification() ? "labelled texts" : "permutation LM records",
        (dir_ / c_.data.train).string());
  }
  std::unique_ptr<BatchSource> build_train_source() override {
    return split_source("train", c_.train.batch_size, true);
  }
  EvalBatches eval_batches(const std::string& split, bool /*validation*/)
      override {
    return described(split_source(split, c_.eval.batch_size, false));
  }
  EvalBatches file_batches(const fs::path& file) override {
    if (classification()) {
      return described(source(file, c_.eval.batch_size, false));
    }
    return described(
        records(encode_raw_text(file, pieces_), c_.eval.batch_size, false));
  }

 private:
  bool classification() const {
    return c_.model.xlnet.n_class > 0;
  }

  static EvalBatches described(std::unique_ptr<BatchSource> source) {
    auto setting = source->describe();
    return {std::move(source), std::move(setting)};
  }

  std::unique_ptr<BatchSource> split_source(
      const std::string& split,
      int64_t batch_size,
      bool training) {
    const fs::path path = dir_ / split_file(c_.data, split);
    if (classification()) {
      return source(path, batch_size, training);
    }
    return records(read_sentence_tokens(path, pieces_), batch_size, training);
  }

  // Labelled texts, shuffled for training.
  std::unique_ptr<BatchSource> source(
      const fs::path& path,
      int64_t batch_size,
      bool training) {
    LabelledOptions o;
    o.batch_size = batch_size;
    o.seq_len = c_.train.tgt_len;
    o.shuffle = training;
    o.seed = static_cast<uint64_t>(c_.train.seed);
    return std::make_unique<LabelledTexts>(path, pieces_, o);
  }

  // Permutation records; evaluation draws them from the same seed every time, so every
  // validation reads the same batches.
  std::unique_ptr<BatchSource> records(
      const SentenceTokens& tokens,
      int64_t batch_size,
      bool training) {
    const config::XLNetConfig& x = c_.model.xlnet;
    PermutationOptions o;
    o.batch_size = batch_size;
    o.seq_len = c_.train.tgt_len;
    o.reuse_len = x.reuse_len;
    o.perm_size = x.perm_size.value_or(x.reuse_len);
    o.num_predict = x.num_predict;
    o.mask_alpha = x.mask_alpha;
    o.mask_beta = x.mask_beta;
    o.bi_data = x.bi_data;
    o.seed = static_cast<uint64_t>(c_.train.seed);
    try {
      return std::make_unique<PermutationRecords>(
          tokens, pieces_.word_starts(), o);
    } catch (const UserError& e) {
      throw UserError(fmt::format(
          "{} (batch_size: {}.batch_size, seq_len: train.tgt_len, the others: "
          "model.xlnet.*)",
          e.what(),
          training ? "train" : "eval"));
    }
  }

  config::Config c_;
  fs::path dir_;
  SentencePiece pieces_;
};

} // namespace

EvalBatches token_eval_batches(
    const config::Config& c,
    const Tokens& tokens,
    bool validation) {
  if (validation || c.eval.mode == config::EvalMode::kMemory) {
    const int64_t tgt_len = c.eval.tgt_len.value_or(c.train.tgt_len);
    return {
        std::make_unique<OrderedSegments>(
            tokens,
            c.eval.batch_size,
            tgt_len,
            models::training_span(c.model).ext_len.value_or(0)),
        fmt::format("tgt_len {}, batch {}", tgt_len, c.eval.batch_size)};
  }
  const int64_t window = c.train.tgt_len;
  const int64_t stride = c.eval.stride;
  return {
      std::make_unique<SlidingWindows>(
          tokens, window, stride, c.eval.batch_size),
      fmt::format(
          "vanilla: window {}, {} scored, slide {}, {} windows per batch",
          window,
          stride == 1 ? std::string("last position")
                      : fmt::format("last {} positions", stride),
          stride,
          c.eval.batch_size)};
}

std::unique_ptr<Dataset> open_dataset(const config::Config& config) {
  switch (config.model.type) {
    case config::ModelType::kTransformerXL:
      return std::make_unique<TokenDataset>(config);
    case config::ModelType::kXLNet:
      return std::make_unique<XLNetDataset>(config);
  }
  TORCH_CHECK(false, "unhandled model.type");
}

} // namespace xl::data
