#include "xl/util/flag_checks.h"

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

} // namespace xl
