// The errors xl throws at its callers. A UserError is caused by the user's input (config, files,
// command line, a library call's arguments): apps print its message alone, without a stack
// trace, and exit with status 2. Anything else is a bug in xl, which the library reports as an
// InternalError. Both are an xl::Error, whose what() is one line.
#pragma once

#include <stdexcept>
#include <string>

namespace xl {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

/// A problem with input the user controls: the message says what is wrong and
/// where.
class UserError : public Error {
 public:
  explicit UserError(const std::string& message) : Error(message) {}
};

/// A configuration problem: file (and line where known), key path, expected and
/// found.
class ConfigError : public UserError {
 public:
  explicit ConfigError(const std::string& message) : UserError(message) {}
};

/// A fault inside xl (a bug to report), as the library hands it on: "internal error: ...".
class InternalError : public Error {
 public:
  explicit InternalError(const std::string& message) : Error(message) {}
};

/// Exit status for user errors (config, data, command line).
constexpr int kUserErrorExit = 2;

} // namespace xl
