#include "xl/run/progress.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace xl::run {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) {
    return "?";
  }
  const auto s = static_cast<int64_t>(std::llround(seconds));
  if (s < 60) {
    return fmt::format("{}s", s);
  }
  if (s < 3600) {
    return fmt::format("{}m{:02d}s", s / 60, s % 60);
  }
  if (s < 86400) {
    return fmt::format("{}h{:02d}m", s / 3600, (s % 3600) / 60);
  }
  return fmt::format("{}d{:02d}h", s / 86400, (s % 86400) / 3600);
}

std::string format_count(double value) {
  if (value >= 1e6) {
    return fmt::format("{:.2f}M", value / 1e6);
  }
  if (value >= 1e4) {
    return fmt::format("{:.1f}k", value / 1e3);
  }
  return fmt::format("{:.0f}", value);
}

Progress::Progress(int64_t total, int64_t start, std::function<Clock::time_point()> now)
    : now_(std::move(now)),
      total_(total),
      done_(start),
      window_done_(start),
      pace_(std::nan("")),
      began_(now_()),
      window_began_(began_) {}

void Progress::update(int64_t done, int64_t tokens) {
  done_ = done;
  window_tokens_ += tokens;
}

double Progress::tokens_per_second() const {
  const double elapsed = std::chrono::duration<double>(now_() - window_began_).count();
  return elapsed > 0 ? static_cast<double>(window_tokens_) / elapsed : 0.0;
}

double Progress::elapsed_seconds() const {
  return std::chrono::duration<double>(now_() - began_).count();
}

double Progress::pace_with_window(Clock::time_point now) const {
  const int64_t units = done_ - window_done_;
  if (units <= 0) {
    return pace_;
  }
  const double current =
      std::chrono::duration<double>(now - window_began_).count() / static_cast<double>(units);
  return std::isnan(pace_) ? current : 0.5 * (pace_ + current);
}

double Progress::eta_seconds() const {
  return pace_with_window(now_()) * static_cast<double>(total_ - done_);
}

bool Progress::due(double seconds) const {
  return std::chrono::duration<double>(now_() - window_began_).count() >= seconds;
}

std::string Progress::line(const std::string& unit) {
  std::string text = total_ > 0
      ? fmt::format(
            "{} {}/{} ({:.1f}%) | {} {}/s | {} elapsed | ETA {}",
            unit,
            done_,
            total_,
            100.0 * static_cast<double>(done_) / static_cast<double>(total_),
            format_count(tokens_per_second()),
            counted_,
            format_duration(elapsed_seconds()),
            format_duration(eta_seconds()))
      : fmt::format(
            "{} {} | {} {}/s | {} elapsed",
            unit,
            done_,
            format_count(tokens_per_second()),
            counted_,
            format_duration(elapsed_seconds()));
  const auto now = now_();
  pace_ = pace_with_window(now);
  window_tokens_ = 0;
  window_done_ = done_;
  window_began_ = now;
  return text;
}

} // namespace xl::run
