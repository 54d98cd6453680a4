#include "xl/formats/text.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdint>

#include "xl/util/error.h"
#include "xl/util/files.h"

namespace xl::formats {

namespace {

// Returns the byte length of the whitespace character starting at `s[i]`, or 0.
size_t whitespace_length(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f)) {
    return 1;
  }
  if (c < 0xc2) {
    return 0;
  }
  const auto at = [&](size_t k) -> unsigned {
    return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u;
  };
  if (c == 0xc2) { // U+0085, U+00A0
    return (at(1) == 0x85 || at(1) == 0xa0) ? 2 : 0;
  }
  if (c == 0xe1) { // U+1680
    return (at(1) == 0x9a && at(2) == 0x80) ? 3 : 0;
  }
  if (c == 0xe2) {
    const unsigned b1 = at(1);
    const unsigned b2 = at(2);
    if (b1 == 0x80) { // U+2000..U+200A, U+2028, U+2029, U+202F
      return ((b2 >= 0x80 && b2 <= 0x8a) || b2 == 0xa8 || b2 == 0xa9 || b2 == 0xaf) ? 3 : 0;
    }
    if (b1 == 0x81) { // U+205F
      return b2 == 0x9f ? 3 : 0;
    }
    return 0;
  }
  if (c == 0xe3) { // U+3000
    return (at(1) == 0x80 && at(2) == 0x80) ? 3 : 0;
  }
  return 0;
}

} // namespace

std::string read_utf8_text(const std::filesystem::path& path, const std::string& what) {
  std::string text = read_file(path, what);
  if (const size_t nul = text.find('\0'); nul != std::string::npos) {
    throw UserError(fmt::format(
        "{} {} is not text: it holds a NUL byte (at byte {})", what, path.string(), nul));
  }
  const auto check = check_utf8(text);
  if (check.invalid * 100 > text.size()) {
    throw UserError(fmt::format(
        "{} {} is not UTF-8 text: {} of its {} bytes are not UTF-8 (the first at byte {}); "
        "convert it (iconv -t UTF-8) or give the file of text it was meant to be",
        what,
        path.string(),
        check.invalid,
        text.size(),
        check.first));
  }
  if (check.invalid > 0) {
    spdlog::warn(
        "{} {}: {} bytes are not UTF-8 (the first at byte {}); they are read as unknown "
        "pieces",
        what,
        path.string(),
        check.invalid,
        check.first);
  }
  return text;
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
