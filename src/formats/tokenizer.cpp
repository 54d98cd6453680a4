#include "xl/formats/tokenizer.h"

#include <fmt/format.h>

#include <fstream>

#include "xl/util/error.h"

namespace xl::formats {

namespace {

// xl-prep's vocabularies start with this; anything else is read as a SentencePiece model.
constexpr std::string_view kVocabHeader = "#xl-vocab";

bool starts_like_vocab(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(kVocabHeader.size(), '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  return in && head == kVocabHeader;
}

} // namespace

std::shared_ptr<const Tokenizer> Tokenizer::load(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw UserError(fmt::format(
        "{}: {}; expected a vocabulary (vocab.txt) or a SentencePiece model (spiece.model)",
        path.string(),
        std::filesystem::exists(path, ec) ? "not a file" : "no such file"));
  }
  if (starts_like_vocab(path)) {
    return std::make_shared<const Tokenizer>(Vocab::load(path), path);
  }
  return std::make_shared<const Tokenizer>(std::make_unique<SentencePiece>(path));
}

Tokenizer::Tokenizer(Vocab vocab, std::filesystem::path path)
    : path_(std::move(path)), vocab_(std::make_unique<const Vocab>(std::move(vocab))) {
  fingerprint_ = fmt::format(
      "{}-level vocabulary of {}, checksum {:016x}",
      to_string(vocab_->kind()),
      vocab_->size(),
      vocab_->checksum());
}

Tokenizer::Tokenizer(std::unique_ptr<SentencePiece> pieces)
    : path_(pieces->path()), pieces_(std::move(pieces)) {
  fingerprint_ = fmt::format(
      "SentencePiece vocabulary of {}, checksum {:016x}", pieces_->size(), pieces_->file_hash());
}

int64_t Tokenizer::size() const {
  return vocab_ ? vocab_->size() : pieces_->size();
}

VocabKind Tokenizer::unit() const {
  return vocab_ ? vocab_->kind() : VocabKind::kWord;
}

std::string Tokenizer::describe() const {
  return vocab_ ? fmt::format("{} vocabulary", to_string(vocab_->kind())) : "SentencePiece model";
}

const Vocab& Tokenizer::word_vocab(const std::string& use) const {
  if (!vocab_) {
    throw UserError(fmt::format(
        "{} needs a word or byte vocabulary, and {} is a SentencePiece model",
        use,
        path_.string()));
  }
  return *vocab_;
}

std::vector<int64_t> Tokenizer::encode(std::string_view text) const {
  if (vocab_) {
    return vocab_->encode(text, "the text", /*open_end=*/true, /*raw=*/true);
  }
  return pieces_->encode(text);
}

std::string Tokenizer::decode(const std::vector<int64_t>& ids) const {
  for (const int64_t id : ids) {
    if (id < 0 || id >= size()) {
      throw UserError(fmt::format("id {} is outside the vocabulary of {}", id, size()));
    }
  }
  if (vocab_) {
    return vocab_->decode(ids);
  }
  // The pieces joined, each U+2581 (SentencePiece's word start) a space.
  std::string text;
  for (const int64_t id : ids) {
    text += pieces_->piece(id);
  }
  static const std::string kWordStart = "\xE2\x96\x81";
  for (size_t at = text.find(kWordStart); at != std::string::npos; at = text.find(kWordStart, at)) {
    text.replace(at, kWordStart.size(), " ");
  }
  return text.empty() || text[0] != ' ' ? text : text.substr(1);
}

std::string Tokenizer::token(int64_t id) const {
  return vocab_ ? vocab_->token(id) : pieces_->piece(id);
}

} // namespace xl::formats
