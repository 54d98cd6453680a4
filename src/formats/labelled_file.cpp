#include "xl/formats/labelled_file.h"

#include <fmt/format.h>

#include "xl/formats/text.h"
#include "xl/util/error.h"
#include "xl/util/files.h"
#include "xl/util/utf8.h"

namespace xl::formats {

namespace {

// A non-negative integer, or -1.
int64_t parse_label(std::string_view field) {
  if (field.empty() || field.size() > 18) {
    return -1;
  }
  int64_t value = 0;
  for (const char c : field) {
    if (c < '0' || c > '9') {
      return -1;
    }
    value = value * 10 + (c - '0');
  }
  return value;
}

// NSMC's documents are CSV-quoted when they contain quotes: "..." with "" inside.
std::string unquote(std::string_view field) {
  if (field.size() < 2 || field.front() != '"' || field.back() != '"') {
    return std::string(field);
  }
  std::string out;
  const auto inner = field.substr(1, field.size() - 2);
  for (size_t i = 0; i < inner.size(); ++i) {
    out += inner[i];
    if (inner[i] == '"' && i + 1 < inner.size() && inner[i + 1] == '"') {
      ++i;
    }
  }
  return out;
}

} // namespace

LabelledText nsmc_review(std::string_view line, const std::string& where) {
  const size_t first = line.find('\t');
  const size_t last = line.rfind('\t');
  if (const Utf8Check check = check_utf8(line); check.invalid > 0) {
    throw UserError(fmt::format(
        "{}: not valid UTF-8 (the byte 0x{:02X} at column {}); NSMC's reviews are UTF-8",
        where,
        static_cast<unsigned char>(line[check.first]),
        check.first + 1));
  }
  if (first == std::string_view::npos || first == last) {
    throw UserError(where + ": expected 3 tab-separated columns (id, document, label)");
  }
  const auto label_field = line.substr(last + 1);
  if (label_field != "0" && label_field != "1") {
    throw UserError(fmt::format("{}: the label must be 0 or 1, found '{}'", where, label_field));
  }
  return {label_field == "1" ? 1 : 0, unquote(line.substr(first + 1, last - first - 1))};
}

LabelledText parse_labelled_line(std::string_view line, const std::string& where) {
  const size_t tab = line.find('\t');
  const int64_t label = tab == std::string_view::npos ? -1 : parse_label(line.substr(0, tab));
  if (label < 0) {
    throw UserError(fmt::format(
        "{}: expected 'label<TAB>text' with a non-negative integer label, found '{}'",
        where,
        line.substr(0, 40)));
  }
  return {label, std::string(line.substr(tab + 1))};
}

bool starts_with_label(std::string_view line) {
  const size_t tab = line.find('\t');
  return tab != std::string_view::npos && parse_label(line.substr(0, tab)) >= 0;
}

std::vector<LabelledText> read_labelled_texts(const std::filesystem::path& path) {
  return parse_labelled_texts(read_utf8_text(path, "labelled text file"), path.string());
}

std::vector<LabelledText> parse_labelled_texts(std::string_view text, const std::string& name) {
  std::vector<LabelledText> examples;
  const auto lines = split_lines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    examples.push_back(parse_labelled_line(lines[i], fmt::format("{}:{}", name, i + 1)));
  }
  if (examples.empty()) {
    throw UserError("labelled text has no examples: " + name);
  }
  return examples;
}

void write_labelled_texts(
    const std::filesystem::path& path,
    const std::vector<LabelledText>& examples) {
  std::string out;
  for (const auto& e : examples) {
    out += fmt::format("{}\t{}\n", e.label, e.text);
  }
  atomic_write(path, out);
}

} // namespace xl::formats
