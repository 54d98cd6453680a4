#include "xl/data/token_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>

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
  uint64_t data_checksum; // hash64 over the token bytes, chained block by block
  unsigned char reserved[16];
};
static_assert(sizeof(Header) == 64, "token file header must be 64 bytes");

// The checksum covers the data in blocks of this many bytes, so that the writer can compute
// it without holding the encoded file and the reader can check ids in the same pass.
constexpr size_t kBlock = 1 << 20;

// Encodes ids little-endian, `width` bytes each, and hands them to `block` in kBlock pieces.
void encode_blocks(
    const std::vector<int64_t>& ids,
    uint32_t width,
    const std::function<void(const unsigned char*, size_t)>& block) {
  std::vector<unsigned char> buffer;
  buffer.reserve(kBlock);
  for (const int64_t id : ids) {
    for (uint32_t b = 0; b < width; ++b) {
      buffer.push_back(
          static_cast<unsigned char>(static_cast<uint32_t>(id) >> (8 * b)));
    }
    if (buffer.size() == kBlock) {
      block(buffer.data(), buffer.size());
      buffer.clear();
    }
  }
  if (!buffer.empty()) {
    block(buffer.data(), buffer.size());
  }
}

template <class T>
int64_t first_at_or_above(const T* ids, size_t n, uint64_t limit) {
  T largest = 0;
  for (size_t i = 0; i < n; ++i) { // a reduction the compiler vectorises
    largest = std::max(largest, ids[i]);
  }
  if (largest < limit) {
    return -1;
  }
  for (size_t i = 0; i < n; ++i) {
    if (ids[i] >= limit) {
      return static_cast<int64_t>(i);
    }
  }
  return -1;
}

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
  encode_blocks(ids, header.width, [&](const unsigned char* data, size_t n) {
    checksum = hash64(data, n, checksum);
  });
  header.data_checksum = checksum;
  atomic_write(path, [&](const ByteSink& sink) {
    sink(&header, sizeof(header));
    encode_blocks(ids, header.width, [&](const unsigned char* data, size_t n) {
      sink(data, n);
    });
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
  // The count is bounded first so that the size arithmetic cannot wrap around.
  const uint64_t expected = header.count > map_size_
      ? std::numeric_limits<uint64_t>::max()
      : sizeof(Header) + header.count * header.width;
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
  // One pass over the data: its checksum, and every id against the vocabulary.
  const size_t bytes = map_size_ - sizeof(Header);
  uint64_t checksum = 0;
  int64_t outside = -1;
  for (size_t at = 0; at < bytes; at += kBlock) {
    const size_t n = std::min(kBlock, bytes - at);
    checksum = hash64(data_ + at, n, checksum);
    if (outside < 0) {
      const int64_t i = width_ == 2
          ? first_at_or_above(
                reinterpret_cast<const uint16_t*>(data_ + at),
                n / 2,
                header.vocab_size)
          : first_at_or_above(
                reinterpret_cast<const uint32_t*>(data_ + at),
                n / 4,
                header.vocab_size);
      outside = i < 0 ? -1 : static_cast<int64_t>(at / width_) + i;
    }
  }
  if (checksum != header.data_checksum) {
    fail(
        "the token data does not match the checksum in its header: the file is corrupt; "
        "re-run xl-prep");
  }
  if (outside >= 0) {
    fail(fmt::format(
        "token id {} at position {} is outside the vocabulary of {} ({}); the file was not "
        "written by xl-prep for it; re-run xl-prep",
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
