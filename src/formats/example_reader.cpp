#include "xl/formats/example_reader.h"

#include <fmt/format.h>

#include <algorithm>

#include "xl/formats/text.h"
#include "xl/util/error.h"
#include "xl/util/files.h"
#include "xl/util/log.h"
#include "xl/util/utf8.h"

namespace xl::formats {

ExampleReader::ExampleReader(std::filesystem::path file, std::string format, int64_t part_size)
    : file_(std::move(file)), format_(std::move(format)), part_size_(part_size) {}

void ExampleReader::read(const std::function<bool(ExamplePart&)>& on_part) {
  std::string carry;
  try {
    read_text_pieces(
        file_,
        "examples file",
        true,
        [&](std::string_view piece, bool line_goes_on, size_t /*offset*/) {
          carry.append(piece);
          if (line_goes_on) {
            return; // the piece holds no line break: the line goes on
          }
          for (const auto line : split_lines(carry)) {
            add_line(line);
            if (static_cast<int64_t>(part_.examples.size()) == part_size_ && !hand(on_part)) {
              throw Stop{};
            }
          }
          carry.clear();
        });
    if (!part_.examples.empty()) {
      hand(on_part);
    }
  } catch (const Stop&) {
  }
}

bool ExampleReader::hand(const std::function<bool(ExamplePart&)>& on_part) {
  const bool go_on = on_part(part_);
  part_ = {};
  return go_on;
}

void ExampleReader::add_line(std::string_view line) {
  const std::string where = fmt::format("{}:{}", file_.string(), ++line_);
  // A blank line holds no example (xl-prep leaves empty reviews out too); the line numbers of
  // the others stay the file's.
  if (line.find_first_not_of(" \t\r\v\f") == std::string_view::npos) {
    ++blank_;
    return;
  }
  if (!detected_) {
    detected_ = true;
    detect(line, where);
    if (format_ == "nsmc") {
      if (line != kNsmcHeader) {
        throw UserError(fmt::format(
            "{}: expected NSMC's header 'id<TAB>document<TAB>label' (--format nsmc)", where));
      }
      return;
    }
  }
  LabelledText example = format_ == "nsmc" ? nsmc_review(line, where)
      : format_ == "labelled"              ? parse_labelled_line(line, where)
                                           : LabelledText{0, std::string(line)};
  if (example.text.find_first_not_of(" \t\r\v\f") == std::string::npos) {
    ++textless_; // a label without a review: nothing to classify
    return;
  }
  part_.examples.push_back(std::move(example));
  part_.lines.push_back(line_);
  if (format_ == "nsmc") {
    part_.ids.emplace_back(line.substr(0, line.find('\t')));
  }
  ++examples_;
}

// "auto": from the first line that is not blank.
void ExampleReader::detect(std::string_view line, const std::string& where) {
  if (format_ != "auto") {
    return;
  }
  format_ = line == kNsmcHeader ? "nsmc" : starts_with_label(line) ? "labelled" : "text";
  logger().info("{} reads as {} (--format)", file_.string(), format_);
  // "positive<TAB>...", "-1<TAB>...": labelled text whose labels are no class numbers.
  if (const size_t tab = line.find('\t'); format_ == "text" && tab != std::string_view::npos) {
    logger().warn(
        "{}: '{}' before a tab is no class number (0, 1, ...), so every line is read as plain "
        "text, tabs and all, without gold labels; --format labelled says which lines are wrong",
        where,
        line.substr(0, std::min<size_t>(tab, 40)));
  }
}

std::string example_problem(std::string_view text) {
  if (text.find('\0') != std::string_view::npos) {
    return "holds a NUL byte";
  }
  if (const auto check = check_utf8(text); check.invalid > 0) {
    return fmt::format("is not UTF-8 (byte {} is not)", check.first + 1);
  }
  if (text.find_first_not_of(" \t\r\n\v\f") == std::string_view::npos) {
    return "has no text";
  }
  return "";
}

int64_t count_lines(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) {
    return 0;
  }
  int64_t lines = 0;
  read_file_chunks(file, "examples file", [&](const void* data, size_t size) {
    const auto* bytes = static_cast<const char*>(data);
    lines += std::count(bytes, bytes + size, '\n');
  });
  return lines;
}

} // namespace xl::formats
