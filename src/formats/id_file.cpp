#include "id_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "xl/util/error.h"

namespace xl::formats {

namespace {

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

bool starts_with_magic(const std::filesystem::path& path, const IdFileFormat& format) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return false;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return false;
  }
  char magic[8] = {};
  const bool read = ::read(fd, magic, sizeof(magic)) == static_cast<ssize_t>(sizeof(magic));
  ::close(fd);
  return read && std::memcmp(magic, format.magic, sizeof(magic)) == 0;
}

IdFileHeader make_id_file_header(
    const IdFileFormat& format,
    uint64_t count,
    uint64_t vocab_checksum,
    uint64_t vocab_size) {
  IdFileHeader header{};
  std::memcpy(header.magic, format.magic, sizeof(header.magic));
  header.version = format.version;
  header.width = vocab_size <= 65536 ? 2 : 4;
  header.count = count;
  header.vocab_checksum = vocab_checksum;
  header.vocab_size = vocab_size;
  return header;
}

IdFileHeader read_id_file_header(
    const std::filesystem::path& path,
    const unsigned char* bytes,
    uint64_t size,
    const IdFileFormat& format) {
  const auto fail = [&](const std::string& what) { throw UserError(path.string() + ": " + what); };
  IdFileHeader header{};
  if (size < sizeof(header)) {
    fail(
        fmt::format("not an xl {} ({} bytes, shorter than the 64-byte header)", format.name, size));
  }
  std::memcpy(&header, bytes, sizeof(header));
  if (std::memcmp(header.magic, format.magic, sizeof(header.magic)) != 0) {
    fail(fmt::format("not an xl {} (bad magic); {}", format.name, format.encode_hint));
  }
  if (header.version != format.version) {
    fail(fmt::format(
        "{} format version {}, this xl reads version {}; re-run xl-prep",
        format.name,
        header.version,
        format.version));
  }
  if (header.width != 2 && header.width != 4) {
    fail(fmt::format("unsupported id width {} bytes", header.width));
  }
  // The count is bounded first so that the size arithmetic cannot wrap around.
  const uint64_t expected = header.count > size
      ? std::numeric_limits<uint64_t>::max()
      : sizeof(header) + header.count * header.width + format.trailer_bytes(header.count);
  if (expected != size) {
    fail(fmt::format(
        "file is {} bytes but its header announces {} tokens ({} bytes): truncated or "
        "corrupt; re-run xl-prep",
        size,
        header.count,
        expected));
  }
  return header;
}

void encode_ids(
    const std::vector<int64_t>& ids,
    uint32_t width,
    const std::function<void(const unsigned char*, size_t)>& block) {
  std::vector<unsigned char> buffer;
  buffer.reserve(kIdFileBlock);
  for (const int64_t id : ids) {
    for (uint32_t b = 0; b < width; ++b) {
      buffer.push_back(static_cast<unsigned char>(static_cast<uint64_t>(id) >> (8 * b)));
    }
    if (buffer.size() == kIdFileBlock) {
      block(buffer.data(), buffer.size());
      buffer.clear();
    }
  }
  if (!buffer.empty()) {
    block(buffer.data(), buffer.size());
  }
}

int64_t first_id_at_or_above(
    const unsigned char* data,
    uint32_t width,
    uint64_t count,
    uint64_t limit) {
  return width == 2 ? first_at_or_above(reinterpret_cast<const uint16_t*>(data), count, limit)
                    : first_at_or_above(reinterpret_cast<const uint32_t*>(data), count, limit);
}

} // namespace xl::formats
