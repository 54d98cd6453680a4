#include "xl/formats/sentencepiece.h"

#include <fmt/format.h>
#include <sentencepiece_processor.h>

#include <algorithm>
#include <array>
#include <string_view>
#include <unordered_map>

#include "xl/formats/text.h"
#include "xl/util/error.h"
#include "xl/util/files.h"
#include "xl/util/hash.h"

namespace xl::formats {

namespace {

constexpr std::string_view kWordMark = "\xe2\x96\x81"; // U+2581

constexpr std::array<std::string_view, 9> kSpecialPieces =
    {"<unk>", "<s>", "</s>", "<cls>", "<sep>", "<pad>", "<mask>", "<eod>", "<eop>"};

// data_utils.special_pieces, as written there (no ', <, = or >).
constexpr std::string_view kStartPunctuation = "!\"#$%&()*+,-./:;?@[\\]^_`{|}~";

bool is_start_piece(std::string_view piece) {
  return piece.substr(0, kWordMark.size()) == kWordMark || piece.substr(0, 1) == "<" ||
      (piece.size() == 1 && kStartPunctuation.find(piece[0]) != std::string_view::npos);
}

void replace_all(std::string& text, std::string_view from, std::string_view to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
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

SentencePiece::SentencePiece(const std::filesystem::path& model)
    : path_(model), processor_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {
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
          "it with xl-prep --format pieces)",
          model.string(),
          expected,
          id));
    }
  }
  checksum_ = fnv1a64(proto.data(), proto.size());
  file_hash_ = hash64(proto.data(), proto.size());
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

std::vector<std::string> SentencePiece::encode_pieces(std::string_view text) const {
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
    if (!marked && !split.empty() && split.front().compare(0, kWordMark.size(), kWordMark) == 0) {
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

} // namespace xl::formats
