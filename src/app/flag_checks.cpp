#include "xl/app/flag_checks.h"

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace xl {

CLI::Validator count_from(int64_t min) {
  return CLI::Validator(
      [min](const std::string& value) -> std::string {
        // from_chars refuses what does not fit in 64 bits, where CLI11 saturates.
        int64_t n = 0;
        const char* end = value.data() + value.size();
        const auto [stop, error] = std::from_chars(value.data(), end, n);
        if (error == std::errc::result_out_of_range && stop == end) {
          return fmt::format(
              "expected a count from {} to {} (64 bits), found '{}'",
              min,
              std::numeric_limits<int64_t>::max(),
              value);
        }
        if (value.empty() || error != std::errc() || stop != end || n < min) {
          return fmt::format("expected a count >= {}, found '{}'", min, value);
        }
        return "";
      },
      fmt::format("COUNT >= {}", min));
}

CLI::Validator finite_number() {
  return CLI::Validator(
      [](const std::string& value) -> std::string {
        char* end = nullptr;
        errno = 0;
        const double x = std::strtod(value.c_str(), &end);
        if (value.empty() || end != value.c_str() + value.size() || errno == ERANGE ||
            !std::isfinite(x)) {
          return fmt::format("expected a finite number, found '{}'", value);
        }
        return "";
      },
      "NUMBER");
}

CLI::Validator number_between(double low, double high) {
  return CLI::Validator(
      [low, high](const std::string& value) -> std::string {
        char* end = nullptr;
        errno = 0;
        const double x = std::strtod(value.c_str(), &end);
        if (value.empty() || end != value.c_str() + value.size() || errno == ERANGE ||
            !(x >= low && x <= high)) {
          return fmt::format("expected a number from {:g} to {:g}, found '{}'", low, high, value);
        }
        return "";
      },
      "NUMBER");
}

CLI::Validator positive_count() {
  return count_from(1);
}

namespace {

// K and N of "K/N" (0, 0 when it is none).
std::pair<int64_t, int64_t> shard_parts(const std::string& value) {
  const size_t slash = value.find('/');
  if (slash == std::string::npos) {
    return {0, 0};
  }
  const auto part = [](const char* begin, const char* end) -> int64_t {
    int64_t n = 0;
    const auto [stop, error] = std::from_chars(begin, end, n);
    return error == std::errc() && stop == end && begin != end ? n : 0;
  };
  const int64_t k = part(value.data(), value.data() + slash);
  const int64_t n = part(value.data() + slash + 1, value.data() + value.size());
  return k >= 1 && k <= n ? std::pair{k, n} : std::pair<int64_t, int64_t>{0, 0};
}

} // namespace

CLI::Validator shard_of() {
  return CLI::Validator(
      [](const std::string& value) -> std::string {
        return shard_parts(value).first == 0
            ? fmt::format(
                  "expected K/N, part K of N with 1 <= K <= N (1/4 ... 4/4), found '{}'", value)
            : "";
      },
      "K/N");
}

std::pair<int64_t, int64_t> parse_shard(const std::string& value) {
  return shard_parts(value);
}

} // namespace xl
