// Labelled text files (".tsv"): one example per line, `label<TAB>text`, the label a
// non-negative integer (NSMC: 0 negative, 1 positive), the text without tabs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace xl::formats {

struct LabelledText {
  int64_t label = 0;
  std::string text;
};

/// A line without a tab or with a label that is no non-negative integer is a UserError naming
/// the file and line; so is a file without examples.
std::vector<LabelledText> read_labelled_texts(const std::filesystem::path& path);
/// Writes atomically.
void write_labelled_texts(
    const std::filesystem::path& path,
    const std::vector<LabelledText>& examples);

} // namespace xl::formats
