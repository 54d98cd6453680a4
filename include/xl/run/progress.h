// Progress of long work: rate and ETA from wall-clock time, formatted for one
// log line, e.g. "step 1200/200000 (0.6%) | 18.2k tok/s | ETA 3h02m".
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace xl::run {

/// "45s", "3m07s", "2h05m", "3d04h".
std::string format_duration(double seconds);
/// "950", "18.2k", "1.35M".
std::string format_count(double value);

class Progress {
 public:
  using Clock = std::chrono::steady_clock;

  /// `total` units of work (steps, segments); `start` is where a resumed run
  /// begins.
  explicit Progress(int64_t total, int64_t start = 0);

  /// Records that the work reached `done` units and processed `tokens` more
  /// tokens.
  void update(int64_t done, int64_t tokens);
  /// Tokens per second since the previous call to line() (or the start).
  double tokens_per_second() const;
  /// Seconds left at the average pace since the start.
  double eta_seconds() const;
  /// "<unit> <done>/<total> (<pct>%) | <rate> tok/s | ETA <t>"; resets the rate
  /// window.
  std::string line(const std::string& unit);

 private:
  int64_t total_;
  int64_t start_;
  int64_t done_;
  int64_t window_tokens_ = 0;
  Clock::time_point began_;
  Clock::time_point window_began_;
};

} // namespace xl::run
