#include "xl/formats/token_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "id_file.h"
#include "xl/formats/sentence_tokens.h"
#include "xl/util/error.h"
#include "xl/util/files.h"
#include "xl/util/hash.h"

namespace xl::formats {

namespace {

const IdFileFormat& token_format() {
  static const IdFileFormat kFormat{
      "XLTOKENS", TokenFile::kFormatVersion, "token file", "encode corpora with xl-prep"};
  return kFormat;
}

} // namespace

void write_token_file(
    const std::filesystem::path& path,
    const std::vector<int64_t>& ids,
    const Vocab& vocab) {
  auto header = make_id_file_header(
      token_format(), ids.size(), vocab.checksum(), static_cast<uint64_t>(vocab.size()));
  for (size_t i = 0; i < ids.size(); ++i) {
    TORCH_CHECK(
        ids[i] >= 0 && ids[i] < vocab.size(),
        "token id ",
        ids[i],
        " at position ",
        i,
        " is outside the vocabulary of size ",
        vocab.size());
  }
  // Two passes over the ids (checksum, then bytes) rather than a second copy of the corpus.
  uint64_t checksum = 0;
  encode_ids(ids, header.width, [&](const unsigned char* data, size_t n) {
    checksum = hash64(data, n, checksum);
  });
  header.data_checksum = checksum;
  atomic_write(path, [&](const ByteSink& sink) {
    sink(&header, sizeof(header));
    encode_ids(ids, header.width, [&](const unsigned char* data, size_t n) { sink(data, n); });
  });
}

bool looks_like_token_file(const std::filesystem::path& path) {
  return starts_with_magic(path, token_format());
}

std::optional<std::filesystem::path> prepared_data_in(const std::filesystem::path& folder) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
    if (looks_like_token_file(entry.path()) || looks_like_pieces_file(entry.path())) {
      return entry.path();
    }
  }
  return std::nullopt;
}

TokenFile::TokenFile(
    const std::filesystem::path& path,
    const Vocab& vocab,
    const std::filesystem::path& vocab_path)
    : path_(path) {
  map();
  try {
    const auto header = read_id_file_header(
        path, static_cast<const unsigned char*>(map_), map_size_, token_format());
    if (header.vocab_checksum != vocab.checksum() ||
        header.vocab_size != static_cast<uint64_t>(vocab.size())) {
      throw UserError(fmt::format(
          "{}: encoded with a different vocabulary (size {}, checksum {:016x}) than {} "
          "(size {}, checksum {:016x}); re-encode the corpus with that vocabulary "
          "(xl-prep --vocab) or point data.vocab at the one it was made with",
          path.string(),
          header.vocab_size,
          header.vocab_checksum,
          vocab_path.string(),
          vocab.size(),
          vocab.checksum()));
    }
    width_ = header.width;
    count_ = static_cast<int64_t>(header.count);
    data_ = static_cast<const unsigned char*>(map_) + sizeof(header);
    check_data(header, vocab_path);
  } catch (...) {
    release();
    throw;
  }
}

void TokenFile::map() {
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec)) {
    throw UserError("token file not found: " + path_.string() + " (run xl-prep first)");
  }
  const int fd = open_input(path_, "token file");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw UserError("token file " + path_.string() + " is not a regular file (run xl-prep again)");
  }
  map_size_ = static_cast<size_t>(st.st_size);
  if (map_size_ < sizeof(IdFileHeader)) {
    ::close(fd);
    read_id_file_header(path_, nullptr, map_size_, token_format()); // refuses it
  }
  map_ = ::mmap(nullptr, map_size_, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    throw UserError("cannot map token file " + path_.string() + ": " + std::strerror(errno));
  }
}

void TokenFile::check_data(const IdFileHeader& header, const std::filesystem::path& vocab_path)
    const {
  // One pass over the data: its checksum, and every id against the vocabulary.
  const size_t bytes = map_size_ - sizeof(header);
  uint64_t checksum = 0;
  int64_t outside = -1;
  for (size_t at = 0; at < bytes; at += kIdFileBlock) {
    const size_t n = std::min(kIdFileBlock, bytes - at);
    checksum = hash64(data_ + at, n, checksum);
    if (outside < 0) {
      const int64_t i = first_id_at_or_above(data_ + at, width_, n / width_, header.vocab_size);
      outside = i < 0 ? -1 : static_cast<int64_t>(at / width_) + i;
    }
  }
  if (checksum != header.data_checksum) {
    throw UserError(
        path_.string() +
        ": the token data does not match the checksum in its header: the file is corrupt; "
        "re-run xl-prep");
  }
  if (outside >= 0) {
    throw UserError(fmt::format(
        "{}: token id {} at position {} is outside the vocabulary of {} ({}); the file was "
        "not written by xl-prep for it; re-run xl-prep",
        path_.string(),
        at(outside),
        outside,
        header.vocab_size,
        vocab_path.string()));
  }
}

TokenFile::~TokenFile() {
  release();
}

TokenFile::TokenFile(TokenFile&& other) noexcept {
  *this = std::move(other);
}

TokenFile& TokenFile::operator=(TokenFile&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    map_ = other.map_;
    map_size_ = other.map_size_;
    data_ = other.data_;
    width_ = other.width_;
    count_ = other.count_;
    other.map_ = nullptr;
    other.data_ = nullptr;
    other.count_ = 0;
  }
  return *this;
}

void TokenFile::release() {
  if (map_ != nullptr) {
    ::munmap(map_, map_size_);
    map_ = nullptr;
  }
}

int64_t TokenFile::at(int64_t i) const {
  TORCH_CHECK(
      i >= 0 && i < count_,
      "token index ",
      i,
      " out of range for ",
      path_.string(),
      " with ",
      count_,
      " tokens");
  const unsigned char* p = data_ + static_cast<size_t>(i) * width_;
  uint32_t id = 0;
  for (uint32_t b = 0; b < width_; ++b) {
    id |= static_cast<uint32_t>(p[b]) << (8 * b);
  }
  return id;
}

torch::Tensor TokenFile::slice(int64_t start, int64_t length) const {
  check_slice(start, length, count_, path_.string());
  const void* base = data_ + static_cast<size_t>(start) * width_;
  // Little-endian hosts only (x86-64, aarch64): the on-disk layout is the
  // in-memory one.
  const auto dtype = width_ == 2 ? torch::kUInt16 : torch::kUInt32;
  return torch::from_blob(const_cast<void*>(base), {length}, dtype).to(torch::kInt64);
}

} // namespace xl::formats
