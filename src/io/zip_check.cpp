#include "xl/io/zip_check.h"

#include <fmt/format.h>

#include <string>

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

// The central directory: where it starts and how many entries it has.
struct Directory {
  uint64_t entries = 0;
  uint64_t offset = 0;
};

// The directory the end record (or the zip64 one it points to) names; "" or what is wrong.
std::string find_directory(const Reader& r, size_t size, Directory& directory) {
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
  directory.entries = r.get(end + 10, 2);
  directory.offset = r.get(end + 16, 4);
  if (directory.entries == 0xFFFF || directory.offset == kMax32) {
    if (end < 20 || r.get(end - 20, 4) != kEnd64Locator) {
      return "no zip64 end record locator";
    }
    const uint64_t end64 = r.get(end - 16, 8);
    if (!r.has(end64, 56) || r.get(end64, 4) != kEnd64) {
      return "no zip64 end record";
    }
    directory.entries = r.get(end64 + 32, 8);
    directory.offset = r.get(end64 + 48, 8);
  }
  return "";
}

// One central directory entry, its zip64 sizes and offset resolved.
struct Entry {
  uint64_t method = 0;
  uint32_t crc = 0;
  uint64_t compressed = 0;
  uint64_t uncompressed = 0;
  uint64_t local = 0;  // the offset of its local header
  uint64_t length = 0; // of the entry itself
  std::string name;
};

// The entry at `at`; false where it is malformed.
bool read_entry(const Reader& r, uint64_t at, Entry& entry) {
  if (!r.has(at, 46) || r.get(at, 4) != kCentral) {
    return false;
  }
  entry.method = r.get(at + 10, 2);
  entry.crc = static_cast<uint32_t>(r.get(at + 16, 4));
  entry.compressed = r.get(at + 20, 4);
  entry.uncompressed = r.get(at + 24, 4);
  const uint64_t name_size = r.get(at + 28, 2);
  const uint64_t extra_size = r.get(at + 30, 2);
  const uint64_t comment_size = r.get(at + 32, 2);
  entry.local = r.get(at + 42, 4);
  if (!r.has(at + 46, name_size + extra_size + comment_size)) {
    return false;
  }
  entry.name.assign(r.at(at + 46), name_size);
  entry.length = 46 + name_size + extra_size + comment_size;
  // zip64 sizes and offset, in this order, for each field that is 0xFFFFFFFF.
  const uint64_t extra_end = at + 46 + name_size + extra_size;
  for (uint64_t x = at + 46 + name_size; x + 4 <= extra_end;) {
    const uint64_t id = r.get(x, 2);
    const uint64_t len = r.get(x + 2, 2);
    if (id == 1) {
      uint64_t f = x + 4;
      for (uint64_t* field : {&entry.uncompressed, &entry.compressed, &entry.local}) {
        if (*field == kMax32 && f + 8 <= x + 4 + len && f + 8 <= extra_end) {
          *field = r.get(f, 8);
          f += 8;
        }
      }
    }
    x += 4 + len;
  }
  return true;
}

// What is wrong with the record `entry` describes ("" nothing): its local header, its extent
// and, where it is stored, its sizes and CRC-32.
std::string record_error(const Reader& r, const Entry& entry) {
  if (!r.has(entry.local, 30) || r.get(entry.local, 4) != kLocal) {
    return fmt::format("record '{}' has no local header", entry.name);
  }
  const uint64_t start = entry.local + 30 + r.get(entry.local + 26, 2) + r.get(entry.local + 28, 2);
  if (!r.has(start, entry.compressed)) {
    return fmt::format("record '{}' runs past the end of the archive", entry.name);
  }
  if (entry.method == 0) {
    if (entry.compressed != entry.uncompressed) {
      return fmt::format("stored record '{}' has two sizes", entry.name);
    }
    if (util::crc32(r.at(start), entry.compressed) != entry.crc) {
      return fmt::format("record '{}' does not match its CRC-32", entry.name);
    }
  }
  return "";
}

} // namespace

std::string zip_records_error(const char* data, size_t size) {
  const Reader r(data, size);
  Directory directory;
  if (auto error = find_directory(r, size, directory); !error.empty()) {
    return error;
  }
  uint64_t at = directory.offset;
  for (uint64_t e = 0; e < directory.entries; ++e) {
    Entry entry;
    if (!read_entry(r, at, entry)) {
      return fmt::format("central directory entry {} is malformed", e);
    }
    if (auto error = record_error(r, entry); !error.empty()) {
      return error;
    }
    at += entry.length;
  }
  return "";
}

} // namespace xl::io
