// The CRC-32 that a zip archive stores with each record, checked. LibTorch's reader skips this
// check, so a checkpoint without xl's own checksum (one of an earlier xl) is checked with it
// before LibTorch parses anything in it.
#pragma once

#include <cstddef>
#include <string>

namespace xl::io {

/// "" when the zip archive in the first `size` bytes of `data` is well formed (its end record,
/// central directory and local headers within the bytes, zip64 included) and every stored
/// record matches its CRC-32; otherwise what is wrong, naming the record.
std::string zip_records_error(const char* data, size_t size);

} // namespace xl::io
