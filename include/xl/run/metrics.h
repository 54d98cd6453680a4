// metrics.jsonl: one JSON object per logged step and per evaluation. Each record is appended
// with one write of its whole line, and a failed write (a full disk) is an error that leaves
// the file as it was: no torn line, no record silently lost.
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

} // namespace xl::run
