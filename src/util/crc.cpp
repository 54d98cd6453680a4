#include "xl/util/crc.h"

#include <array>

namespace xl::util {
namespace {

using Table = std::array<uint32_t, 256>;

Table make_table(uint32_t polynomial) {
  Table t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) {
      c = (c & 1U) != 0 ? polynomial ^ (c >> 1) : c >> 1;
    }
    t[i] = c;
  }
  return t;
}

uint32_t reflected_crc(const Table& table, const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = 0xFFFFFFFFU;
  for (size_t i = 0; i < size; ++i) {
    c = table[(c ^ p[i]) & 0xFFU] ^ (c >> 8);
  }
  return c ^ 0xFFFFFFFFU;
}

} // namespace

uint32_t crc32(const void* data, size_t size) {
  static const Table table = make_table(0xEDB88320U);
  return reflected_crc(table, data, size);
}

uint32_t crc32c(const void* data, size_t size) {
  static const Table table = make_table(0x82F63B78U);
  return reflected_crc(table, data, size);
}

} // namespace xl::util
