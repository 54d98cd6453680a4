// Text splitting with the exact semantics of the Python reference tokenizers
// (kimiyoung/transformer-xl's `line.strip().split()` over universal-newline
// lines), so that vocabularies and token counts match theirs.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "xl/util/utf8.h"

namespace xl::formats {

/// Reads the text file `path` (read_file, `what` names it) for a tokenizer that expects
/// UTF-8: a NUL byte or more than 1% of bytes outside UTF-8 (binary data, another encoding) is a
/// UserError; fewer are counted in a warning, and SentencePiece reads them as unknown pieces.
/// A UTF-8 byte-order mark first (some editors write one) is dropped: no part of the text.
std::string read_utf8_text(const std::filesystem::path& path, const std::string& what);

/// Drops the UTF-8 byte-order mark `text` starts with, if it does.
void drop_byte_order_mark(std::string& text);

/// The size a piece of read_text_pieces reaches before it is cut.
inline constexpr size_t kTextPiece = size_t{1} << 20;
/// Bytes without a blank or a line break that read_text_pieces takes for no text of words.
inline constexpr size_t kLongestWord = size_t{16} << 20;

/// Receives a piece of text; `line_goes_on`: its last line continues in the next piece;
/// `offset`: the byte of the text (the file) it starts at.
using TextPieceSink = std::function<void(std::string_view piece, bool line_goes_on, size_t offset)>;

/// Streams the UTF-8 text file `path` (`what` names it) to `sink` in pieces of about
/// kTextPiece bytes, whatever its size, checked as read_utf8_text checks a whole file (as far as
/// it is read). `whole_words`: each piece ends at a line break or, within a longer line, after a
/// blank (so no word is cut); more than kLongestWord bytes without either is a UserError. Else
/// pieces end anywhere between two characters. An empty file is a UserError.
void read_text_pieces(
    const std::filesystem::path& path,
    const std::string& what,
    bool whole_words,
    const TextPieceSink& sink);
/// read_text_pieces of a text held in memory (`name` names it in messages): the same pieces.
void read_text_pieces(
    std::string_view text,
    const std::string& name,
    const std::string& what,
    bool whole_words,
    const TextPieceSink& sink);

/// Splits `text` into lines at "\n", "\r\n" or "\r"; the terminator is dropped
/// and a final line without terminator still counts. An empty text has no
/// lines.
std::vector<std::string_view> split_lines(std::string_view text);

/// Splits a UTF-8 line into tokens at runs of Unicode whitespace, as Python's
/// str.split() does (ASCII whitespace, U+001C..U+001F, U+0085, U+00A0, U+1680,
/// U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000).
std::vector<std::string_view> split_words(std::string_view line);

/// Splits a stripped line into sentences after '.', '!' or '?' followed by
/// whitespace, as Python's re.split(r"(?<=[.!?])\s+", line.strip()) (ratsgo's
/// process_documents for the Korean XLNet corpus). An empty line has none.
std::vector<std::string_view> split_sentences(std::string_view line);

} // namespace xl::formats
