#include "xl/data/token_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "xl/util/error.h"
#include "xl/util/files.h"

namespace xl::data {

namespace {

constexpr char kMagic[8] = {'X', 'L', 'T', 'O', 'K', 'E', 'N', 'S'};

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t width;
  uint64_t count;
  uint64_t vocab_checksum;
  uint64_t vocab_size;
  unsigned char reserved[24];
};
static_assert(sizeof(Header) == 64, "token file header must be 64 bytes");

} // namespace

void write_token_file(
    const std::filesystem::path& path,
    const std::vector<int64_t>& ids,
    const Vocab& vocab) {
  Header header{};
  std::memcpy(header.magic, kMagic, sizeof(kMagic));
  header.version = TokenFile::kFormatVersion;
  header.width = vocab.size() <= 65536 ? 2 : 4;
  header.count = ids.size();
  header.vocab_checksum = vocab.checksum();
  header.vocab_size = static_cast<uint64_t>(vocab.size());
  atomic_write(path, [&](const ByteSink& sink) {
    sink(&header, sizeof(header));
    constexpr size_t kChunk = 1 << 16;
    std::vector<unsigned char> buffer;
    buffer.reserve(kChunk * header.width);
    for (size_t i = 0; i < ids.size(); ++i) {
      TORCH_CHECK(
          ids[i] >= 0 && ids[i] < vocab.size(),
          "token id ",
          ids[i],
          " at position ",
          i,
          " is outside the vocabulary of size ",
          vocab.size());
      const auto id = static_cast<uint32_t>(ids[i]);
      for (uint32_t b = 0; b < header.width; ++b) {
        buffer.push_back(static_cast<unsigned char>(id >> (8 * b)));
      }
      if (buffer.size() >= kChunk * header.width) {
        sink(buffer.data(), buffer.size());
        buffer.clear();
      }
    }
    sink(buffer.data(), buffer.size());
  });
}

TokenFile::TokenFile(
    const std::filesystem::path& path,
    const Vocab& vocab,
    const std::filesystem::path& vocab_path)
    : path_(path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw UserError(
        "token file not found: " + path.string() + " (run xl-prep first)");
  }
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) {
    throw UserError(
        "cannot open token file " + path.string() + ": " +
        std::strerror(errno));
  }
  struct stat st {};
  ::fstat(fd, &st);
  map_size_ = static_cast<size_t>(st.st_size);
  if (map_size_ < sizeof(Header)) {
    ::close(fd);
    throw UserError(fmt::format(
        "{}: not an xl token file ({} bytes, shorter than the "
        "64-byte header)",
        path.string(),
        map_size_));
  }
  map_ = ::mmap(nullptr, map_size_, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    throw UserError(
        "cannot map token file " + path.string() + ": " + std::strerror(errno));
  }
  Header header{};
  std::memcpy(&header, map_, sizeof(header));
  const auto fail = [&](const std::string& what) {
    release();
    throw UserError(path.string() + ": " + what);
  };
  if (std::memcmp(header.magic, kMagic, sizeof(kMagic)) != 0) {
    fail("not an xl token file (bad magic); encode corpora with xl-prep");
  }
  if (header.version != kFormatVersion) {
    fail(fmt::format(
        "token file format version {}, this xl reads version {}; re-run xl-prep",
        header.version,
        kFormatVersion));
  }
  if (header.width != 2 && header.width != 4) {
    fail(fmt::format("unsupported token width {} bytes", header.width));
  }
  const uint64_t expected = sizeof(Header) + header.count * header.width;
  if (expected != map_size_) {
    fail(fmt::format(
        "file is {} bytes but its header announces {} tokens ({} bytes): "
        "truncated or corrupt; re-run xl-prep",
        map_size_,
        header.count,
        expected));
  }
  if (header.vocab_checksum != vocab.checksum() ||
      header.vocab_size != static_cast<uint64_t>(vocab.size())) {
    fail(fmt::format(
        "encoded with a different vocabulary (size {}, checksum {:016x}) than {} "
        "(size {}, checksum {:016x}); re-encode the corpus with that vocabulary "
        "(xl-prep --vocab) or point data.vocab at the one it was made with",
        header.vocab_size,
        header.vocab_checksum,
        vocab_path.string(),
        vocab.size(),
        vocab.checksum()));
  }
  width_ = header.width;
  count_ = static_cast<int64_t>(header.count);
  data_ = static_cast<const unsigned char*>(map_) + sizeof(Header);
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
  TORCH_CHECK(
      start >= 0 && length >= 0 && start + length <= count_,
      "slice [",
      start,
      ", ",
      start + length,
      ") out of range for ",
      path_.string(),
      " with ",
      count_,
      " tokens");
  const void* base = data_ + static_cast<size_t>(start) * width_;
  // Little-endian hosts only (x86-64, aarch64): the on-disk layout is the
  // in-memory one.
  const auto dtype = width_ == 2 ? torch::kUInt16 : torch::kUInt32;
  return torch::from_blob(const_cast<void*>(base), {length}, dtype)
      .to(torch::kInt64);
}

} // namespace xl::data
