// The config's scalars (schema.h): strict conversion from YAML with readable errors, their YAML
// text, and the checks of a value against its field's limits. The visitors (visitors.h) read and
// write every field through these.
#pragma once

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "xl/config/config.h"
#include "xl/config/field.h"

namespace xl::config {

// ============================================================================
// Scalars: strict conversion from YAML with readable errors.
// ============================================================================

/// How a YAML node reads in a message: 'value', the string "value", a list, a mapping, null.
std::string show(const YAML::Node& node);

/// Plain (unquoted) scalars only for numbers and booleans: a quoted "3" is a string.
bool parse_scalar(const YAML::Node& node, int64_t& out);
bool parse_scalar(const YAML::Node& node, double& out);
bool parse_scalar(const YAML::Node& node, bool& out);
bool parse_scalar(const YAML::Node& node, std::string& out);
bool parse_scalar(const YAML::Node& node, ModelType& out);
template <class E, std::enable_if_t<std::is_enum_v<E>, int> = 0>
bool parse_scalar(const YAML::Node& node, E& out) {
  return node.IsScalar() && parse_choice(node.Scalar(), out);
}

/// A double in YAML that reloads as a float: shortest round-trip digits, always with a '.'
/// in the mantissa ("1.0e-05"), which YAML 1.1 readers such as PyYAML need.
std::string format_double(double value);

template <class T>
std::string format_value(const T& value) {
  if constexpr (std::is_enum_v<T>) {
    return choice_name(value);
  } else if constexpr (std::is_same_v<T, bool>) {
    return value ? "true" : "false";
  } else if constexpr (std::is_same_v<T, double>) {
    return format_double(value);
  } else if constexpr (std::is_same_v<T, std::string>) {
    return value;
  } else if constexpr (std::is_same_v<T, ModelType>) {
    return value.name;
  } else {
    return std::to_string(value);
  }
}

/// The limits a field of type T really has: an enum's names, or what it declares.
template <class T>
Limits effective_limits(const Limits& declared) {
  if constexpr (std::is_enum_v<T>) {
    return choice_limits<T>();
  } else {
    return declared;
  }
}

template <class T>
bool within(const T& value, const Limits& limits) {
  if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>) {
    return limits.admits(static_cast<double>(value));
  } else if constexpr (std::is_same_v<T, std::string>) {
    return limits.admits(value);
  } else if constexpr (std::is_same_v<T, ModelType>) {
    return limits.admits(value.name);
  } else {
    return true;
  }
}

/// Why a number of the config cannot be a float32, which is what the model computes with
/// ("" when it can, and for other types): beyond float32's largest magnitude, or so small that
/// it would round to 0.
template <class T>
std::string float32_problem(const T& value) {
  if constexpr (std::is_same_v<T, double>) {
    const double magnitude = std::abs(value);
    if (magnitude > std::numeric_limits<float>::max()) {
      return "beyond float32's largest magnitude (3.4e+38)";
    }
    if (magnitude > 0.0 && static_cast<float>(magnitude) == 0.0F) {
      return "which float32 rounds to 0";
    }
  }
  return "";
}

template <class T>
std::string expectation(const Limits& limits) {
  std::string text =
      std::string("expected ") + (std::is_same_v<T, int64_t> ? "an " : "a ") + type_name<T>();
  const std::string range = limits.describe();
  return range.empty() ? text : text + " " + range;
}

} // namespace xl::config
