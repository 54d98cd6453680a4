// Cyclic redundancy checks of the file formats xl reads and writes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace xl::util {

/// CRC-32 as zip stores it (reflected polynomial 0xEDB88320).
uint32_t crc32(const void* data, size_t size);

/// CRC-32C, Castagnoli (reflected polynomial 0x82F63B78), as TFRecord files store it.
uint32_t crc32c(const void* data, size_t size);

} // namespace xl::util
