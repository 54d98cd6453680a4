#include "xl/models/xlnet/data.h"

#include <fmt/format.h>

#include <algorithm>

#include "xl/formats/sentence_tokens.h"
#include "xl/formats/sentencepiece.h"
#include "xl/models/xlnet/config.h"
#include "xl/sources/labelled_texts.h"
#include "xl/sources/permutation_records.h"
#include "xl/util/error.h"
#include "xl/util/files.h"

namespace xl::models {

namespace {

namespace fs = std::filesystem;

// A SentencePiece model and either encoded raw text or labelled texts; or random pieces,
// sentences and reviews of the same shapes.
class XLNetDataset : public sources::Dataset {
 public:
  explicit XLNetDataset(const config::Config& c)
      : c_(c),
        dir_(c.data.dir),
        pieces_(std::make_unique<formats::SentencePiece>(dir_ / c.data.vocab)),
        n_token_(pieces_->size()),
        word_starts_(pieces_->word_starts()) {}
  XLNetDataset(const config::Config& c, int64_t n_token, int64_t size)
      : c_(c), n_token_(n_token), word_starts_(n_token, true) {
    if (n_token <= formats::kEopId + 1) {
      throw UserError(fmt::format(
          "random XLNet data needs more than XLNet's {} special pieces, got a "
          "vocabulary of {}",
          formats::kEopId + 1,
          n_token));
    }
    // Ordinary pieces in sentences of 8 to 31, reviews of 1 to 2 * train.tgt_len pieces.
    auto ids = torch::randint(formats::kEopId + 1, n_token, {size}, torch::kLong);
    random_pieces_.name = "random pieces";
    random_pieces_.ids.assign(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + size);
    random_pieces_.sent_ids.resize(static_cast<size_t>(size));
    uint8_t sentence = 0;
    for (int64_t i = 0, next = 0; i < size; ++i) {
      if (i == next) {
        sentence = static_cast<uint8_t>(1 - sentence);
        next += torch::randint(8, 32, {1}).item<int64_t>();
      }
      random_pieces_.sent_ids[static_cast<size_t>(i)] = sentence;
    }
    const int64_t classes = std::max<int64_t>(c.model.section<XLNetConfig>().n_class, 1);
    for (int64_t used = 0; used < size;) {
      const auto length = torch::randint(1, 2 * c.train.tgt_len + 1, {1}).item<int64_t>();
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
  formats::VocabKind unit() const override {
    return formats::VocabKind::kWord;
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
  std::vector<int64_t> encode_text(const std::string& text) const override {
    return model_pieces().encode(text);
  }
  // The pieces joined, each U+2581 (SentencePiece's word start) a space.
  std::string decode_ids(const std::vector<int64_t>& ids) const override {
    const auto& pieces = model_pieces();
    std::string text;
    for (const int64_t id : ids) {
      if (id < 0 || id >= pieces.size()) {
        throw UserError(fmt::format(
            "piece id {} is outside the SentencePiece vocabulary of {}", id, pieces.size()));
      }
      text += pieces.piece(id);
    }
    static const std::string kWordStart = "\xE2\x96\x81";
    for (size_t at = text.find(kWordStart); at != std::string::npos;
         at = text.find(kWordStart, at)) {
      text.replace(at, kWordStart.size(), " ");
    }
    return text.empty() || text[0] != ' ' ? text : text.substr(1);
  }
  const sources::UnigramBaseline* unigram_baseline() override {
    if (!pieces_ || classification()) {
      return nullptr;
    }
    if (!unigram_) {
      const auto train = formats::read_sentence_tokens(dir_ / c_.data.train, *pieces_);
      unigram_ = sources::piece_unigram_baseline(train, *pieces_);
    }
    return &*unigram_;
  }
  bool labelled() const override {
    return classification();
  }
  std::string describe() override {
    return fmt::format(
        "SentencePiece vocabulary of {} ({}), {} from {}",
        vocab_size(),
        pieces_ ? pieces_->path().string() : "random",
        classification() ? "labelled texts" : "permutation LM records",
        pieces_ ? (dir_ / c_.data.train).string() : "random pieces");
  }
  std::unique_ptr<sources::BatchSource> build_train_source() override {
    return split_source("train", c_.train.batch_size, true);
  }
  sources::EvalBatches eval_batches(const std::string& split, bool /*validation*/) override {
    return described(split_source(split, c_.eval.batch_size, false));
  }
  sources::EvalBatches file_batches(const fs::path& file) override {
    if (!pieces_) {
      throw UserError(fmt::format(
          "{}: random data has no SentencePiece model to encode files with", file.string()));
    }
    sources::TextReading reading;
    if (classification()) {
      auto source = std::make_unique<sources::LabelledTexts>(
          file, *pieces_, labelled_options(c_.eval.batch_size, false));
      reading.unit = "examples";
      reading.count.units = source->examples();
      auto batches = described(std::move(source));
      batches.reading = std::move(reading);
      return batches;
    }
    const auto text = formats::encode_raw_text(file, *pieces_);
    reading.unit = "pieces";
    reading.count.units = static_cast<int64_t>(text.ids.size());
    reading.count.unknown = std::count(text.ids.begin(), text.ids.end(), formats::kUnkId);
    reading.unknown_as = "<unk>";
    auto options = permutation_options(c_.eval.batch_size);
    reading.fitted = sources::fit_to_text(options, reading.count.units, file.string());
    auto batches = described(records(text, options, false));
    batches.reading = std::move(reading);
    return batches;
  }
  std::unique_ptr<sources::BatchSource> example_batches(
      const std::vector<formats::LabelledText>& examples,
      const std::string& name) override {
    if (!pieces_ || !classification()) {
      return Dataset::example_batches(examples, name);
    }
    std::vector<sources::EncodedExample> encoded;
    encoded.reserve(examples.size());
    for (const auto& example : examples) {
      encoded.push_back({example.label, pieces_->encode(example.text)});
    }
    return std::make_unique<sources::LabelledTexts>(
        encoded, name, labelled_options(c_.eval.batch_size, false));
  }
  std::string token_text(int64_t id) const override {
    return pieces_ ? pieces_->piece(id) : std::to_string(id);
  }

 private:
  const formats::SentencePiece& model_pieces() const {
    if (!pieces_) {
      throw UserError("random data has no SentencePiece model to encode and decode text with");
    }
    return *pieces_;
  }
  bool classification() const {
    return c_.model.section<XLNetConfig>().n_class > 0;
  }

  static sources::EvalBatches described(std::unique_ptr<sources::BatchSource> source) {
    auto setting = source->describe();
    return {std::move(source), std::move(setting), nullptr, {}};
  }

  std::unique_ptr<sources::BatchSource> split_source(
      const std::string& split,
      int64_t batch_size,
      bool training) {
    const fs::path path = dir_ / sources::split_file(c_.data, split);
    if (classification()) {
      auto o = labelled_options(batch_size, training);
      if (training) {
        o.max_examples = c_.data.train_examples;
      }
      try {
        return pieces_
            ? std::make_unique<sources::LabelledTexts>(path, *pieces_, o)
            : std::make_unique<sources::LabelledTexts>(random_reviews_, "random reviews", o);
      } catch (const UserError& e) {
        if (!o.max_examples) {
          throw;
        }
        throw ConfigError(
            fmt::format("{}: data.train_examples: {}", c_.where("data.train_examples"), e.what()));
      }
    }
    return records(
        pieces_ ? formats::read_sentence_tokens(path, *pieces_) : random_pieces_,
        permutation_options(batch_size),
        training);
  }

  // Labelled texts, shuffled for training.
  sources::LabelledOptions labelled_options(int64_t batch_size, bool training) const {
    sources::LabelledOptions o;
    o.batch_size = batch_size;
    o.seq_len = c_.train.tgt_len;
    o.shuffle = training;
    o.seed = static_cast<uint64_t>(c_.train.seed);
    // Evaluation sums over its batches, so reading by length changes no score.
    o.group_by_length = training ? c_.train.group_by_length : true;
    o.n_class = c_.model.section<XLNetConfig>().n_class;
    return o;
  }

  // The permutation records the config asks for, in batches of `batch_size` rows.
  sources::PermutationOptions permutation_options(int64_t batch_size) const {
    const auto& x = c_.model.section<XLNetConfig>();
    sources::PermutationOptions o;
    o.batch_size = batch_size;
    o.seq_len = c_.train.tgt_len;
    o.reuse_len = x.reuse_len;
    o.perm_size = x.perm_size.value_or(x.reuse_len);
    o.num_predict = x.num_predict;
    o.mask_alpha = x.mask_alpha;
    o.mask_beta = x.mask_beta;
    o.bi_data = x.bi_data;
    o.seed = static_cast<uint64_t>(c_.train.seed);
    return o;
  }

  // Permutation records; evaluation draws them from the same seed every time, so every
  // validation reads the same batches.
  std::unique_ptr<sources::BatchSource> records(
      const formats::SentenceTokens& tokens,
      const sources::PermutationOptions& o,
      bool training) {
    try {
      return std::make_unique<sources::PermutationRecords>(tokens, word_starts_, o);
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
  std::unique_ptr<formats::SentencePiece> pieces_; // null: random data
  int64_t n_token_;
  std::vector<bool> word_starts_;
  formats::SentenceTokens random_pieces_;
  std::vector<sources::EncodedExample> random_reviews_;
  std::optional<sources::UnigramBaseline> unigram_;
};

} // namespace

std::unique_ptr<sources::Dataset> open_xlnet_dataset(const config::Config& config) {
  return std::make_unique<XLNetDataset>(config);
}

std::unique_ptr<sources::Dataset> random_xlnet_dataset(
    const config::Config& config,
    int64_t n_token,
    int64_t size) {
  return std::make_unique<XLNetDataset>(config, n_token, size);
}

} // namespace xl::models
