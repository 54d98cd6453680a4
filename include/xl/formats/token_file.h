// Encoded corpora: a 64-byte header (magic "XLTOKENS", format version, bytes
// per token, token count, vocabulary checksum and size, data checksum) followed by
// little-endian token ids, 2 bytes each when the vocabulary has at most 65,536
// entries and 4 otherwise. Read through a memory map, so a WikiText-103-sized
// split costs no load time and no private memory.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "xl/formats/tokens.h"
#include "xl/formats/vocab.h"

namespace xl::formats {

struct IdFileHeader;

/// Writes `ids` (each < vocab.size()) for `vocab` atomically.
void write_token_file(
    const std::filesystem::path& path,
    const std::vector<int64_t>& ids,
    const Vocab& vocab);

/// Whether `path` is a regular file that starts as a token file does (its magic), rather than
/// text; reads nothing of anything else (a pipe is left unread).
bool looks_like_token_file(const std::filesystem::path& path);

/// A file xl-prep wrote in `folder` (a token file or a pieces file, told by its magic), if
/// any: the folder is a prepared corpus, whose runs read its files.
std::optional<std::filesystem::path> prepared_data_in(const std::filesystem::path& folder);

class TokenFile : public Tokens {
 public:
  /// 2: a checksum of the token data in the header
  static constexpr uint32_t kFormatVersion = 2;

  /// Maps `path` and checks its header against `vocab` (`vocab_path` names it in messages),
  /// its data against the header's checksum and every id against the vocabulary (one pass,
  /// about 0.25 s per GB of a file in the page cache). A file made with another vocabulary,
  /// a truncated, corrupt or foreign file, or an id outside the vocabulary is a UserError.
  TokenFile(
      const std::filesystem::path& path,
      const Vocab& vocab,
      const std::filesystem::path& vocab_path);
  ~TokenFile() override;
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;
  TokenFile(TokenFile&& other) noexcept;
  TokenFile& operator=(TokenFile&& other) noexcept;

  int64_t size() const override {
    return count_;
  }
  const std::filesystem::path& path() const {
    return path_;
  }
  /// Token `i` (0 <= i < size()).
  int64_t at(int64_t i) const;
  /// Tokens [start, start + length) as an int64 tensor (a copy).
  torch::Tensor slice(int64_t start, int64_t length) const override;
  std::string name() const override {
    return path_.string();
  }

 private:
  // Maps the file (one too short for the header is refused first: an empty file cannot be
  // mapped).
  void map();
  // The data's checksum and every id against the vocabulary, in one pass.
  void check_data(const IdFileHeader& header, const std::filesystem::path& vocab_path) const;
  void release();

  std::filesystem::path path_;
  void* map_ = nullptr;
  size_t map_size_ = 0;
  const unsigned char* data_ = nullptr;
  uint32_t width_ = 0;
  int64_t count_ = 0;
};

} // namespace xl::formats
