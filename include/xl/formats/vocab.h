// Vocabularies: word-level as Transformer-XL builds it for WikiText (whitespace tokens, `<eos>`
// per line, specials first, then by descending frequency with ties in first-seen order, like
// Python's Counter.most_common), and byte-level for enwik8/text8-style data (the bytes that
// occur, by descending frequency, ties by byte value).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "xl/formats/tokenization.h"

namespace xl::formats {

enum class VocabKind { kWord, kByte };

/// What encoding a text met that the vocabulary lacks.
struct UnknownCount {
  /// the words (line ends not counted) or bytes read
  int64_t units = 0;
  /// of them, those the vocabulary lacks: mapped to <unk> where the vocabulary has it, else
  /// left out
  int64_t unknown = 0;
};

/// Where a token of an encoded text stands in it: its bytes (a word's may differ from the token
/// where rules for raw text normalize it; a line end's are the line break, none at the end).
struct TextSpan {
  int64_t offset = 0;
  int64_t length = 0;
};

/// "word" or "byte".
std::string to_string(VocabKind kind);

/// A corpus file read whole, for a vocabulary of `kind`: missing and empty files are refused
/// naming the file; a word corpus must be UTF-8 text (read_utf8_text: a NUL byte or more than
/// 1% of bytes outside UTF-8 is refused, as --format pieces refuses it), a byte corpus any file.
std::string read_corpus(const std::filesystem::path& path, VocabKind kind);

class Vocab {
 public:
  /// Counts the whitespace tokens of `files`, in the given order (one `<eos>` per line), and
  /// orders them. `specials` take the first ids in the given order; of the other words, those
  /// seen fewer than `min_freq` times are left out, and only the most frequent stay when
  /// `max_size` (the whole vocabulary's size, specials included) would be exceeded.
  static Vocab build_word(
      const std::vector<std::filesystem::path>& files,
      const std::vector<std::string>& specials = {"<eos>"},
      int64_t min_freq = 0,
      std::optional<int64_t> max_size = std::nullopt);
  /// build_word over texts read already (read_corpus): a pipe is read once.
  static Vocab build_word_from(
      const std::vector<std::string_view>& texts,
      const std::vector<std::string>& specials = {"<eos>"},
      int64_t min_freq = 0,
      std::optional<int64_t> max_size = std::nullopt);
  /// Counts the bytes of `files`.
  static Vocab build_byte(const std::vector<std::filesystem::path>& files);
  /// build_byte over texts read already.
  static Vocab build_byte_from(const std::vector<std::string_view>& texts);
  /// Reads a file written by save(); a malformed file is a UserError naming the line.
  static Vocab load(const std::filesystem::path& path);
  /// A word vocabulary of `words` in id order (another tool's symbols), recording
  /// `tokenization`; a duplicate or an empty word is a UserError (`where` names the list).
  static Vocab of_words(
      std::vector<std::string> words,
      Tokenization tokenization,
      const std::string& where);

  /// How the text a word vocabulary was built from is split (a header field of its file): a
  /// raw text gets the same rules where encode's `raw` asks for them.
  Tokenization tokenization() const {
    return tokenization_;
  }
  /// Records `tokenization` (a word vocabulary's; none for bytes).
  void set_tokenization(Tokenization tokenization);

  /// Writes the vocabulary atomically: a header line, then one token per line.
  void save(const std::filesystem::path& path) const;

  VocabKind kind() const {
    return kind_;
  }
  int64_t size() const {
    return static_cast<int64_t>(tokens_.size());
  }
  /// Stable checksum of the kind and the ordered tokens; token files record it.
  uint64_t checksum() const {
    return checksum_;
  }
  /// The id of `token`, or -1.
  int64_t index(std::string_view token) const;
  const std::string& token(int64_t id) const;

  /// Encodes a text file: word vocabularies give each line's tokens plus `<eos>` (unknown words
  /// map to `<unk>` when the vocabulary has it, and are an error otherwise); byte vocabularies
  /// give the raw bytes. Errors name the file and line.
  std::vector<int64_t> encode_file(const std::filesystem::path& path) const;
  /// Encodes `text` as encode_file() does, `where` naming it in errors; with `open_end`, a last
  /// line without a line break gets no `<eos>` (a prompt to continue); `raw`: the text is split
  /// under tokenization()'s rules (a user's raw text), else at blanks.
  std::vector<int64_t> encode(
      std::string_view text,
      const std::string& where,
      bool open_end = false,
      bool raw = false) const;
  /// Appends the ids of `text` to `ids` as encode() does, but a word or byte the vocabulary
  /// lacks maps to <unk> when it has one and is left out otherwise, counted in `count` (scoring
  /// a user's text, read in pieces); `line_goes_on`: the last line continues in the next piece
  /// (no <eos> after it); `raw` as encode() reads it; `spans`: where each id's token stands in
  /// `text`, appended.
  void encode_counting(
      std::string_view text,
      bool line_goes_on,
      std::vector<int64_t>& ids,
      UnknownCount& count,
      bool raw = false,
      std::vector<TextSpan>* spans = nullptr) const;
  /// Whether words the vocabulary lacks map to <unk> (rather than being left out).
  bool has_unknown_token() const;
  /// The text of `ids`: words joined by spaces with `<eos>` as a line break, or the bytes;
  /// `after_word`: the text continues a line that ends in a word (a space comes first).
  std::string decode(const std::vector<int64_t>& ids, bool after_word = false) const;

 private:
  Vocab(VocabKind kind, std::vector<std::string> tokens);
  // The ids of `text`, appended; a token without an id and no <unk> to map to goes to
  // `unknown` (with its byte offset or line number), which returns the id to use, -1 to leave
  // it out, or throws; words mapped to <unk> are counted in `mapped_to_unk`; `raw` and `spans`
  // as encode_counting() takes them.
  struct Encoding {
    bool line_goes_on = false;
    bool raw = false;
    int64_t* mapped_to_unk = nullptr;
    std::vector<TextSpan>* spans = nullptr;
  };
  void encode_into(
      std::string_view text,
      const Encoding& how,
      std::vector<int64_t>& ids,
      const std::function<int64_t(std::string_view token, size_t at)>& unknown) const;
  // encode_into() of a word vocabulary: the words of each line, then its <eos>.
  void encode_words(
      std::string_view text,
      const Encoding& how,
      std::vector<int64_t>& ids,
      const std::function<int64_t(std::string_view token, size_t at)>& unknown) const;

  VocabKind kind_;
  Tokenization tokenization_ = Tokenization::kNone;
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int64_t> ids_;
  uint64_t checksum_ = 0;
};

} // namespace xl::formats
