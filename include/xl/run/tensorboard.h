// TensorBoard event files, so that `tensorboard --logdir runs/` shows xl's runs as it shows
// PyTorch's: a TFRecord file of Event protobufs (wall time, step, scalar summaries). The few
// protobuf fields are written by hand; no library for the format is packaged for Debian. The
// files are checked by reading them back with the tensorboard package's own reader (tests).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>

namespace xl::run {

class EventWriter {
 public:
  /// Creates `dir`/events.out.tfevents.<seconds>.<host>.<pid> and writes its version record.
  explicit EventWriter(const std::filesystem::path& dir);
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  void scalar(const std::string& tag, double value, int64_t step, double wall_time);
  /// A resumed run restarts at `step`: TensorBoard drops the points at `step` and after that
  /// it read before this record (what a killed run logged after its last checkpoint).
  void restart(int64_t step, double wall_time);
  const std::filesystem::path& path() const {
    return path_;
  }

 private:
  /// Appends one serialized Event as a TFRecord; a UserError naming the file when it cannot.
  void append(const std::string& event);

  std::filesystem::path path_;
  int fd_ = -1;
};

/// A metrics.jsonl record (see docs/runs.md) as events: every number as a scalar at the
/// record's step, tagged "<split>/<key>" ("train/loss", "valid/ppl", "train/loss/layer3",
/// "train/lr") or "<split>/<mode>/<key>" for xl-eval's records; a "resumed" record as a restart
/// after its step. Other records, counts (tokens, batches) and marks are left out.
void write_events(EventWriter& writer, const nlohmann::json& record, double wall_time);

/// Seconds since the epoch, as TensorBoard's wall times.
double wall_time_now();

} // namespace xl::run
