#include "xl/models/xlnet/data.h"

#include <fmt/format.h>

#include <algorithm>

#include "xl/formats/sentence_tokens.h"
#include "xl/formats/sentencepiece.h"
#include "xl/formats/text.h"
#include "xl/models/xlnet/config.h"
#include "xl/sources/labelled_texts.h"
#include "xl/sources/permutation_records.h"
#include "xl/sources/row_segments.h"
#include "xl/util/error.h"
#include "xl/util/files.h"

namespace xl::models {

namespace {

namespace fs = std::filesystem;

// A SentencePiece model and either encoded raw text or labelled texts; or random pieces,
// sentences and reviews of the same shapes.
class XLNetDataset : public sources::Dataset {
 public:
  XLNetDataset(const config::Config& c, std::shared_ptr<const formats::Tokenizer> tokenizer)
      : c_(c),
        dir_(c.data.dir),
        tokenizer_(std::move(tokenizer)),
        pieces_(tokenizer_->pieces()),
        n_token_(pieces_ ? pieces_->size() : 0),
        word_starts_(pieces_ ? pieces_->word_starts() : std::vector<bool>{}) {
    if (!pieces_) {
      throw UserError(fmt::format(
          "{}: XLNet reads SentencePiece pieces, and this is a {} of {}; prepare the corpus "
          "with xl-prep --format pieces (or nsmc)",
          tokenizer_->file().string(),
          tokenizer_->describe(),
          tokenizer_->size()));
    }
  }
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
  const formats::Tokenizer* tokenizer() const override {
    return tokenizer_.get();
  }
  const sources::UnigramBaseline* unigram_baseline() override {
    if (!pieces_ || classification()) {
      return nullptr;
    }
    if (!unigram_) {
      sources::check_data_dir(dir_);
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
  sources::EvalBatches text_batches(
      const sources::UserText& text,
      const sources::TextScoring& scoring) const override {
    if (!pieces_) {
      throw UserError(fmt::format(
          "{}: random data has no SentencePiece model to encode a text with", text.name));
    }
    sources::TextReading reading;
    if (classification()) {
      const auto examples = text.file ? formats::read_labelled_texts(*text.file)
                                      : formats::parse_labelled_texts(text.text, text.name);
      auto source = example_batches(examples, text.name);
      reading.unit = "examples";
      reading.count.units = static_cast<int64_t>(examples.size());
      auto batches = described(std::move(source));
      batches.reading = std::move(reading);
      return batches;
    }
    if (scoring.permutation) {
      return permutation_batches(text);
    }
    auto tokens = sources::read_user_text(text, *tokenizer_, reading);
    auto batches = left_to_right(tokens, scoring.streams, reading.fitted);
    batches.owned = std::move(tokens);
    batches.reading = std::move(reading);
    return batches;
  }
  sources::EvalBatches document_batches(
      const std::vector<const formats::Tokens*>& documents) const override {
    if (classification()) {
      return {};
    }
    auto batches = sources::row_batches(c_, documents, sources::RowLayout::kSelf);
    batches.reuse_len = 0;
    return batches;
  }
  std::unique_ptr<sources::BatchSource> example_batches(
      const std::vector<formats::LabelledText>& examples,
      const std::string& name) const override {
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

 private:
  bool classification() const {
    return c_.model.section<XLNetConfig>().n_class > 0;
  }

  static sources::EvalBatches described(std::unique_ptr<sources::BatchSource> source) {
    sources::EvalBatches batches;
    batches.setting = source->describe();
    batches.source = std::move(source);
    return batches;
  }

  // The pretraining evaluation's estimate: permutation records of the text, drawn from the
  // seed, num_predict targets each.
  sources::EvalBatches permutation_batches(const sources::UserText& text) const {
    // Read as the left-to-right scoring reads it: a file of no text of words is refused alike,
    // a pieces file of this model read as it is.
    const bool encoded_file = text.file && formats::looks_like_pieces_file(*text.file);
    std::string whole;
    if (text.file && !encoded_file) {
      sources::refuse_encoded_file(*text.file, *tokenizer_);
      formats::read_text_pieces(
          *text.file,
          "text file",
          true,
          [&](std::string_view piece, bool /*goes_on*/, size_t /*offset*/) {
            whole.append(piece);
          });
    }
    const auto encoded = encoded_file
        ? formats::read_sentence_tokens(*text.file, *pieces_)
        : formats::encode_raw_text(
              text.file ? std::string_view(whole) : text.text, text.name, *pieces_);
    sources::TextReading reading;
    reading.unit = "pieces";
    reading.count.units = static_cast<int64_t>(encoded.ids.size());
    reading.count.unknown = std::count(encoded.ids.begin(), encoded.ids.end(), formats::kUnkId);
    reading.unknown_as = "<unk>";
    auto options = permutation_options(c_.eval.batch_size);
    reading.fitted = sources::fit_to_text(options, reading.count.units, text.name);
    auto batches = described(records(encoded, options, false));
    batches.reading = std::move(reading);
    return batches;
  }

  // Every piece of the text scored once, in order, each from the pieces before it: `streams`
  // contiguous parts (fewer for a short text), segments of eval.tgt_len with the memory.
  sources::EvalBatches left_to_right(
      const std::shared_ptr<const formats::Tokens>& tokens,
      int64_t streams,
      std::string& fitted) const {
    const int64_t n = tokens->size();
    if (n < 2) {
      throw UserError(fmt::format(
          "{} holds {} piece{}: XLNet scores a text of at least 2 (the first is context only)",
          tokens->name(),
          n,
          n == 1 ? "" : "s"));
    }
    const int64_t tgt_len = c_.eval.tgt_len.value_or(c_.train.tgt_len);
    const int64_t rows = std::clamp<int64_t>(n / (tgt_len + 1), 1, streams);
    if (rows < streams) {
      fitted = fmt::format(
          "{} holds {} pieces, too few for {} streams of a segment of {} (eval.tgt_len) each: "
          "scored as {} stream{}",
          tokens->name(),
          n,
          streams,
          tgt_len,
          rows,
          rows == 1 ? "" : "s");
    }
    std::vector<sources::TokenRow> parts;
    const int64_t each = n / rows;
    for (int64_t r = 0; r < rows; ++r) {
      parts.push_back({tokens.get(), r * each, r + 1 == rows ? n - r * each : each});
    }
    auto batches = sources::over_tokens(
        std::make_unique<sources::RowSegments>(
            std::move(parts), tgt_len, sources::RowLayout::kSelf, tokens->name()),
        fmt::format("left to right: tgt_len {}, {} stream{}", tgt_len, rows, rows == 1 ? "" : "s"),
        *tokens);
    batches.reuse_len = 0; // every position of a segment goes into the memory
    batches.streams = rows;
    return batches;
  }

  std::unique_ptr<sources::BatchSource> split_source(
      const std::string& split,
      int64_t batch_size,
      bool training) {
    if (pieces_) {
      sources::check_data_dir(dir_);
    }
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
      bool training) const {
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
  std::shared_ptr<const formats::Tokenizer> tokenizer_; // null: random data
  const formats::SentencePiece* pieces_ = nullptr;
  int64_t n_token_;
  std::vector<bool> word_starts_;
  formats::SentenceTokens random_pieces_;
  std::vector<sources::EncodedExample> random_reviews_;
  std::optional<sources::UnigramBaseline> unigram_;
};

} // namespace

std::unique_ptr<sources::Dataset> open_xlnet_dataset(
    const config::Config& config,
    std::shared_ptr<const formats::Tokenizer> tokenizer) {
  return std::make_unique<XLNetDataset>(config, std::move(tokenizer));
}

std::unique_ptr<sources::Dataset> random_xlnet_dataset(
    const config::Config& config,
    int64_t n_token,
    int64_t size) {
  return std::make_unique<XLNetDataset>(config, n_token, size);
}

} // namespace xl::models
