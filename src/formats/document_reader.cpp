#include "xl/formats/document_reader.h"

#include <fmt/format.h>

#include <algorithm>

#include "xl/formats/text.h"
#include "xl/util/error.h"
#include "xl/util/files.h"
#include "xl/util/utf8.h"

namespace xl::formats {

namespace {

namespace fs = std::filesystem;

bool blank(std::string_view line) {
  return line.find_first_not_of(" \t\r\v\f") == std::string_view::npos;
}

// "jsonl" or "lines", from the first line that is not blank. A JSON array (a .json file of
// objects) would be scored as lines of JSON text: refused, with the command that converts it.
std::string detect(const fs::path& input) {
  std::ifstream in(input, std::ios::binary);
  std::string line;
  while (std::getline(in, line)) {
    if (blank(line)) {
      continue;
    }
    const auto first = line.find_first_not_of(" \t\r");
    const std::string_view rest = std::string_view(line).substr(first);
    if (rest.front() == '[' &&
        (rest.find_first_not_of(" \t\r", 1) == std::string_view::npos ||
         nlohmann::json::accept(rest))) {
      throw UserError(fmt::format(
          "documents {} holds a JSON array, not JSON Lines: give one object a line "
          "(jq -c '.[]' {} > docs.jsonl), or --format lines to score each line as text",
          input.string(),
          input.string()));
    }
    return rest.front() == '{' ? "jsonl" : "lines";
  }
  return "lines";
}

} // namespace

DocumentReader::DocumentReader(fs::path input, std::string format)
    : input_(std::move(input)), format_(std::move(format)) {
  std::error_code ec;
  if (!fs::exists(input_, ec)) {
    throw UserError(fmt::format("documents {}: no such file or folder", input_.string()));
  }
  if (fs::is_directory(input_, ec)) {
    if (format_ != "auto" && format_ != "folder") {
      throw UserError(fmt::format(
          "documents {} is a folder, and format {} reads a file", input_.string(), format_));
    }
    format_ = "folder";
    for (const auto& entry : fs::directory_iterator(input_, ec)) {
      if (entry.is_regular_file(ec) && entry.path().extension() == ".txt") {
        files_.push_back(entry.path());
      }
    }
    std::sort(files_.begin(), files_.end());
    if (files_.empty()) {
      throw UserError(fmt::format(
          "documents {}: the folder holds no .txt files (one document each)", input_.string()));
    }
    size_ = static_cast<int64_t>(files_.size());
    return;
  }
  if (format_ == "folder") {
    throw UserError(fmt::format("documents {} is a file, not a folder", input_.string()));
  }
  // Counted once, for the progress's total and the shards.
  int64_t lines = 0;
  char last = '\n';
  read_file_chunks(input_, "documents file", [&](const void* data, size_t size) {
    const auto* bytes = static_cast<const char*>(data);
    lines += std::count(bytes, bytes + size, '\n');
    last = size > 0 ? bytes[size - 1] : last;
  });
  size_ = lines + (last != '\n' ? 1 : 0);
  if (size_ == 0) {
    throw UserError(fmt::format("documents {} is empty: no documents", input_.string()));
  }
  if (format_ == "auto") {
    format_ = detect(input_);
  }
  lines_.open(input_, std::ios::binary);
}

void DocumentReader::seek(int64_t index) {
  if (format_ == "folder") {
    at_ = std::min(index, size_);
    return;
  }
  if (index < at_) {
    lines_.clear();
    lines_.seekg(0);
    at_ = 0;
  }
  std::string skipped;
  while (at_ < index && std::getline(lines_, skipped)) {
    ++at_;
  }
}

std::optional<Document> DocumentReader::next(std::vector<BadDocument>& bad) {
  if (format_ != "folder") {
    return next_line(bad);
  }
  while (at_ < size_) {
    const fs::path& file = files_[static_cast<size_t>(at_)];
    Document document{at_++, file.filename().string(), {}};
    try {
      document.text = read_utf8_text(file, "document");
    } catch (const UserError& e) {
      bad.push_back({document.index, file.string(), e.what()});
      continue;
    }
    return document;
  }
  return std::nullopt;
}

std::optional<Document> DocumentReader::next_line(std::vector<BadDocument>& bad) {
  std::string line;
  while (std::getline(lines_, line)) {
    const int64_t index = at_++;
    if (!line.empty() && line.back() == '\r') {
      line.pop_back();
    }
    if (index == 0) {
      std::string first = line;
      drop_byte_order_mark(first);
      line = std::move(first);
    }
    if (blank(line)) {
      continue;
    }
    const std::string where = fmt::format("{}:{}", input_.string(), index + 1);
    if (format_ == "lines") {
      if (const auto check = check_utf8(line); check.invalid > 0) {
        bad.push_back({index, where, fmt::format("not UTF-8 (at byte {})", check.first + 1)});
        continue;
      }
      return Document{index, index + 1, std::move(line)};
    }
    nlohmann::json record;
    try {
      record = nlohmann::json::parse(line);
    } catch (const nlohmann::json::parse_error&) {
      bad.push_back({index, where, "not a JSON object (or not UTF-8)"});
      continue;
    }
    if (!record.is_object() || !record.contains("text") || !record["text"].is_string()) {
      bad.push_back({index, where, "no \"text\" string"});
      continue;
    }
    Document document{index, record.value("id", nlohmann::json(index + 1)), {}};
    document.text = record["text"].get<std::string>();
    return document;
  }
  return std::nullopt;
}

} // namespace xl::formats
