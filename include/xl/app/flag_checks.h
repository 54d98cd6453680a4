// The checks of command-line values every tool's flags share (CLI11 validators), with
// readable messages where CLI11's own print the largest double or let NaN through.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <utility>

namespace xl {

/// A check for flags that count: an integer >= min (a readable message, where CLI11's
/// NonNegativeNumber prints the largest double).
CLI::Validator count_from(int64_t min);

/// count_from(1), for flags that count steps.
CLI::Validator positive_count();

/// A check for flags that take a number: finite, within double's range, not empty (CLI11
/// reads "" as 0 and lets NaN through).
CLI::Validator finite_number();

/// A check for a number from `low` to `high` (NaN and infinities are not), with both bounds in
/// the message.
CLI::Validator number_between(double low, double high);

/// A part of N, "K/N" with 1 <= K <= N (--shard).
CLI::Validator shard_of();
/// K and N of a value shard_of() accepted.
std::pair<int64_t, int64_t> parse_shard(const std::string& value);

} // namespace xl
