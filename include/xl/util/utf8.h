// UTF-8: well-formedness, for corpora (formats/) and for the names and paths a config or a
// command line gives (a run's config.yaml and metrics are UTF-8 documents), and code points read
// and written, for the tokenizers.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace xl {

/// The bytes of `text` that are not part of a well-formed UTF-8 sequence (overlong forms,
/// surrogates and code points above U+10FFFF included), and the offset of the first.
struct Utf8Check {
  size_t invalid = 0;
  size_t first = 0;
};
Utf8Check check_utf8(std::string_view text);

/// A code point read from UTF-8 and its length in bytes.
struct CodePoint {
  char32_t c = 0;
  size_t length = 0;
};

/// The code point at byte `at` of `text`: a byte that starts no well-formed sequence (overlong
/// forms, surrogates and code points above U+10FFFF included) reads as U+FFFD, one byte long.
CodePoint utf8_at(std::string_view text, size_t at);

/// Appends `c` as UTF-8.
void append_utf8(std::string& out, char32_t c);

/// Python's str.isspace: Unicode's White_Space and U+001C..U+001F, where words split. Inline:
/// word splitting asks it of every byte.
inline bool is_unicode_space(char32_t c) {
  return c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f) || c == 0x85 ||
      c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
      c == 0x202f || c == 0x205f || c == 0x3000;
}

/// Throws a UserError when `text` is not valid UTF-8: "`what` ...: not valid UTF-8 (byte 0xE9
/// at offset 3)".
void require_utf8(std::string_view text, const std::string& what);

} // namespace xl
