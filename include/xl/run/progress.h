// Progress of long work: rate and ETA from wall-clock time, formatted for one
// log line, e.g. "step 1200/200000 (0.6%) | 18.2k tok/s | ETA 3h02m".
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

namespace xl::run {

/// "45s", "3m07s", "2h05m", "3d04h".
std::string format_duration(double seconds);
/// "950", "18.2k", "1.35M".
std::string format_count(double value);

class Progress {
 public:
  using Clock = std::chrono::steady_clock;

  /// `total` units of work (steps, segments; 0: not known ahead, no ETA); `start` is where a
  /// resumed run begins; `now` tells the time (tests pass their own clock).
  explicit Progress(
      int64_t total,
      int64_t start = 0,
      std::function<Clock::time_point()> now = Clock::now);

  /// Records that the work reached `done` units and processed `tokens` more
  /// tokens.
  void update(int64_t done, int64_t tokens);
  /// Tokens per second since the previous call to line() (or the start).
  double tokens_per_second() const;
  /// Seconds left at the recent pace: the units of each line()'s window,
  /// averaged with decaying weights, so that a slow start (another process on
  /// the cores, a cold cache) stops counting after a few lines.
  double eta_seconds() const;
  double elapsed_seconds() const;
  /// Whether `seconds` have passed since the last line() (or the start).
  bool due(double seconds) const;
  /// "<unit> <done>/<total> (<pct>%) | <rate> tok/s | <elapsed> elapsed | ETA
  /// <t>" ("<unit> <done> | <rate> tok/s | <elapsed> elapsed" without a total); starts the
  /// next rate window.
  std::string line(const std::string& unit);
  /// What the rate counts: "tok" (tokens, the default), "ex" (a classifier's examples).
  void count_as(std::string counted) {
    counted_ = std::move(counted);
  }

 private:
  /// pace_ with the current window's pace averaged in (pace_ when it has no units)
  double pace_with_window(Clock::time_point now) const;

  std::function<Clock::time_point()> now_;
  int64_t total_;
  int64_t done_;
  int64_t window_tokens_ = 0;
  int64_t window_done_;
  /// seconds per unit, recent windows weighted most (NaN before the first)
  double pace_;
  Clock::time_point began_;
  Clock::time_point window_began_;
  std::string counted_ = "tok";
};

} // namespace xl::run
