#include "xl/formats/text_tokens.h"

#include <fmt/format.h>

#include <algorithm>

#include "xl/formats/text.h"
#include "xl/util/error.h"
#include "xl/util/log.h"

namespace xl::formats {

namespace {

// Where a text's tokens stand, when asked for (a word or byte vocabulary's): in scratch space
// in `dir`, or in memory.
std::unique_ptr<ScratchFile> origin_scratch(
    const TextOptions& options,
    const Tokenizer& tokenizer,
    const std::filesystem::path* dir,
    const std::string& what) {
  if (!options.origins || tokenizer.vocab() == nullptr) {
    return nullptr;
  }
  return dir != nullptr ? std::make_unique<ScratchFile>(*dir, what)
                        : std::make_unique<ScratchFile>(ScratchFile::in_memory(what));
}

} // namespace

TextTokens::TextTokens(
    const std::filesystem::path& path,
    const Tokenizer& tokenizer,
    const std::filesystem::path& scratch_dir,
    const TextOptions& options)
    : name_(path.string()),
      options_(options),
      ids_(scratch_dir, "the tokens of " + path.string()),
      origins_(origin_scratch(
          options,
          tokenizer,
          &scratch_dir,
          "where the tokens of " + name_ + " stand")),
      origin_text_(origin_scratch(options, tokenizer, &scratch_dir, "the words of " + name_)) {
  encode(tokenizer, "text file", [&](const TextPieceSink& sink) {
    read_text_pieces(path, "text file", tokenizer.unit() == VocabKind::kWord, sink);
  });
}

TextTokens::TextTokens(
    std::string_view text,
    std::string name,
    const Tokenizer& tokenizer,
    const TextOptions& options)
    : name_(std::move(name)),
      options_(options),
      ids_(ScratchFile::in_memory("the tokens of " + name_)),
      origins_(
          origin_scratch(options, tokenizer, nullptr, "where the tokens of " + name_ + " stand")),
      origin_text_(origin_scratch(options, tokenizer, nullptr, "the words of " + name_)) {
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
    const bool rules = !options_.pretokenized && vocab->tokenization() != Tokenization::kNone;
    bool warned = false;
    std::vector<TextSpan> spans;
    read([&](std::string_view piece, bool line_goes_on, size_t offset) {
      if (rules && !warned && reads_as_wikitext(piece)) {
        warned = true;
        logger().warn(
            "{} holds WikiText's own tokens (\" @-@ \", \" @,@ \"): it reads as tokenized "
            "already, and the rules for raw text split those again; --pretokenized reads it as "
            "it stands",
            name_);
      }
      ids.clear();
      spans.clear();
      vocab->encode_counting(
          piece, line_goes_on, ids, unknown_, rules, origins_ != nullptr ? &spans : nullptr);
      append(ids);
      if (origins_ != nullptr) {
        keep_origins(piece, offset, spans);
      }
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
  read([&](std::string_view piece, bool line_goes_on, size_t /*offset*/) {
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

void TextTokens::keep_origins(
    std::string_view piece,
    size_t offset,
    const std::vector<TextSpan>& spans) {
  std::vector<OriginRecord> records;
  records.reserve(spans.size());
  std::string text;
  for (const auto& span : spans) {
    const auto at = static_cast<int64_t>(origin_text_->size() + text.size());
    records.push_back({static_cast<int64_t>(offset) + span.offset, at, span.length});
    text.append(piece.substr(static_cast<size_t>(span.offset), static_cast<size_t>(span.length)));
  }
  origins_->append(records.data(), records.size() * sizeof(OriginRecord));
  origin_text_->append(text.data(), text.size());
}

std::vector<TokenOrigin> TextTokens::origins(int64_t start, int64_t length) const {
  check_slice(start, length, count_, name_);
  TORCH_CHECK(origins_ != nullptr, name_, " keeps no origins of its tokens");
  std::vector<OriginRecord> records(static_cast<size_t>(length));
  origins_->read_at(
      static_cast<uint64_t>(start) * sizeof(OriginRecord),
      records.data(),
      records.size() * sizeof(OriginRecord));
  std::vector<TokenOrigin> out;
  if (records.empty()) {
    return out;
  }
  const int64_t first = records.front().text_at;
  std::string text(
      static_cast<size_t>(records.back().text_at + records.back().length - first), '\0');
  origin_text_->read_at(static_cast<uint64_t>(first), text.data(), text.size());
  for (const auto& r : records) {
    out.push_back(
        {r.offset,
         text.substr(static_cast<size_t>(r.text_at - first), static_cast<size_t>(r.length))});
  }
  return out;
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
