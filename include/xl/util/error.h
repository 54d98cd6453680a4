// Errors caused by the user's input (config, files, command line). Apps print
// their message alone, without a stack trace, and exit with status 2; anything
// else is a bug in xl.
#pragma once

#include <stdexcept>
#include <string>

namespace xl {

/// A problem with input the user controls: the message says what is wrong and
/// where.
class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& message) : std::runtime_error(message) {}
};

/// A configuration problem: file (and line where known), key path, expected and
/// found.
class ConfigError : public UserError {
 public:
  explicit ConfigError(const std::string& message) : UserError(message) {}
};

/// Exit status for user errors (config, data, command line).
constexpr int kUserErrorExit = 2;

} // namespace xl
