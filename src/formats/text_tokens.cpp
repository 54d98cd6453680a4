#include "xl/formats/text_tokens.h"

#include <fmt/format.h>

#include <algorithm>

#include "xl/formats/text.h"
#include "xl/util/error.h"

namespace xl::formats {

TextTokens::TextTokens(
    const std::filesystem::path& path,
    const Tokenizer& tokenizer,
    const std::filesystem::path& scratch_dir)
    : name_(path.string()), ids_(scratch_dir, "the tokens of " + path.string()) {
  encode(tokenizer, "text file", [&](const TextPieceSink& sink) {
    read_text_pieces(path, "text file", tokenizer.unit() == VocabKind::kWord, sink);
  });
}

TextTokens::TextTokens(std::string_view text, std::string name, const Tokenizer& tokenizer)
    : name_(std::move(name)), ids_(ScratchFile::in_memory("the tokens of " + name_)) {
  encode(tokenizer, "text", [&](const TextPieceSink& sink) {
    read_text_pieces(text, name_, "text", tokenizer.unit() == VocabKind::kWord, sink);
  });
}

void TextTokens::encode(
    const Tokenizer& tokenizer,
    const std::string& what,
    const std::function<void(const TextPieceSink&)>& read) {
  encode_with(tokenizer, read);
  // Line ends alone are no text a word or piece model can be scored on (bytes are: spaces
  // and line ends are characters).
  if (tokenizer.unit() == VocabKind::kWord && words_ == 0) {
    throw UserError(fmt::format(
        "{} {} holds no word, only spaces and line ends: there is nothing to score", what, name_));
  }
}

void TextTokens::encode_with(
    const Tokenizer& tokenizer,
    const std::function<void(const TextPieceSink&)>& read) {
  std::vector<int64_t> ids;
  if (const Vocab* vocab = tokenizer.vocab()) {
    read([&](std::string_view piece, bool line_goes_on) {
      ids.clear();
      vocab->encode_counting(piece, line_goes_on, ids, unknown_);
      append(ids);
    });
    words_ = unknown_.units; // words or bytes, line ends not counted
    return;
  }
  // SentencePiece encodes whole lines: a line cut between two pieces waits for its end.
  const SentencePiece& pieces = *tokenizer.pieces();
  std::string carry;
  const auto encode_lines = [&](std::string_view text) {
    for (const auto line : split_lines(text)) {
      const bool words = !split_words(line).empty();
      ids = words ? pieces.encode(line) : std::vector<int64_t>{kEodId};
      words_ += words ? static_cast<int64_t>(ids.size()) : 0;
      unknown_.units += static_cast<int64_t>(ids.size());
      unknown_.unknown += std::count(ids.begin(), ids.end(), kUnkId);
      append(ids);
    }
  };
  read([&](std::string_view piece, bool line_goes_on) {
    carry.append(piece);
    if (line_goes_on) {
      return;
    }
    encode_lines(carry);
    carry.clear();
  });
  encode_lines(carry);
}

void TextTokens::append(const std::vector<int64_t>& ids) {
  const std::vector<int32_t> narrow(ids.begin(), ids.end());
  ids_.append(narrow.data(), narrow.size() * sizeof(int32_t));
  count_ += static_cast<int64_t>(ids.size());
}

torch::Tensor TextTokens::slice(int64_t start, int64_t length) const {
  check_slice(start, length, count_, name_);
  auto out = torch::empty({length}, torch::kInt);
  ids_.read_at(
      static_cast<uint64_t>(start) * sizeof(int32_t),
      out.data_ptr<int32_t>(),
      static_cast<size_t>(length) * sizeof(int32_t));
  return out.to(torch::kLong);
}

} // namespace xl::formats
