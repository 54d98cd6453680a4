// What xl-prep's two id files share: token files (token_file.h: word or byte ids) and pieces
// files (sentence_tokens.h: SentencePiece ids and sentence boundaries) start with the same
// 64-byte header, hold ids little-endian in 2 or 4 bytes, and are checked the same way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <vector>

namespace xl::formats {

struct IdFileHeader {
  char magic[8];
  uint32_t version;
  uint32_t width;          // bytes per id: 2 or 4
  uint64_t count;          // ids
  uint64_t vocab_checksum; // of the vocabulary or SentencePiece model the ids index
  uint64_t vocab_size;
  uint64_t data_checksum; // hash64 over what follows the header
  unsigned char reserved[16];
};
static_assert(sizeof(IdFileHeader) == 64, "an id file's header must be 64 bytes");

struct IdFileFormat {
  const char* magic; // 8 characters
  uint32_t version;
  const char* name;        // "token file", for messages
  const char* encode_hint; // how to make one, after "bad magic; "
  /// bytes after the ids, for `count` ids
  std::function<uint64_t(uint64_t)> trailer_bytes = [](uint64_t) { return 0; };
};

/// Whether `path` is a regular file that starts with `format`'s magic; reads nothing of anything
/// else (a pipe is left unread).
bool starts_with_magic(const std::filesystem::path& path, const IdFileFormat& format);

/// A header for `count` ids of a vocabulary of `vocab_size` (2-byte ids up to 65,536 entries),
/// without its data checksum.
IdFileHeader make_id_file_header(
    const IdFileFormat& format,
    uint64_t count,
    uint64_t vocab_checksum,
    uint64_t vocab_size);

/// The header of the `size` bytes at `bytes`, read from `path`, once its magic, version, id
/// width and the size it announces are found to be `format`'s; otherwise a UserError naming
/// the file and what to do.
IdFileHeader read_id_file_header(
    const std::filesystem::path& path,
    const unsigned char* bytes,
    uint64_t size,
    const IdFileFormat& format);

/// The bytes encode_ids hands over at a time (the last piece may be shorter): token files
/// chain their data checksum over these blocks, so that the writer need not hold the encoded
/// file and the reader checks ids in the same pass.
constexpr size_t kIdFileBlock = size_t{1} << 20;

/// Encodes `ids` little-endian, `width` bytes each, and hands them to `block` in pieces of
/// kIdFileBlock bytes.
void encode_ids(
    const std::vector<int64_t>& ids,
    uint32_t width,
    const std::function<void(const unsigned char*, size_t)>& block);

/// Id `i` of ids stored `width` bytes each at `data`.
inline uint64_t id_at(const unsigned char* data, uint32_t width, uint64_t i) {
  uint64_t id = 0;
  for (uint32_t b = 0; b < width; ++b) {
    id |= static_cast<uint64_t>(data[i * width + b]) << (8 * b);
  }
  return id;
}

/// The position of the first of `count` ids at `data` that is `limit` or more, or -1.
int64_t first_id_at_or_above(
    const unsigned char* data,
    uint32_t width,
    uint64_t count,
    uint64_t limit);

} // namespace xl::formats
