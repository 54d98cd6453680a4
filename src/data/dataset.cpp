#include "xl/data/dataset.h"

#include <fmt/format.h>

#include "xl/config/config.h"
#include "xl/data/corpus.h"
#include "xl/data/labelled_texts.h"
#include "xl/data/ordered_segments.h"
#include "xl/data/permutation_records.h"
#include "xl/data/sentence_tokens.h"
#include "xl/data/sources.h"
#include "xl/data/windows.h"
#include "xl/util/error.h"
#include "xl/util/files.h"

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

// Word or byte corpora (Transformer-XL, fixed-context models): one long token stream per split,
// from a prepared corpus or random.
class TokenDataset : public Dataset {
 public:
  explicit TokenDataset(const config::Config& c)
      : c_(c),
        corpus_(std::make_unique<Corpus>(c.data)),
        n_token_(corpus_->vocab().size()),
        unit_(corpus_->vocab().kind()) {
    if (c.model.type == config::ModelType::kCharTransformer &&
        unit_ != VocabKind::kByte) {
      throw UserError(fmt::format(
          "{}: the character transformer reads bytes, but this is a {}-level vocabulary "
          "of {}; prepare the corpus with xl-prep --format byte",
          (fs::path(c.data.dir) / c.data.vocab).string(),
          to_string(unit_),
          n_token_));
    }
  }
  TokenDataset(const config::Config& c, int64_t n_token, int64_t size)
      : c_(c),
        random_(std::make_unique<TokenTensor>(
            torch::randint(n_token, {size}, torch::kLong),
            "random tokens")),
        n_token_(n_token),
        unit_(
            c.model.type == config::ModelType::kCharTransformer
                ? VocabKind::kByte
                : VocabKind::kWord) {}

  int64_t vocab_size() const override {
    return n_token_;
  }
  VocabKind unit() const override {
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
  const Vocab& text_vocab() const override {
    if (!corpus_) {
      return Dataset::text_vocab();
    }
    return corpus_->vocab();
  }
  std::unique_ptr<BatchSource> build_train_source() override {
    return make_train_source(c_.train, split("train"), ext_len());
  }
  EvalBatches eval_batches(const std::string& name, bool validation) override {
    return token_eval_batches(c_, split(name), validation);
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
    return config::ext_len(c_.model);
  }

  const Tokens& split(const std::string& name) {
    if (corpus_) {
      return corpus_->split(name);
    }
    return *random_;
  }

  config::Config c_;
  std::unique_ptr<Corpus> corpus_;
  std::unique_ptr<TokenTensor> random_; // every split, without a corpus
  int64_t n_token_;
  VocabKind unit_;
};

// XLNet: a SentencePiece model and either encoded raw text (pretraining: permutation records)
// or labelled texts (classification); or random pieces, sentences and reviews of the same
// shapes.
class XLNetDataset : public Dataset {
 public:
  explicit XLNetDataset(const config::Config& c)
      : c_(c),
        dir_(c.data.dir),
        pieces_(std::make_unique<SentencePiece>(dir_ / c.data.vocab)),
        n_token_(pieces_->size()),
        word_starts_(pieces_->word_starts()) {}
  XLNetDataset(const config::Config& c, int64_t n_token, int64_t size)
      : c_(c), n_token_(n_token), word_starts_(n_token, true) {
    if (n_token <= kEopId + 1) {
      throw UserError(fmt::format(
          "random XLNet data needs more than XLNet's {} special pieces, got a "
          "vocabulary of {}",
          kEopId + 1,
          n_token));
    }
    // Ordinary pieces in sentences of 8 to 31, reviews of 1 to 2 * train.tgt_len pieces.
    auto ids = torch::randint(kEopId + 1, n_token, {size}, torch::kLong);
    random_pieces_.name = "random pieces";
    random_pieces_.ids.assign(
        ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + size);
    random_pieces_.sent_ids.resize(static_cast<size_t>(size));
    uint8_t sentence = 0;
    for (int64_t i = 0, next = 0; i < size; ++i) {
      if (i == next) {
        sentence = static_cast<uint8_t>(1 - sentence);
        next += torch::randint(8, 32, {1}).item<int64_t>();
      }
      random_pieces_.sent_ids[static_cast<size_t>(i)] = sentence;
    }
    const int64_t classes = std::max<int64_t>(c.model.xlnet.n_class, 1);
    for (int64_t used = 0; used < size;) {
      const auto length =
          torch::randint(1, 2 * c.train.tgt_len + 1, {1}).item<int64_t>();
      const auto piece = random_pieces_.ids.begin() + used;
      random_reviews_.push_back(
          {torch::randint(classes, {1}).item<int64_t>(),
           {piece, piece + std::min(length, size - used)}});
      used += length;
    }
  }

  int64_t vocab_size() const override {
    return n_token_;
  }
  VocabKind unit() const override {
    return VocabKind::kWord;
  }
  std::string vocabulary_fingerprint() const override {
    if (!pieces_) {
      return "";
    }
    const std::string model = read_file(pieces_->path(), "SentencePiece model");
    return fmt::format(
        "SentencePiece vocabulary of {}, checksum {:016x}",
        n_token_,
        hash64(model.data(), model.size()));
  }
  fs::path vocabulary_file() const override {
    return pieces_ ? pieces_->path() : fs::path();
  }
  const UnigramBaseline* unigram_baseline() override {
    if (!pieces_ || classification()) {
      return nullptr;
    }
    if (!unigram_) {
      const auto train = read_sentence_tokens(dir_ / c_.data.train, *pieces_);
      unigram_ = piece_unigram_baseline(train, *pieces_);
    }
    return &*unigram_;
  }
  std::string describe() override {
    return fmt::format(
        "SentencePiece vocabulary of {} ({}), {} from {}",
        vocab_size(),
        pieces_ ? pieces_->path().string() : "random",
        classification() ? "labelled texts" : "permutation LM records",
        pieces_ ? (dir_ / c_.data.train).string() : "random pieces");
  }
  std::unique_ptr<BatchSource> build_train_source() override {
    return split_source("train", c_.train.batch_size, true);
  }
  EvalBatches eval_batches(const std::string& split, bool /*validation*/)
      override {
    return described(split_source(split, c_.eval.batch_size, false));
  }
  EvalBatches file_batches(const fs::path& file) override {
    if (!pieces_) {
      throw UserError(fmt::format(
          "{}: random data has no SentencePiece model to encode files with",
          file.string()));
    }
    if (classification()) {
      return described(std::make_unique<LabelledTexts>(
          file, *pieces_, labelled_options(c_.eval.batch_size, false)));
    }
    return described(
        records(encode_raw_text(file, *pieces_), c_.eval.batch_size, false));
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
      auto o = labelled_options(batch_size, training);
      if (training) {
        o.max_examples = c_.data.train_examples;
      }
      try {
        return pieces_ ? std::make_unique<LabelledTexts>(path, *pieces_, o)
                       : std::make_unique<LabelledTexts>(
                             random_reviews_, "random reviews", o);
      } catch (const UserError& e) {
        if (!o.max_examples) {
          throw;
        }
        throw ConfigError(fmt::format(
            "{}: data.train_examples: {}; ask for at most that many, or null for all",
            c_.where("data.train_examples"),
            e.what()));
      }
    }
    return records(
        pieces_ ? read_sentence_tokens(path, *pieces_) : random_pieces_,
        batch_size,
        training);
  }

  // Labelled texts, shuffled for training.
  LabelledOptions labelled_options(int64_t batch_size, bool training) const {
    LabelledOptions o;
    o.batch_size = batch_size;
    o.seq_len = c_.train.tgt_len;
    o.shuffle = training;
    o.seed = static_cast<uint64_t>(c_.train.seed);
    // Evaluation sums over its batches, so reading by length changes no score.
    o.group_by_length = training ? c_.train.group_by_length : true;
    o.n_class = c_.model.xlnet.n_class;
    return o;
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
      return std::make_unique<PermutationRecords>(tokens, word_starts_, o);
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
  std::unique_ptr<SentencePiece> pieces_; // null: random data
  int64_t n_token_;
  std::vector<bool> word_starts_;
  SentenceTokens random_pieces_;
  std::vector<EncodedExample> random_reviews_;
  std::optional<UnigramBaseline> unigram_;
};

} // namespace

const Vocab& Dataset::text_vocab() const {
  throw UserError(fmt::format(
      "this data ({}) has no word or byte vocabulary to encode and decode text with",
      vocabulary_fingerprint().empty() ? "random" : vocabulary_fingerprint()));
}

EvalBatches token_eval_batches(
    const config::Config& c,
    const Tokens& tokens,
    bool validation) {
  if (validation || c.eval.mode == config::EvalMode::kMemory) {
    const int64_t tgt_len = c.eval.tgt_len.value_or(c.train.tgt_len);
    return {
        std::make_unique<OrderedSegments>(
            tokens, c.eval.batch_size, tgt_len, config::ext_len(c.model)),
        fmt::format("tgt_len {}, batch {}", tgt_len, c.eval.batch_size)};
  }
  const int64_t window = c.train.tgt_len;
  const int64_t stride = c.eval.stride;
  return {
      std::make_unique<SlidingWindows>(
          tokens, window, stride, c.eval.batch_size),
      fmt::format(
          "vanilla: window {}, {} scored, slide {}, {} windows per batch; the first {} "
          "tokens are context only (every scored position sees a full window)",
          window,
          stride == 1 ? std::string("last position")
                      : fmt::format("last {} positions", stride),
          stride,
          c.eval.batch_size,
          window)};
}

std::unique_ptr<Dataset> random_dataset(
    const config::Config& config,
    int64_t n_token,
    int64_t size) {
  switch (config.model.type) {
    case config::ModelType::kTransformerXL:
    case config::ModelType::kCharTransformer:
      return std::make_unique<TokenDataset>(config, n_token, size);
    case config::ModelType::kXLNet:
      return std::make_unique<XLNetDataset>(config, n_token, size);
  }
  TORCH_CHECK(false, "unhandled model.type");
}

std::unique_ptr<Dataset> open_dataset(const config::Config& config) {
  const std::filesystem::path dir = config.data.dir;
  if (!std::filesystem::is_directory(dir)) {
    throw UserError(fmt::format(
        "data.dir not found: {}{}; prepare it with xl-prep (see README) or set data.dir",
        dir.string(),
        dir.is_relative()
            ? fmt::format(
                  " (a relative data.dir is taken from the current "
                  "directory, {}, not from the config file's)",
                  std::filesystem::current_path().string())
            : ""));
  }
  switch (config.model.type) {
    case config::ModelType::kTransformerXL:
    case config::ModelType::kCharTransformer:
      return std::make_unique<TokenDataset>(config);
    case config::ModelType::kXLNet:
      return std::make_unique<XLNetDataset>(config);
  }
  TORCH_CHECK(false, "unhandled model.type");
}

} // namespace xl::data
