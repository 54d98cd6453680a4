#include "xl/sources/dataset.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "xl/config/config.h"
#include "xl/formats/text_tokens.h"
#include "xl/formats/token_file.h"
#include "xl/sources/corpus.h"
#include "xl/sources/ordered_segments.h"
#include "xl/sources/sources.h"
#include "xl/sources/windows.h"
#include "xl/util/error.h"
#include "xl/util/files.h"
#include "xl/util/scratch_file.h"

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
    if (options.bytes_only && unit_ != formats::VocabKind::kByte) {
      throw UserError(fmt::format(
          "{}: model.type {} reads bytes, but this is a {}-level vocabulary of {}; prepare the "
          "corpus with xl-prep --format byte",
          (fs::path(c.data.dir) / c.data.vocab).string(),
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
    const formats::Vocab& vocab = text_vocab();
    TextReading reading;
    file_tokens_.reset();
    if (formats::looks_like_token_file(file)) {
      file_tokens_ = std::make_unique<formats::TokenFile>(file, vocab, vocabulary_file());
      reading.unit = "tokens";
      reading.count.units = file_tokens_->size();
    } else {
      auto text = std::make_unique<formats::TextTokens>(file, vocab, scratch_dir());
      reading.unit = unit_ == formats::VocabKind::kByte ? "bytes" : "words";
      reading.count = text->unknown();
      reading.unknown_as = vocab.has_unknown_token() ? "<unk>" : "left out";
      file_tokens_ = std::move(text);
    }
    auto batches = text_eval_batches(c_, *file_tokens_, ext_len_, reading.fitted);
    batches.reading = std::move(reading);
    return batches;
  }
  std::string token_text(int64_t id) const override {
    return corpus_ ? corpus_->vocab().token(id) : std::to_string(id);
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
  std::unique_ptr<formats::Tokens> file_tokens_; // the last file_batches' text
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

std::vector<int64_t> Dataset::encode_text(const std::string& text) const {
  return text_vocab().encode(text, "the text", /*open_end=*/true);
}

std::string Dataset::decode_ids(const std::vector<int64_t>& ids) const {
  return text_vocab().decode(ids);
}

std::unique_ptr<BatchSource> Dataset::example_batches(
    const std::vector<formats::LabelledText>& /*examples*/,
    const std::string& name) {
  throw UserError(fmt::format(
      "{}: this data ({}) is no classifier's labelled texts",
      name,
      vocabulary_fingerprint().empty() ? "random" : vocabulary_fingerprint()));
}

EvalBatches token_eval_batches(
    const config::Config& c,
    const formats::Tokens& tokens,
    bool validation,
    int64_t ext_len,
    bool lead) {
  if (validation || c.eval.mode == config::EvalMode::kMemory) {
    const int64_t tgt_len = c.eval.tgt_len.value_or(c.train.tgt_len);
    return {
        std::make_unique<OrderedSegments>(tokens, c.eval.batch_size, tgt_len, ext_len),
        fmt::format("tgt_len {}, batch {}", tgt_len, c.eval.batch_size),
        &tokens,
        {}};
  }
  const int64_t window = c.train.tgt_len;
  const int64_t stride = c.eval.stride;
  return {
      std::make_unique<SlidingWindows>(tokens, window, stride, c.eval.batch_size, lead),
      fmt::format(
          "vanilla: window {}, {} scored, slide {}, {} windows per batch; {}",
          window,
          stride == 1 ? std::string("last position") : fmt::format("last {} positions", stride),
          stride,
          c.eval.batch_size,
          lead ? fmt::format(
                     "the targets before token {} are scored with the tokens before them (less "
                     "context than a window)",
                     window)
               : fmt::format(
                     "the first {} tokens are context only (every scored position sees a full "
                     "window)",
                     window)),
      &tokens,
      {}};
}

EvalBatches text_eval_batches(
    const config::Config& c,
    const formats::Tokens& tokens,
    int64_t ext_len,
    std::string& fitted) {
  const int64_t n = tokens.size();
  if (n < 2) {
    throw UserError(fmt::format(
        "{} holds {} token{}: a language model scores a text of at least 2 (the first is "
        "context only)",
        tokens.name(),
        n,
        n == 1 ? "" : "s"));
  }
  fitted.clear();
  if (c.eval.mode == config::EvalMode::kVanilla) {
    if (n <= c.train.tgt_len) {
      fitted = fmt::format(
          "{} holds {} tokens, no more than one window of {}: scored as one window of its first "
          "{}, each target with the tokens before it",
          tokens.name(),
          n,
          c.train.tgt_len,
          n - 1);
    }
    return token_eval_batches(c, tokens, false, ext_len, true);
  }
  const int64_t tgt_len = c.eval.tgt_len.value_or(c.train.tgt_len);
  // Each stream holds at least one segment and the token after it, where the text allows.
  const int64_t streams = std::clamp<int64_t>(n / (tgt_len + 1), 1, c.eval.batch_size);
  if (streams == c.eval.batch_size) {
    return token_eval_batches(c, tokens, false, ext_len);
  }
  fitted = n - 1 <= tgt_len
      ? fmt::format(
            "{} holds {} tokens, no more than one segment of {} (eval.tgt_len) and the token "
            "after it: scored as one stream of {} targets",
            tokens.name(),
            n,
            tgt_len,
            n - 1)
      : fmt::format(
            "{} holds {} tokens, too few for {} streams (eval.batch_size) of a segment of {} "
            "(eval.tgt_len) each: scored as {} stream{}",
            tokens.name(),
            n,
            c.eval.batch_size,
            tgt_len,
            streams,
            streams == 1 ? "" : "s");
  return {
      std::make_unique<OrderedSegments>(tokens, streams, tgt_len, ext_len),
      fmt::format("tgt_len {}, batch {}", tgt_len, streams),
      &tokens,
      {}};
}

const std::string& split_file(const config::DataConfig& d, const std::string& split) {
  if (split == "train") {
    return d.train;
  }
  return split == "valid" ? d.valid : d.test;
}

namespace {

// The folders scripts/getdata.sh prepares (data/prepared/<folder>), by the name it takes.
std::string getdata_name(const std::filesystem::path& dir) {
  static const std::map<std::string, std::string> kCorpora{
      {"wikitext-2", "wikitext-2"},
      {"wikitext-103", "wt103"},
      {"enwik8", "enwik8"},
      {"text8", "text8"},
      {"enwik8-prefix", "enwik8-prefix"},
      {"nsmc", "nsmc"},
      {"nsmc_8k", "nsmc"}};
  const auto name = dir.lexically_normal().filename().string();
  const auto it =
      kCorpora.find(name.empty() ? dir.lexically_normal().parent_path().filename().string() : name);
  return it == kCorpora.end() ? "" : it->second;
}

} // namespace

void check_data_dir(const config::Config& config) {
  const std::filesystem::path dir = config.data.dir;
  std::error_code ec;
  if (std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec)) {
    throw UserError(fmt::format(
        "data.dir {} is a file, expected the folder xl-prep wrote (data.dir names the folder "
        "of train.bin, valid.bin, ..., not one file)",
        dir.string()));
  }
  if (!std::filesystem::is_directory(dir, ec)) {
    const std::string corpus = getdata_name(dir);
    throw UserError(fmt::format(
        "data.dir not found: {}{}; prepare it with {} or set data.dir",
        dir.string(),
        dir.is_relative() ? fmt::format(
                                " (a relative data.dir is taken from the current "
                                "directory, {}, not from the config file's)",
                                std::filesystem::current_path().string())
                          : "",
        corpus.empty() ? std::string("xl-prep (README: Train, evaluate, ablate)")
                       : fmt::format(
                             "scripts/getdata.sh {} (from the repository's root; offline, it "
                             "prints the xl-prep command for files at hand)",
                             corpus)));
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
