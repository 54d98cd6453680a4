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
/// The first line of NSMC's ratings tsv.
inline constexpr std::string_view kNsmcHeader = "id\tdocument\tlabel";

/// One review line of NSMC's ratings tsv (`id<TAB>document<TAB>label`): the document, unquoted
/// (CSV-quoted when it holds quotes), and its label; a line that is not UTF-8, lacks a column or
/// has a label other than 0 or 1 is a UserError starting with `where`.
LabelledText nsmc_review(std::string_view line, const std::string& where);

/// read_labelled_texts of a text held in memory (`name` names it in messages).
std::vector<LabelledText> parse_labelled_texts(std::string_view text, const std::string& name);
/// Writes atomically.
void write_labelled_texts(
    const std::filesystem::path& path,
    const std::vector<LabelledText>& examples);

} // namespace xl::formats
