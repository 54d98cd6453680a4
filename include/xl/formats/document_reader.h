// Many documents to score, each on its own (xl-eval --documents): JSONL with a "text" field (and
// an optional "id"), plain text with one document a line, or a folder of .txt files, one document
// each. Read one document at a time, in bounded memory, from any document on: each has its
// place in the input (its index: the line from 0, or the file in the folder's sorted list), and
// a line that is no document is reported with its line number and skipped.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace xl::formats {

/// The formats DocumentReader reads: "auto" is a folder's, else JSONL when the first line that
/// is not blank starts with '{', else one document a line.
inline constexpr const char* kDocumentFormats[] = {"auto", "jsonl", "lines", "folder"};

struct Document {
  /// its place in the input: the line (from 0), or the file of the folder
  int64_t index = 0;
  /// the JSONL line's "id", else the line's number (from 1), or the file's name
  nlohmann::json id;
  std::string text;
};

/// A line that is no document: where ("docs.jsonl:7") and why.
struct BadDocument {
  int64_t index = 0;
  std::string where;
  std::string why;
};

class DocumentReader {
 public:
  /// `input` (a file or a folder) read as `format` (kDocumentFormats). A missing input, an empty
  /// file or a folder without .txt files is a UserError.
  DocumentReader(std::filesystem::path input, std::string format);

  /// The format read ("jsonl", "lines" or "folder").
  const std::string& format() const {
    return format_;
  }
  /// The places the input holds (lines or files), each a document or a line that is none.
  int64_t size() const {
    return size_;
  }
  /// Goes to place `index`: next() reads it, or what comes after it.
  void seek(int64_t index);
  /// The next document, or nothing at the end; a line that is no document on the way goes to
  /// `bad`, a blank line nowhere.
  std::optional<Document> next(std::vector<BadDocument>& bad);

 private:
  std::optional<Document> next_line(std::vector<BadDocument>& bad);

  std::filesystem::path input_;
  std::string format_;
  int64_t size_ = 0;
  std::vector<std::filesystem::path> files_; // a folder's, sorted
  std::ifstream lines_;
  int64_t at_ = 0;
};

} // namespace xl::formats
