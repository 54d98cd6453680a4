// Labelled text files (".tsv"): one example per line, `label<TAB>text`, the label a
// non-negative integer (NSMC: 0 negative, 1 positive), the text without tabs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace xl::formats {

struct LabelledText {
  int64_t label = 0;
  std::string text;
};

/// One line `label<TAB>text`; a line without a tab or whose label is no non-negative integer is
/// a UserError starting with `where` ("file:line").
LabelledText parse_labelled_line(std::string_view line, const std::string& where);

/// Whether `line` starts with a label and a tab, as a labelled file's lines do.
bool starts_with_label(std::string_view line);

/// A line without a tab or with a label that is no non-negative integer is a UserError naming
/// the file and line; so is a file without examples.
std::vector<LabelledText> read_labelled_texts(const std::filesystem::path& path);
/// Writes atomically.
void write_labelled_texts(
    const std::filesystem::path& path,
    const std::vector<LabelledText>& examples);

} // namespace xl::formats
