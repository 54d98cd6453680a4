#include "xl/formats/text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "xl/util/error.h"
#include "xl/util/files.h"
#include "xl/util/log.h"
#include "xl/util/utf8.h"

namespace xl::formats {

namespace {

// The byte length of the whitespace character starting at `s[i]`, or 0.
size_t whitespace_length(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) { // most bytes of a corpus: nothing to decode
    return is_unicode_space(c) ? 1 : 0;
  }
  const CodePoint point = utf8_at(s, i);
  return is_unicode_space(point.c) ? point.length : 0;
}

// The UTF-16 or UTF-32 encoding `start` (a text's first bytes) is in, by its byte-order mark or,
// without one, by where its NULs fall: in words, and as iconv names it. Empty for neither.
std::pair<std::string, std::string> wide_encoding(std::string_view start) {
  const auto has = [&](std::string_view mark) { return start.substr(0, mark.size()) == mark; };
  using std::literals::string_view_literals::operator""sv;
  if (has("\xFF\xFE\0\0"sv)) {
    return {"UTF-32 (little-endian)", "UTF-32"};
  }
  if (has("\0\0\xFE\xFF"sv)) {
    return {"UTF-32 (big-endian)", "UTF-32"};
  }
  if (has("\xFF\xFE"sv)) {
    return {"UTF-16 (little-endian)", "UTF-16"};
  }
  if (has("\xFE\xFF"sv)) {
    return {"UTF-16 (big-endian)", "UTF-16"};
  }
  // ASCII in UTF-16 without a mark: every other byte is a NUL.
  const size_t n = std::min<size_t>(start.size(), 256) / 2 * 2;
  size_t even = 0;
  size_t odd = 0;
  for (size_t i = 0; i < n; ++i) {
    (i % 2 == 0 ? even : odd) += start[i] == '\0' ? 1 : 0;
  }
  if (n >= 8 && odd * 10 >= n * 4 && even * 10 < n) {
    return {"UTF-16 (little-endian)", "UTF-16LE"};
  }
  if (n >= 8 && even * 10 >= n * 4 && odd * 10 < n) {
    return {"UTF-16 (big-endian)", "UTF-16BE"};
  }
  return {};
}

} // namespace

namespace {

// The UTF-8 verdict on a text read whole or in pieces (`bytes` read so far): a NUL byte, or more
// than 1% of bytes outside UTF-8, is no text.
class Utf8Verdict {
 public:
  // `whole`: the text comes in one piece.
  Utf8Verdict(std::string name, std::string what, bool whole)
      : path_(std::move(name)), what_(std::move(what)), whole_(whole) {}

  void add(std::string_view piece) {
    if (const size_t nul = piece.find('\0'); nul != std::string_view::npos) {
      if (const auto [wide, name] =
              bytes_ == 0 ? wide_encoding(piece) : std::pair<std::string, std::string>{};
          !wide.empty()) {
        throw UserError(fmt::format(
            "{} {} is {} text, not UTF-8: convert it first (iconv -f {} -t UTF-8 {} > "
            "{}.utf8)",
            what_,
            path_,
            wide,
            name,
            path_,
            path_));
      }
      throw UserError(fmt::format(
          "{} {} is not text: it holds a NUL byte (at byte {})", what_, path_, bytes_ + nul));
    }
    const auto check = check_utf8(piece);
    if (check.invalid > 0 && invalid_ == 0) {
      first_ = bytes_ + check.first;
    }
    invalid_ += check.invalid;
    bytes_ += piece.size();
    if (invalid_ * 100 > bytes_) {
      throw UserError(fmt::format(
          "{} {} is not UTF-8 text: {} of its {} bytes{} are not UTF-8 (the first at byte {}); "
          "convert it (iconv -t UTF-8) or give the file of text it was meant to be",
          what_,
          path_,
          invalid_,
          bytes_,
          whole_ ? "" : " read so far",
          first_));
    }
  }

  // The whole text was read: a few bytes outside UTF-8 are told.
  void finish(const char* as) const {
    if (invalid_ > 0) {
      logger().warn(
          "{} {}: {} bytes are not UTF-8 (the first at byte {}); they are read as {}",
          what_,
          path_,
          invalid_,
          first_,
          as);
    }
  }

 private:
  std::string path_;
  std::string what_;
  size_t bytes_ = 0;
  size_t invalid_ = 0;
  size_t first_ = 0;
  bool whole_;
};

// Where the next piece of `buffer` starts: after its last line break; else (`whole_words`)
// after its last ASCII blank, within a line that goes on; else (bytes) before its last
// character. 0: no place to cut. `from`: the bytes before it were searched in vain already.
std::pair<size_t, bool> piece_end(std::string_view buffer, bool whole_words, size_t from) {
  if (!whole_words) {
    // Not inside a UTF-8 sequence: back to the lead byte of the last character.
    size_t cut = buffer.size() - 1;
    while (cut > 0 && buffer.size() - cut < 4 &&
           (static_cast<unsigned char>(buffer[cut]) & 0xc0U) == 0x80U) {
      --cut;
    }
    return {cut, false};
  }
  const std::string_view fresh = buffer.substr(from);
  if (const size_t nl = fresh.rfind('\n'); nl != std::string_view::npos) {
    return {from + nl + 1, false};
  }
  // A lone "\r" ends a line too, unless a "\n" may follow it in the next piece.
  if (const size_t cr = fresh.rfind('\r');
      cr != std::string_view::npos && from + cr + 1 < buffer.size()) {
    return {from + cr + 1, false};
  }
  if (const size_t blank = fresh.find_last_of(" \t\v\f"); blank != std::string_view::npos) {
    return {from + blank + 1, true};
  }
  return {0, false};
}

} // namespace

namespace {

// UTF-8's byte-order mark, which some editors put first: no part of the text.
constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

} // namespace

void drop_byte_order_mark(std::string& text) {
  if (std::string_view(text).substr(0, 3) == kByteOrderMark) {
    text.erase(0, kByteOrderMark.size());
  }
}

std::string read_utf8_text(const std::filesystem::path& path, const std::string& what) {
  std::string text = read_file(path, what);
  drop_byte_order_mark(text);
  Utf8Verdict verdict(path.string(), what, true);
  verdict.add(text);
  verdict.finish("unknown pieces");
  return text;
}

namespace {

// read_text_pieces over the chunks `read` hands its callback (`name` names the text).
void cut_text_pieces(
    const std::string& name,
    const std::string& what,
    bool whole_words,
    const std::function<void(const ByteSink&)>& read,
    const TextPieceSink& sink) {
  Utf8Verdict verdict(name, what, false);
  std::string buffer;
  size_t consumed = 0; // bytes before the buffer
  const auto emit = [&](size_t end, bool line_goes_on) {
    const std::string_view piece(buffer.data(), end);
    verdict.add(piece);
    sink(piece, line_goes_on, consumed);
    buffer.erase(0, end);
    consumed += end;
  };
  bool any = false;
  size_t searched = 0; // the buffer's bytes that hold no place to cut
  read([&](const void* data, size_t size) {
    any = true;
    buffer.append(static_cast<const char*>(data), size);
    // Words: a byte-order mark first is none of them (bytes keep it).
    if (whole_words && consumed == 0 && buffer.size() >= 3 &&
        std::string_view(buffer).substr(0, 3) == kByteOrderMark && searched == 0) {
      buffer.erase(0, kByteOrderMark.size());
      consumed = kByteOrderMark.size();
    }
    if (buffer.size() < kTextPiece) {
      return;
    }
    // A lone "\r" at the end searched before may be a line end now that more followed it.
    const auto [end, line_goes_on] =
        piece_end(buffer, whole_words, searched > 0 ? searched - 1 : 0);
    searched = end > 0 ? 0 : buffer.size();
    if (end > 0) {
      emit(end, line_goes_on);
    } else if (buffer.size() > kLongestWord) {
      throw UserError(fmt::format(
          "{} {}: more than {} MiB without a space or a line break from byte {} on: not text "
          "of words",
          what,
          name,
          kLongestWord >> 20,
          consumed));
    }
  });
  if (!any) {
    throw UserError(fmt::format("{} {} is empty: there is nothing to read", what, name));
  }
  if (!buffer.empty()) {
    emit(buffer.size(), false);
  }
  verdict.finish(whole_words ? "parts of words" : "bytes");
}

} // namespace

void read_text_pieces(
    const std::filesystem::path& path,
    const std::string& what,
    bool whole_words,
    const TextPieceSink& sink) {
  cut_text_pieces(
      path.string(),
      what,
      whole_words,
      [&](const ByteSink& chunk) { read_file_chunks(path, what, chunk); },
      sink);
}

void read_text_pieces(
    std::string_view text,
    const std::string& name,
    const std::string& what,
    bool whole_words,
    const TextPieceSink& sink) {
  cut_text_pieces(
      name,
      what,
      whole_words,
      [&](const ByteSink& chunk) {
        for (size_t at = 0; at < text.size(); at += kTextPiece) {
          const size_t size = std::min(kTextPiece, text.size() - at);
          chunk(text.data() + at, size);
        }
      },
      sink);
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n' || text[i] == '\r') {
      lines.push_back(text.substr(start, i - start));
      if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
        ++i;
      }
      start = i + 1;
    }
  }
  if (start < text.size()) {
    lines.push_back(text.substr(start));
  }
  return lines;
}

std::vector<std::string_view> split_words(std::string_view line) {
  std::vector<std::string_view> words;
  size_t i = 0;
  size_t start = std::string_view::npos;
  while (i < line.size()) {
    const size_t ws = whitespace_length(line, i);
    if (ws > 0) {
      if (start != std::string_view::npos) {
        words.push_back(line.substr(start, i - start));
        start = std::string_view::npos;
      }
      i += ws;
    } else {
      if (start == std::string_view::npos) {
        start = i;
      }
      ++i;
    }
  }
  if (start != std::string_view::npos) {
    words.push_back(line.substr(start));
  }
  return words;
}

std::vector<std::string_view> split_sentences(std::string_view line) {
  const auto words = split_words(line);
  if (words.empty()) {
    return {};
  }
  // From the first word's start to the last word's end: the stripped line.
  const size_t first = static_cast<size_t>(words.front().data() - line.data());
  const size_t last = static_cast<size_t>(words.back().data() + words.back().size() - line.data());
  std::vector<std::string_view> sentences;
  size_t start = first;
  size_t i = first;
  while (i < last) {
    const size_t ws = whitespace_length(line, i);
    if (ws == 0) {
      ++i;
      continue;
    }
    const char before = line[i - 1];
    const bool cut = before == '.' || before == '!' || before == '?';
    if (cut) {
      sentences.push_back(line.substr(start, i - start));
    }
    while (i < last && whitespace_length(line, i) > 0) {
      i += whitespace_length(line, i);
    }
    if (cut) {
      start = i;
    }
  }
  sentences.push_back(line.substr(start, last - start));
  return sentences;
}

} // namespace xl::formats
