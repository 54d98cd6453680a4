#include "xl/util/utf8.h"

#include <fmt/format.h>

#include <cstdint>

#include "xl/util/error.h"

namespace xl {

CodePoint utf8_at(std::string_view text, size_t at) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[at + k]); };
  const unsigned lead = byte(0);
  const size_t n = lead < 0x80      ? 1
      : lead >= 0xc2 && lead < 0xe0 ? 2
      : lead >= 0xe0 && lead < 0xf0 ? 3
      : lead >= 0xf0 && lead < 0xf5 ? 4
                                    : 0;
  if (n == 1) {
    return {lead, 1};
  }
  if (n == 0 || at + n > text.size()) {
    return {0xfffd, 1};
  }
  char32_t c = lead & (0x7fU >> n);
  for (size_t k = 1; k < n; ++k) {
    if ((byte(k) & 0xc0U) != 0x80U) {
      return {0xfffd, 1};
    }
    c = (c << 6) | (byte(k) & 0x3fU);
  }
  const bool overlong = (n == 3 && c < 0x800) || (n == 4 && c < 0x10000);
  if (overlong || (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff) {
    return {0xfffd, 1};
  }
  return {c, n};
}

void append_utf8(std::string& out, char32_t c) {
  const auto put = [&](uint32_t bits) { out += static_cast<char>(bits); };
  if (c < 0x80) {
    put(c);
  } else if (c < 0x800) {
    put(0xc0 | (c >> 6));
    put(0x80 | (c & 0x3f));
  } else if (c < 0x10000) {
    put(0xe0 | (c >> 12));
    put(0x80 | ((c >> 6) & 0x3f));
    put(0x80 | (c & 0x3f));
  } else {
    put(0xf0 | (c >> 18));
    put(0x80 | ((c >> 12) & 0x3f));
    put(0x80 | ((c >> 6) & 0x3f));
    put(0x80 | (c & 0x3f));
  }
}

Utf8Check check_utf8(std::string_view text) {
  Utf8Check out;
  for (size_t i = 0; i < text.size();) {
    const CodePoint point = utf8_at(text, i);
    // U+FFFD itself is three bytes long
    if (point.length == 1 && point.c == 0xfffd) {
      if (out.invalid == 0) {
        out.first = i;
      }
      ++out.invalid;
    }
    i += point.length;
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
