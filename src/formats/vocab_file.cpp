// Vocabulary files (vocab.txt): Vocab::save and Vocab::load, the header and one token a line.
#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <utility>

#include "xl/formats/text.h"
#include "xl/formats/vocab.h"
#include "xl/util/error.h"
#include "xl/util/files.h"

namespace xl::formats {

namespace {

constexpr const char* kHeader = "#xl-vocab v1";

// A malformed vocabulary file, at `line` (1-based).
UserError not_a_vocabulary(
    const std::filesystem::path& path,
    size_t line,
    const std::string& what) {
  return UserError(fmt::format("{}:{}: not an xl vocabulary file: {}", path.string(), line, what));
}

// The value of the header field `key` ("tokenization"), or "".
std::string header_field(const std::string& header, const std::string& key) {
  const auto at = header.find(" " + key + "=");
  if (at == std::string::npos) {
    return "";
  }
  const auto value = at + key.size() + 2;
  return header.substr(value, header.find(' ', value) - value);
}

// The kind and the declared token count of the header line.
std::pair<VocabKind, int64_t> read_header(
    const std::filesystem::path& path,
    const std::string& header) {
  VocabKind kind;
  if (header.find(" kind=word ") != std::string::npos) {
    kind = VocabKind::kWord;
  } else if (header.find(" kind=byte ") != std::string::npos) {
    kind = VocabKind::kByte;
  } else {
    throw not_a_vocabulary(path, 1, "expected kind=word or kind=byte in the header");
  }
  const auto size_at = header.find(" size=");
  if (size_at == std::string::npos) {
    throw not_a_vocabulary(path, 1, "expected size=N in the header");
  }
  const std::string digits = header.substr(size_at + 6);
  char* end = nullptr;
  errno = 0;
  const int64_t declared = std::strtoll(digits.c_str(), &end, 10);
  if (end == digits.c_str() || errno == ERANGE || declared < 0 || (*end != '\0' && *end != ' ')) {
    throw not_a_vocabulary(
        path, 1, "expected size=N (a count) in the header, found '" + digits + "'");
  }
  return {kind, declared};
}

// The token on line `number` of a vocabulary of `kind`: a byte value's byte, or the word.
std::string read_token(
    const std::filesystem::path& path,
    VocabKind kind,
    std::string_view line,
    size_t number) {
  const std::string s(line);
  if (kind == VocabKind::kWord) {
    if (s.empty()) {
      throw not_a_vocabulary(path, number, "empty token");
    }
    return s;
  }
  int value = -1;
  try {
    value = std::stoi(s);
  } catch (const std::exception&) {
  }
  if (value < 0 || value > 255 || std::to_string(value) != s) {
    throw not_a_vocabulary(path, number, "expected a byte value 0..255, found '" + s + "'");
  }
  return std::string(1, static_cast<char>(value));
}

} // namespace

void Vocab::save(const std::filesystem::path& path) const {
  std::string out = fmt::format("{} kind={} size={}", kHeader, to_string(kind_), size());
  // Older readers stop at the size; a vocabulary without rules writes no field.
  out += tokenization_ == Tokenization::kNone
      ? "\n"
      : fmt::format(" tokenization={}\n", to_string(tokenization_));
  for (const auto& t : tokens_) {
    out += kind_ == VocabKind::kByte ? std::to_string(static_cast<unsigned char>(t[0])) : t;
    out += '\n';
  }
  atomic_write(path, out);
}

Vocab Vocab::load(const std::filesystem::path& path) {
  const std::string text = read_file(path, "vocabulary file");
  const auto lines = split_lines(text);
  if (lines.empty() || lines[0].rfind(kHeader, 0) != 0) {
    throw not_a_vocabulary(
        path, 1, std::string("expected a first line starting with '") + kHeader + "'");
  }
  const auto [kind, declared] = read_header(path, std::string(lines[0]));
  std::vector<std::string> tokens;
  for (size_t i = 1; i < lines.size(); ++i) {
    tokens.push_back(read_token(path, kind, lines[i], i + 1));
  }
  if (static_cast<int64_t>(tokens.size()) != declared) {
    throw not_a_vocabulary(
        path,
        lines.size(),
        fmt::format("header says {} tokens, file has {} (truncated?)", declared, tokens.size()));
  }
  Vocab vocab(kind, std::move(tokens));
  if (static_cast<int64_t>(vocab.ids_.size()) != vocab.size()) {
    throw not_a_vocabulary(path, 1, "duplicate tokens");
  }
  if (const auto rules = header_field(std::string(lines[0]), "tokenization"); !rules.empty()) {
    const auto tokenization = tokenization_named(rules, path.string() + ":1");
    if (kind == VocabKind::kByte && tokenization != Tokenization::kNone) {
      throw not_a_vocabulary(path, 1, "a byte vocabulary has no tokenization=" + rules);
    }
    vocab.tokenization_ = tokenization;
  }
  return vocab;
}

} // namespace xl::formats
