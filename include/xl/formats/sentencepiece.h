// SentencePiece models for XLNet: XLNet's special pieces at their fixed ids, and a loader that
// checks them and encodes text exactly as the original pipeline does
// (prepro_utils.preprocess_text + encode_ids). prep/sentencepiece_training.h trains them.
//
// Text normalisation before encoding: whitespace runs collapse to one space (Python's
// str.split), `` and '' become ", and nothing else. Case and accents are kept: the Korean
// recipe is cased, and the original's accent stripping (NFKD, dropping combining marks) would
// only split Hangul syllables into jamo that the model's own NFKC normaliser composes again.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
} // namespace sentencepiece

namespace xl::formats {

/// XLNet's special pieces, hard-coded by its data pipeline and model (data_utils.special_symbols).
inline constexpr int64_t kUnkId = 0;
inline constexpr int64_t kBosId = 1;
inline constexpr int64_t kEosId = 2;
inline constexpr int64_t kClsId = 3;
inline constexpr int64_t kSepId = 4;
inline constexpr int64_t kPadId = 5;
inline constexpr int64_t kMaskId = 6;
inline constexpr int64_t kEodId = 7;
inline constexpr int64_t kEopId = 8;

/// Collapses whitespace and normalises quotes as XLNet's preprocess_text (keep_accents, cased).
std::string normalize_text(std::string_view line);

class SentencePiece {
 public:
  /// Loads `model`; a missing file, a file that is no model or a model without XLNet's special
  /// pieces at their ids is a UserError naming the file (and the first missing piece).
  explicit SentencePiece(const std::filesystem::path& model);
  ~SentencePiece();
  SentencePiece(const SentencePiece&) = delete;
  SentencePiece& operator=(const SentencePiece&) = delete;

  int64_t size() const;
  const std::filesystem::path& path() const {
    return path_;
  }
  /// FNV-1a of the model file: encoded corpora record it.
  uint64_t checksum() const {
    return checksum_;
  }
  /// hash64 of the model file: checkpoints name the vocabulary by it (Tokenizer::fingerprint).
  uint64_t file_hash() const {
    return file_hash_;
  }
  const std::string& piece(int64_t id) const;

  /// normalize_text, then the pieces of XLNet's encode_pieces: a piece ending in a digit and a
  /// comma ("2000,") is encoded again without the comma, which becomes a piece of its own.
  std::vector<std::string> encode_pieces(std::string_view text) const;
  std::vector<int64_t> encode(std::string_view text) const;

  /// Per id: whether the piece starts a word for span masking (data_utils._is_start_piece): it
  /// begins with U+2581 or '<', or is one ASCII punctuation character.
  const std::vector<bool>& word_starts() const {
    return word_starts_;
  }

 private:
  std::filesystem::path path_;
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
  uint64_t checksum_ = 0;
  uint64_t file_hash_ = 0;
  std::vector<bool> word_starts_;
};

} // namespace xl::formats
