#include "xl/io/zip_check.h"

#include <fmt/format.h>

#include "xl/util/crc.h"

namespace xl::io {
namespace {

// Little-endian fields at checked offsets: every read past the end is a malformed archive.
class Reader {
 public:
  Reader(const char* data, size_t size) : data_(data), size_(size) {}
  bool has(uint64_t at, uint64_t n) const {
    return at <= size_ && n <= size_ - at;
  }
  uint64_t get(uint64_t at, int bytes) const {
    uint64_t v = 0;
    for (int b = bytes - 1; b >= 0; --b) {
      v = (v << 8) | static_cast<unsigned char>(data_[at + b]);
    }
    return v;
  }
  const char* at(uint64_t offset) const {
    return data_ + offset;
  }

 private:
  const char* data_;
  size_t size_;
};

constexpr uint32_t kEnd = 0x06054b50;
constexpr uint32_t kEnd64Locator = 0x07064b50;
constexpr uint32_t kEnd64 = 0x06064b50;
constexpr uint32_t kCentral = 0x02014b50;
constexpr uint32_t kLocal = 0x04034b50;
constexpr uint64_t kMax32 = 0xFFFFFFFFU;

} // namespace

std::string zip_records_error(const char* data, size_t size) {
  const Reader r(data, size);
  // The end record: the last signature within the 64 KiB a comment may take.
  uint64_t end = 0;
  bool found = false;
  for (uint64_t back = 22; back <= size && back <= 22 + 0xFFFF; ++back) {
    if (r.get(size - back, 4) == kEnd) {
      end = size - back;
      found = true;
      break;
    }
  }
  if (!found) {
    return "no zip end record";
  }
  uint64_t entries = r.get(end + 10, 2);
  uint64_t directory = r.get(end + 16, 4);
  if (entries == 0xFFFF || directory == kMax32) {
    if (end < 20 || r.get(end - 20, 4) != kEnd64Locator) {
      return "no zip64 end record locator";
    }
    const uint64_t end64 = r.get(end - 16, 8);
    if (!r.has(end64, 56) || r.get(end64, 4) != kEnd64) {
      return "no zip64 end record";
    }
    entries = r.get(end64 + 32, 8);
    directory = r.get(end64 + 48, 8);
  }
  uint64_t at = directory;
  for (uint64_t e = 0; e < entries; ++e) {
    if (!r.has(at, 46) || r.get(at, 4) != kCentral) {
      return fmt::format("central directory entry {} is malformed", e);
    }
    const uint64_t method = r.get(at + 10, 2);
    const auto crc = static_cast<uint32_t>(r.get(at + 16, 4));
    uint64_t compressed = r.get(at + 20, 4);
    uint64_t uncompressed = r.get(at + 24, 4);
    const uint64_t name_size = r.get(at + 28, 2);
    const uint64_t extra_size = r.get(at + 30, 2);
    const uint64_t comment_size = r.get(at + 32, 2);
    uint64_t local = r.get(at + 42, 4);
    if (!r.has(at + 46, name_size + extra_size + comment_size)) {
      return fmt::format("central directory entry {} is malformed", e);
    }
    const std::string name(r.at(at + 46), name_size);
    // zip64 sizes and offset, in this order, for each field that is 0xFFFFFFFF.
    for (uint64_t x = at + 46 + name_size;
         x + 4 <= at + 46 + name_size + extra_size;) {
      const uint64_t id = r.get(x, 2);
      const uint64_t len = r.get(x + 2, 2);
      if (id == 1) {
        uint64_t f = x + 4;
        for (uint64_t* field : {&uncompressed, &compressed, &local}) {
          if (*field == kMax32 && f + 8 <= x + 4 + len &&
              f + 8 <= at + 46 + name_size + extra_size) {
            *field = r.get(f, 8);
            f += 8;
          }
        }
      }
      x += 4 + len;
    }
    if (!r.has(local, 30) || r.get(local, 4) != kLocal) {
      return fmt::format("record '{}' has no local header", name);
    }
    const uint64_t start =
        local + 30 + r.get(local + 26, 2) + r.get(local + 28, 2);
    if (!r.has(start, compressed)) {
      return fmt::format("record '{}' runs past the end of the archive", name);
    }
    if (method == 0) {
      if (compressed != uncompressed) {
        return fmt::format("stored record '{}' has two sizes", name);
      }
      if (util::crc32(r.at(start), compressed) != crc) {
        return fmt::format("record '{}' does not match its CRC-32", name);
      }
    }
    at += 46 + name_size + extra_size + comment_size;
  }
  return "";
}

} // namespace xl::io
