// Scratch space on disk for data that may be larger than memory (a user's text encoded for
// scoring, the log-probabilities of its tokens until they are listed in text order): a file
// unlinked as soon as it is made, so that nothing is left behind however the process ends, read
// and written at offsets through the page cache. Or the same space in memory, for what a
// program holds in memory already (a text scored from a string: no disk at all).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace xl {

/// Where scratch files go: $TMPDIR, or /tmp when it is unset or empty. A TMPDIR that is not a
/// folder is a UserError naming it.
std::filesystem::path scratch_dir();

class ScratchFile {
 public:
  /// A new empty scratch file in `dir`; `what` names it in errors (a folder that cannot hold
  /// one, a full disk).
  ScratchFile(const std::filesystem::path& dir, std::string what);
  /// The same space in memory.
  static ScratchFile in_memory(std::string what);
  ~ScratchFile();
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  ScratchFile(ScratchFile&& other) noexcept;
  ScratchFile& operator=(ScratchFile&&) = delete;

  /// Writes `size` bytes at `offset` (the file grows as needed; a gap reads as zeros).
  void write_at(uint64_t offset, const void* data, size_t size);
  /// Appends at the end.
  void append(const void* data, size_t size);
  /// Reads `size` bytes at `offset`; reading past the end is a logic error.
  void read_at(uint64_t offset, void* data, size_t size) const;
  /// Grows or cuts the file to `size` bytes (new bytes read as zeros).
  void resize(uint64_t size);
  uint64_t size() const {
    return size_;
  }

 private:
  explicit ScratchFile(std::string what);

  std::string what_;
  std::filesystem::path dir_;
  int fd_ = -1; // -1: in memory_
  std::string memory_;
  uint64_t size_ = 0;
};

} // namespace xl
