#include "xl/data/sentencepiece.h"

#include <fmt/format.h>
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <algorithm>
#include <array>
#include <string_view>
#include <unordered_map>

#include "xl/data/text.h"
#include "xl/util/error.h"
#include "xl/util/files.h"

namespace xl::data {

namespace {

constexpr std::string_view kWordMark = "\xe2\x96\x81"; // U+2581

// Control symbols take ids 3..7 in this order, the user symbols follow (data_utils and
// sp10m.cased.v3's training flags).
constexpr const char* kControlSymbols = "<cls>,<sep>,<pad>,<mask>,<eod>";
constexpr const char* kUserSymbols =
    "<eop>,.,(,),\",-,\xe2\x80\x93,\xc2\xa3,\xe2\x82\xac";
constexpr std::array<std::string_view, 9> kSpecialPieces = {
    "<unk>",
    "<s>",
    "</s>",
    "<cls>",
    "<sep>",
    "<pad>",
    "<mask>",
    "<eod>",
    "<eop>"};

// data_utils.special_pieces, as written there (no ', <, = or >).
constexpr std::string_view kStartPunctuation = "!\"#$%&()*+,-./:;?@[\\]^_`{|}~";

bool is_start_piece(std::string_view piece) {
  return piece.substr(0, kWordMark.size()) == kWordMark ||
      piece.substr(0, 1) == "<" ||
      (piece.size() == 1 &&
       kStartPunctuation.find(piece[0]) != std::string_view::npos);
}

class LineIterator : public sentencepiece::SentenceIterator {
 public:
  explicit LineIterator(std::vector<std::string> lines)
      : lines_(std::move(lines)) {}
  bool done() const override {
    return next_ >= lines_.size();
  }
  void Next() override {
    ++next_;
  }
  const std::string& value() const override {
    return lines_[next_];
  }
  sentencepiece::util::Status status() const override {
    return {};
  }

 private:
  std::vector<std::string> lines_;
  size_t next_ = 0;
};

void replace_all(
    std::string& text,
    std::string_view from,
    std::string_view to) {
  for (size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

} // namespace

std::string normalize_text(std::string_view line) {
  std::string out;
  for (const auto word : split_words(line)) {
    if (!out.empty()) {
      out += ' ';
    }
    out += word;
  }
  replace_all(out, "``", "\"");
  replace_all(out, "''", "\"");
  return out;
}

void train_sentencepiece(
    const std::vector<std::filesystem::path>& files,
    const std::filesystem::path& model,
    const SentencePieceOptions& options) {
  // SentencePiece asserts these deep inside its trainer ("Internal: ..."); said here plainly.
  const auto listed = [](std::string_view list) {
    return static_cast<int64_t>(std::count(list.begin(), list.end(), ',')) + 1;
  };
  const int64_t specials =
      3 + listed(kControlSymbols) + listed(kUserSymbols); // <unk> <s> </s>
  if (options.vocab_size <= specials) {
    throw UserError(fmt::format(
        "--vocab-size {}: expected more than the {} special pieces of XLNet's vocabulary",
        options.vocab_size,
        specials));
  }
  if (!(options.character_coverage > 0.0 &&
        options.character_coverage <= 1.0)) {
    throw UserError(fmt::format(
        "--character-coverage {}: expected a fraction above 0, up to 1",
        options.character_coverage));
  }
  std::vector<std::string> lines;
  for (const auto& file : files) {
    const std::string text = read_utf8_text(file, "corpus file");
    for (const auto line : split_lines(text)) {
      std::string normalized = normalize_text(line);
      if (!normalized.empty()) {
        lines.push_back(std::move(normalized));
      }
    }
  }
  if (lines.empty()) {
    throw UserError(
        "no text to train SentencePiece on in " + files.front().string());
  }
  const std::unordered_map<std::string, std::string> args = {
      {"model_type", "unigram"},
      {"vocab_size", std::to_string(options.vocab_size)},
      {"character_coverage", fmt::format("{}", options.character_coverage)},
      {"control_symbols", kControlSymbols},
      {"user_defined_symbols", kUserSymbols},
      {"shuffle_input_sentence", "true"},
      // One thread: the EM sums would otherwise depend on how lines split over threads.
      {"num_threads", "1"},
      {"minloglevel", "1"}};
  sentencepiece::SetRandomGeneratorSeed(options.seed);
  LineIterator iterator(std::move(lines));
  std::string proto;
  const auto status =
      sentencepiece::SentencePieceTrainer::Train(args, &iterator, &proto);
  if (!status.ok()) {
    throw UserError(fmt::format(
        "SentencePiece training on {} failed: {}",
        files.front().string(),
        status.ToString()));
  }
  atomic_write(model, proto);
}

SentencePiece::SentencePiece(const std::filesystem::path& model)
    : path_(model),
      processor_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {
  const std::string proto = read_file(model, "SentencePiece model");
  if (!processor_->LoadFromSerializedProto(proto).ok()) {
    throw UserError(model.string() + ": not a SentencePiece model");
  }
  for (size_t id = 0; id < kSpecialPieces.size(); ++id) {
    const auto expected = kSpecialPieces[id];
    if (static_cast<int64_t>(id) >= size() ||
        processor_->IdToPiece(static_cast<int>(id)) != expected) {
      throw UserError(fmt::format(
          "{}: not an XLNet SentencePiece model: piece {} must have id {} (train "
          "it with xl-prep --format xlnet)",
          model.string(),
          expected,
          id));
    }
  }
  checksum_ = fnv1a64(proto.data(), proto.size());
  word_starts_.resize(static_cast<size_t>(size()));
  for (int64_t id = 0; id < size(); ++id) {
    word_starts_[static_cast<size_t>(id)] = is_start_piece(piece(id));
  }
}

SentencePiece::~SentencePiece() = default;

int64_t SentencePiece::size() const {
  return processor_->GetPieceSize();
}

const std::string& SentencePiece::piece(int64_t id) const {
  return processor_->IdToPiece(static_cast<int>(id));
}

std::vector<std::string> SentencePiece::encode_pieces(
    std::string_view text) const {
  const std::string normalized = normalize_text(text);
  std::vector<std::string> pieces;
  for (auto& piece : processor_->EncodeAsPieces(normalized)) {
    const size_t n = piece.size();
    if (n < 2 || piece[n - 1] != ',' ||
        std::isdigit(static_cast<unsigned char>(piece[n - 2])) == 0) {
      pieces.push_back(std::move(piece));
      continue;
    }
    std::string digits = piece.substr(0, n - 1);
    replace_all(digits, kWordMark, "");
    auto split = processor_->EncodeAsPieces(digits);
    // The piece did not start a word, but encoding it alone added the mark: drop it.
    const bool marked = piece.compare(0, kWordMark.size(), kWordMark) == 0;
    if (!marked && !split.empty() &&
        split.front().compare(0, kWordMark.size(), kWordMark) == 0) {
      if (split.front().size() == kWordMark.size()) {
        split.erase(split.begin());
      } else {
        split.front().erase(0, kWordMark.size());
      }
    }
    pieces.insert(pieces.end(), split.begin(), split.end());
    pieces.emplace_back(",");
  }
  return pieces;
}

std::vector<int64_t> SentencePiece::encode(std::string_view text) const {
  std::vector<int64_t> ids;
  for (const auto& piece : encode_pieces(text)) {
    ids.push_back(processor_->PieceToId(piece));
  }
  return ids;
}

} // namespace xl::data
