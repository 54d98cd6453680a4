#include "xl/sources/dataset.h"

#include <fmt/format.h>

#include "xl/config/config.h"
#include "xl/sources/corpus.h"
#include "xl/sources/ordered_segments.h"
#include "xl/sources/sources.h"
#include "xl/sources/windows.h"
#include "xl/util/error.h"
#include "xl/util/files.h"

namespace xl::sources {

namespace {

namespace fs = std::filesystem;

// Word or byte corpora (Transformer-XL, fixed-context models): one long token stream per split,
// from a prepared corpus or random.
class TokenDataset : public Dataset {
 public:
  TokenDataset(const config::Config& c, const TokenSourceOptions& options)
      : c_(c),
        corpus_(std::make_unique<Corpus>(c.data)),
        n_token_(corpus_->vocab().size()),
        unit_(corpus_->vocab().kind()),
        ext_len_(options.ext_len) {
    if (!options.bytes_only.empty() && unit_ != formats::VocabKind::kByte) {
      throw UserError(fmt::format(
          "{}: the {} reads bytes, but this is a {}-level vocabulary of {}; prepare the "
          "corpus with xl-prep --format byte",
          (fs::path(c.data.dir) / c.data.vocab).string(),
          options.bytes_only,
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
        unit_(options.bytes_only.empty() ? formats::VocabKind::kWord : formats::VocabKind::kByte),
        ext_len_(options.ext_len) {}

  int64_t vocab_size() const override {
    return n_token_;
  }
  formats::VocabKind unit() const override {
    return unit_;
  }
  std::string vocabulary_fingerprint() const override {
    return corpus_ ? fmt::format(
                         "{}-level vocabulary of {}, checksum {:016x}",
                         to_string(unit_),
                         n_token_,
                         corpus_->vocab().checksum())
                   : "";
  }
  fs::path vocabulary_file() const override {
    return corpus_ ? fs::path(c_.data.dir) / c_.data.vocab : fs::path();
  }
  std::string describe() override {
    return fmt::format(
        "{}-level vocabulary of {}, {} training and {} validation tokens",
        to_string(unit()),
        vocab_size(),
        split("train").size(),
        split("valid").size());
  }
  const formats::Vocab& text_vocab() const override {
    if (!corpus_) {
      return Dataset::text_vocab();
    }
    return corpus_->vocab();
  }
  std::unique_ptr<BatchSource> build_train_source() override {
    return make_train_source(c_.train, split("train"), ext_len_);
  }
  EvalBatches eval_batches(const std::string& name, bool validation) override {
    return token_eval_batches(c_, split(name), validation, ext_len_);
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
  const formats::Tokens& split(const std::string& name) {
    if (corpus_) {
      return corpus_->split(name);
    }
    return *random_;
  }

  config::Config c_;
  std::unique_ptr<Corpus> corpus_;
  std::unique_ptr<formats::TokenTensor> random_; // every split, without a corpus
  int64_t n_token_;
  formats::VocabKind unit_;
  int64_t ext_len_;
};

} // namespace

const formats::Vocab& Dataset::text_vocab() const {
  throw UserError(fmt::format(
      "this data ({}) has no word or byte vocabulary to encode and decode text with",
      vocabulary_fingerprint().empty() ? "random" : vocabulary_fingerprint()));
}

EvalBatches token_eval_batches(
    const config::Config& c,
    const formats::Tokens& tokens,
    bool validation,
    int64_t ext_len) {
  if (validation || c.eval.mode == config::EvalMode::kMemory) {
    const int64_t tgt_len = c.eval.tgt_len.value_or(c.train.tgt_len);
    return {
        std::make_unique<OrderedSegments>(tokens, c.eval.batch_size, tgt_len, ext_len),
        fmt::format("tgt_len {}, batch {}", tgt_len, c.eval.batch_size)};
  }
  const int64_t window = c.train.tgt_len;
  const int64_t stride = c.eval.stride;
  return {
      std::make_unique<SlidingWindows>(tokens, window, stride, c.eval.batch_size),
      fmt::format(
          "vanilla: window {}, {} scored, slide {}, {} windows per batch; the first {} "
          "tokens are context only (every scored position sees a full window)",
          window,
          stride == 1 ? std::string("last position") : fmt::format("last {} positions", stride),
          stride,
          c.eval.batch_size,
          window)};
}

const std::string& split_file(const config::DataConfig& d, const std::string& split) {
  if (split == "train") {
    return d.train;
  }
  return split == "valid" ? d.valid : d.test;
}

void check_data_dir(const config::Config& config) {
  const std::filesystem::path dir = config.data.dir;
  if (!std::filesystem::is_directory(dir)) {
    throw UserError(fmt::format(
        "data.dir not found: {}{}; prepare it with xl-prep (see README) or set data.dir",
        dir.string(),
        dir.is_relative() ? fmt::format(
                                " (a relative data.dir is taken from the current "
                                "directory, {}, not from the config file's)",
                                std::filesystem::current_path().string())
                          : ""));
  }
}

std::unique_ptr<Dataset> open_token_dataset(
    const config::Config& config,
    const TokenSourceOptions& options) {
  return std::make_unique<TokenDataset>(config, options);
}

std::unique_ptr<Dataset> random_token_dataset(
    const config::Config& config,
    int64_t n_token,
    int64_t size,
    const TokenSourceOptions& options) {
  return std::make_unique<TokenDataset>(config, n_token, size, options);
}

} // namespace xl::sources
