#include "xl/formats/labelled_file.h"

#include <fmt/format.h>

#include "xl/formats/text.h"
#include "xl/util/error.h"
#include "xl/util/files.h"

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

} // namespace

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
  const std::string text = read_utf8_text(path, "labelled text file");
  std::vector<LabelledText> examples;
  const auto lines = split_lines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    examples.push_back(parse_labelled_line(lines[i], fmt::format("{}:{}", path.string(), i + 1)));
  }
  if (examples.empty()) {
    throw UserError("labelled text file has no examples: " + path.string());
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
