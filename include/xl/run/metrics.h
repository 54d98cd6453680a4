// metrics.jsonl: one JSON object per logged step and per evaluation. Each record is appended
// with one write of its whole line, and a failed write (a full disk) is an error that leaves
// the file as it was: no torn line, no record silently lost. Two things can still show a
// partial last line: a reader racing a write that spans a page (the kernel extends the file a
// page at a time), and SIGKILL during such a write. Readers therefore take only lines that end
// in a newline, and a trainer drops a torn tail before it appends.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>

namespace xl::run {

class MetricsWriter {
 public:
  explicit MetricsWriter(const std::filesystem::path& path);
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;

  /// Appends `record` as one line; a UserError naming the file when it cannot.
  void write(const nlohmann::json& record);

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

/// Cuts `path` back to its last newline; returns the bytes dropped (0 when the file ends in a
/// newline, is empty or does not exist). Only the run's lock holder may call it.
size_t drop_torn_last_line(const std::filesystem::path& path);

} // namespace xl::run
