// XLNet's encoded corpora: SentencePiece ids with a sentence id per token, as data_utils builds
// them from raw text (one sentence per line, a blank line between documents). The sentence id
// toggles with every line; a blank line emits <eod> with the id of the sentence before it (glued
// to it, so no A/B cut falls between them).
//
// File (".pieces"): a 64-byte header (magic "XLPIECES", format version, bytes per id, token
// count, checksum and size of the SentencePiece model, hash64 of the rest of the file), the ids
// little-endian (2 bytes each up to 65,536 pieces, else 4), then the sentence ids as bits (token
// i is bit i % 8 of byte i / 8). Written atomically; reading verifies the data checksum, checks
// the header against the model (a corpus encoded with another model is refused) and every id
// against the vocabulary.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "xl/formats/sentencepiece.h"

namespace xl::formats {

struct SentenceTokens {
  std::vector<int64_t> ids;
  /// 0 or 1 per token; a change marks a sentence boundary.
  std::vector<uint8_t> sent_ids;
  /// For messages: the file it came from.
  std::string name;
};

/// Whether `path` is a regular file that starts as a pieces file does (its magic), rather than
/// text; reads nothing of anything else.
bool looks_like_pieces_file(const std::filesystem::path& path);

/// Encodes a raw text file. A file without any text is a UserError.
SentenceTokens encode_raw_text(const std::filesystem::path& path, const SentencePiece& model);
/// encode_raw_text of a text held in memory (`name` names it in messages).
SentenceTokens encode_raw_text(
    std::string_view text,
    const std::string& name,
    const SentencePiece& model);

void write_sentence_tokens(
    const std::filesystem::path& path,
    const SentenceTokens& tokens,
    const SentencePiece& model);

/// A missing, truncated, corrupt or foreign file, one encoded with another model or holding an
/// id outside the vocabulary, is a UserError.
SentenceTokens read_sentence_tokens(const std::filesystem::path& path, const SentencePiece& model);

} // namespace xl::formats
