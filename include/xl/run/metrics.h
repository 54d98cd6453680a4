// metrics.jsonl: one JSON object per logged step and per evaluation, appended
// and flushed line by line so that a crash loses at most the line being
// written.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace xl::run {

class MetricsWriter {
 public:
  explicit MetricsWriter(const std::filesystem::path& path);
  /// Appends `record` as one line.
  void write(const nlohmann::json& record);

 private:
  std::filesystem::path path_;
  std::ofstream out_;
};

} // namespace xl::run
