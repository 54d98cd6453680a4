// A user's own text encoded with a run's tokenizer, for scoring it (xl-eval --file, the
// library's score): a file is read in pieces and its ids kept in scratch space on disk, so that
// a text of any size costs bounded memory; a text held in memory keeps its ids in memory and
// touches no disk. What a vocabulary lacks is counted, mapped to <unk> or left out.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "xl/formats/text.h"
#include "xl/formats/tokenizer.h"
#include "xl/formats/tokens.h"
#include "xl/util/scratch_file.h"

namespace xl::formats {

/// How a user's text is read.
struct TextOptions {
  /// split at blanks only, even where the vocabulary has rules for raw text (Vocab::tokenization):
  /// a text tokenized already
  bool pretokenized = false;
  /// keep where each token stands in the text (Tokens::origins; word and byte vocabularies)
  bool origins = false;
};

class TextTokens : public Tokens {
 public:
  /// Encodes the text file `path` (UTF-8 for words and pieces, any bytes for a byte vocabulary)
  /// with `tokenizer` (read_text_pieces; Vocab::encode_counting, raw text under the
  /// vocabulary's rules unless `options` say it is tokenized, or SentencePiece line by line with
  /// <eod> for a blank line, as XLNet's corpora are encoded), the ids kept in scratch space in
  /// `scratch_dir`.
  TextTokens(
      const std::filesystem::path& path,
      const Tokenizer& tokenizer,
      const std::filesystem::path& scratch_dir,
      const TextOptions& options = {});
  /// Encodes `text` as the file holding it would be (`name` names it in messages), the ids in
  /// memory.
  TextTokens(
      std::string_view text,
      std::string name,
      const Tokenizer& tokenizer,
      const TextOptions& options = {});

  int64_t size() const override {
    return count_;
  }
  torch::Tensor slice(int64_t start, int64_t length) const override;
  std::string name() const override {
    return name_;
  }
  bool has_origins() const override {
    return origins_ != nullptr;
  }
  std::vector<TokenOrigin> origins(int64_t start, int64_t length) const override;
  /// The words, bytes or pieces read, and those the vocabulary lacks.
  const UnknownCount& unknown() const {
    return unknown_;
  }

 private:
  // Encodes what `read` gives; a text of no word for a word or piece model is refused.
  void encode(
      const Tokenizer& tokenizer,
      const std::string& what,
      const std::function<void(const TextPieceSink&)>& read);
  void encode_with(
      const Tokenizer& tokenizer,
      const std::function<void(const TextPieceSink&)>& read);
  void append(const std::vector<int64_t>& ids);
  // Keeps where the tokens of `piece` (at byte `offset` of the text) stand.
  void keep_origins(std::string_view piece, size_t offset, const std::vector<TextSpan>& spans);

  // A token's origin: its offset, and where its bytes are in origin_text_.
  struct OriginRecord {
    int64_t offset;
    int64_t text_at;
    int64_t length;
  };

  std::string name_;
  TextOptions options_;
  ScratchFile ids_;                      // int32 each
  std::unique_ptr<ScratchFile> origins_; // an OriginRecord each
  std::unique_ptr<ScratchFile> origin_text_;
  int64_t count_ = 0;
  int64_t words_ = 0; // the ids of words, pieces or bytes: line ends and <eod> not counted
  UnknownCount unknown_;
};

} // namespace xl::formats
