// A file of examples for a classifier read a part at a time, in bounded memory: NSMC's ratings
// tsv, labelled text (label<TAB>text) or plain text, one example a line, the format told by the
// first line unless given. Blank lines hold no example; each example keeps its line number.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "xl/formats/labelled_file.h"

namespace xl::formats {

/// The formats ExampleReader reads: "auto" tells one from the first line.
inline constexpr const char* kExampleFormats[] = {"auto", "nsmc", "labelled", "text"};

/// Examples of a file, with the line each came from.
struct ExamplePart {
  std::vector<LabelledText> examples;
  std::vector<int64_t> lines;
  /// the examples' ids, where the file has them (NSMC's first column); else empty
  std::vector<std::string> ids;
};

class ExampleReader {
 public:
  /// `file` in `format` (kExampleFormats), in parts of `part_size` examples.
  ExampleReader(std::filesystem::path file, std::string format, int64_t part_size);

  /// Hands each full part to `on_part`, then the rest; `on_part` returns false to stop reading.
  void read(const std::function<bool(ExamplePart&)>& on_part);

  /// Whether the examples carry labels (known once a line was read).
  bool labelled() const {
    return format_ == "nsmc" || format_ == "labelled";
  }
  int64_t examples() const {
    return examples_;
  }
  /// Blank lines left out.
  int64_t blank_lines() const {
    return blank_;
  }
  /// Lines left out that hold a label (or an NSMC row) but no text to classify.
  int64_t textless_lines() const {
    return textless_;
  }

 private:
  struct Stop {};

  bool hand(const std::function<bool(ExamplePart&)>& on_part);
  void add_line(std::string_view line);
  void detect(std::string_view line, const std::string& where);

  std::filesystem::path file_;
  std::string format_;
  int64_t part_size_;
  ExamplePart part_;
  int64_t line_ = 0;
  int64_t examples_ = 0;
  bool detected_ = false;
  int64_t blank_ = 0;
  int64_t textless_ = 0;
};

/// Why `text` is no example to classify ("has no text", "is not UTF-8 ...", "holds a NUL byte"),
/// or "" when it is one.
std::string example_problem(std::string_view text);

/// The lines of a file, for a progress line's total; 0 (none known) for a pipe, read once.
int64_t count_lines(const std::filesystem::path& file);

} // namespace xl::formats
