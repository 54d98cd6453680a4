// Word or byte corpora (Transformer-XL, fixed-context models): one long token stream per split,
// from a prepared corpus or random.
#include <fmt/format.h>

#include "xl/sources/corpus.h"
#include "xl/sources/dataset.h"
#include "xl/sources/sources.h"
#include "xl/util/error.h"

namespace xl::sources {

namespace {

class TokenDataset : public Dataset {
 public:
  TokenDataset(
      const config::Config& c,
      std::shared_ptr<const formats::Tokenizer> tokenizer,
      const TokenSourceOptions& options)
      : c_(c),
        tokenizer_(std::move(tokenizer)),
        corpus_(std::make_unique<Corpus>(
            c.data,
            tokenizer_->word_vocab(fmt::format("model.type {}", c.model.type.name)),
            tokenizer_->file())),
        n_token_(corpus_->vocab().size()),
        unit_(corpus_->vocab().kind()),
        ext_len_(options.ext_len) {
    if (options.bytes_only && unit_ != formats::VocabKind::kByte) {
      throw UserError(fmt::format(
          "{}: model.type {} reads bytes, but this is a {}-level vocabulary of {}; prepare the "
          "corpus with xl-prep --format byte",
          tokenizer_->file().string(),
          c.model.type.name,
          to_string(unit_),
          n_token_));
    }
  }
  TokenDataset(
      const config::Config& c,
      int64_t n_token,
      int64_t size,
      const TokenSourceOptions& options)
      : c_(c),
        random_(std::make_unique<formats::TokenTensor>(
            torch::randint(n_token, {size}, torch::kLong),
            "random tokens")),
        n_token_(n_token),
        unit_(options.bytes_only ? formats::VocabKind::kByte : formats::VocabKind::kWord),
        ext_len_(options.ext_len) {}

  int64_t vocab_size() const override {
    return n_token_;
  }
  formats::VocabKind unit() const override {
    return unit_;
  }
  const formats::Tokenizer* tokenizer() const override {
    return tokenizer_.get();
  }
  std::string describe() override {
    return fmt::format(
        "{}-level vocabulary of {}, {} training and {} validation tokens",
        to_string(unit()),
        vocab_size(),
        split("train").size(),
        split("valid").size());
  }
  std::unique_ptr<BatchSource> build_train_source() override {
    return make_train_source(c_.train, split("train"), ext_len_);
  }
  EvalBatches eval_batches(const std::string& name, bool validation) override {
    return token_eval_batches(c_, split(name), validation, ext_len_);
  }
  EvalBatches text_batches(const UserText& text, const TextScoring& scoring) const override {
    if (!tokenizer_) {
      throw UserError(
          fmt::format("{}: random data has no vocabulary to encode a text with", text.name));
    }
    TextReading reading;
    auto tokens = read_user_text(text, *tokenizer_, reading);
    auto batches = text_eval_batches(c_, *tokens, ext_len_, scoring.streams, reading.fitted);
    batches.owned = std::move(tokens);
    batches.reading = std::move(reading);
    return batches;
  }
  EvalBatches document_batches(
      const std::vector<const formats::Tokens*>& documents) const override {
    if (c_.eval.mode != config::EvalMode::kMemory || ext_len_ > 0) {
      return {};
    }
    return row_batches(c_, documents, RowLayout::kNext);
  }

 private:
  const formats::Tokens& split(const std::string& name) {
    if (corpus_) {
      return corpus_->split(name);
    }
    return *random_;
  }

  config::Config c_;
  std::shared_ptr<const formats::Tokenizer> tokenizer_; // null: random data
  std::unique_ptr<Corpus> corpus_;
  std::unique_ptr<formats::TokenTensor> random_; // every split, without a corpus
  int64_t n_token_;
  formats::VocabKind unit_;
  int64_t ext_len_;
};

} // namespace

std::unique_ptr<Dataset> open_token_dataset(
    const config::Config& config,
    std::shared_ptr<const formats::Tokenizer> tokenizer,
    const TokenSourceOptions& options) {
  return std::make_unique<TokenDataset>(config, std::move(tokenizer), options);
}

std::unique_ptr<Dataset> random_token_dataset(
    const config::Config& config,
    int64_t n_token,
    int64_t size,
    const TokenSourceOptions& options) {
  return std::make_unique<TokenDataset>(config, n_token, size, options);
}

} // namespace xl::sources
