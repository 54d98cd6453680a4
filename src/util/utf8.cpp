#include "xl/util/utf8.h"

#include <fmt/format.h>

#include "xl/util/error.h"

namespace xl {

Utf8Check check_utf8(std::string_view text) {
  Utf8Check out;
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const auto continuation = [&](size_t i) { return i < text.size() && (byte(i) & 0xc0U) == 0x80U; };
  for (size_t i = 0; i < text.size();) {
    const unsigned c = byte(i);
    size_t length = 0;
    if (c < 0x80) {
      length = 1;
    } else if (c >= 0xc2 && c <= 0xdf) {
      length = continuation(i + 1) ? 2 : 0;
    } else if (c >= 0xe0 && c <= 0xef) {
      // no overlong forms (E0 needs A0..BF), no surrogates (ED needs 80..9F)
      const bool second = continuation(i + 1) && (c != 0xe0 || byte(i + 1) >= 0xa0) &&
          (c != 0xed || byte(i + 1) < 0xa0);
      length = second && continuation(i + 2) ? 3 : 0;
    } else if (c >= 0xf0 && c <= 0xf4) {
      // no overlong forms (F0 needs 90..BF), nothing above U+10FFFF (F4 needs 80..8F)
      const bool second = continuation(i + 1) && (c != 0xf0 || byte(i + 1) >= 0x90) &&
          (c != 0xf4 || byte(i + 1) < 0x90);
      length = second && continuation(i + 2) && continuation(i + 3) ? 4 : 0;
    }
    if (length == 0) {
      if (out.invalid == 0) {
        out.first = i;
      }
      ++out.invalid;
      length = 1;
    }
    i += length;
  }
  return out;
}

void require_utf8(std::string_view text, const std::string& what) {
  const Utf8Check check = check_utf8(text);
  if (check.invalid > 0) {
    throw UserError(fmt::format(
        "{}: not valid UTF-8 (byte 0x{:02X} at offset {}); name it in UTF-8",
        what,
        static_cast<unsigned char>(text[check.first]),
        check.first));
  }
}

} // namespace xl
