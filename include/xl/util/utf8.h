// UTF-8 well-formedness, for corpora (formats/) and for the names and paths a config or a
// command line gives (a run's config.yaml and metrics are UTF-8 documents).
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

/// Throws a UserError when `text` is not valid UTF-8: "`what` ...: not valid UTF-8 (byte 0xE9
/// at offset 3)".
void require_utf8(std::string_view text, const std::string& what);

} // namespace xl
