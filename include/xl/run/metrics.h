// metrics.jsonl: one JSON object per logged step and per evaluation. Each record is appended
// with one write of its whole line, and a failed write (a full disk) is an error that leaves
// the file as it was: no torn line, no record silently lost. Two things can still show a
// partial last line: a reader racing a write that spans a page (the kernel extends the file a
// page at a time), and SIGKILL during such a write. Readers therefore take only lines that end
// in a newline, and a trainer drops a torn tail before it appends.
#pragma once

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <memory>

namespace xl::run {

class EventWriter;

class MetricsWriter {
 public:
  /// Appends to `path`; with `tensorboard`, every record also goes to a TensorBoard event file
  /// beside it (run/tensorboard.h).
  explicit MetricsWriter(const std::filesystem::path& path, bool tensorboard = false);
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;

  /// Appends `record` as one line, with "time" (UTC, ISO 8601, milliseconds) added; a
  /// UserError naming the file when it cannot.
  void write(nlohmann::json record);

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  std::unique_ptr<EventWriter> events_;
};

/// The first record of every training process: {"event": "start", "from_step" (where it begins),
/// "command", "version" (xl's git describe), "libtorch", "device", "threads"}.
nlohmann::json start_record(const torch::Device& device, int64_t step);

/// The highest "step" of `path`'s complete records (0 when none, or no file).
int64_t last_logged_step(const std::filesystem::path& path);

/// Cuts `path` back to its last newline; returns the bytes dropped (0 when the file ends in a
/// newline, is empty or does not exist). Only the run's lock holder may call it.
size_t drop_torn_last_line(const std::filesystem::path& path);

} // namespace xl::run
