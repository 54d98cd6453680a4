// Field specifications shared by the config schema and its visitors: each
// config field is declared once (key, member, help, limits) and the same
// declaration drives parsing, validation, dumping and the printed schema
// reference.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace xl::config {

/// Allowed values of a field (for lists: of each element).
struct Limits {
  std::optional<double> min;
  std::optional<double> max;
  bool min_exclusive = false;
  bool max_exclusive = false;
  std::vector<std::string> choices;

  /// Human-readable form, e.g. ">= 1", "in [0, 1)", "one of relative,
  /// absolute".
  std::string describe() const;
  bool admits(double value) const;
  bool admits(const std::string& value) const;
};

inline Limits none() {
  return {};
}
inline Limits at_least(double lo) {
  return Limits{lo, std::nullopt, false, false, {}};
}
inline Limits greater_than(double lo) {
  return Limits{lo, std::nullopt, true, false, {}};
}
/// [lo, hi]
inline Limits between(double lo, double hi) {
  return Limits{lo, hi, false, false, {}};
}
/// [lo, hi)
inline Limits fraction() {
  return Limits{0.0, 1.0, false, true, {}};
}
/// (lo, hi)
inline Limits open_interval(double lo, double hi) {
  return Limits{lo, hi, true, true, {}};
}
inline Limits one_of(std::vector<std::string> choices) {
  return Limits{std::nullopt, std::nullopt, false, false, std::move(choices)};
}

/// A string choice of the config, parsed into an enum once when the config is read. Each enum
/// lists its names by specialising Choices:
///   template <> struct Choices<Optim> {
///     static constexpr std::array<Choice<Optim>, 2> all{{{Optim::kAdam, "adam"}, ...}};
///   };
template <class E>
struct Choice {
  E value;
  const char* name;
};
template <class E>
struct Choices;

template <class E>
const char* choice_name(E value) {
  for (const auto& c : Choices<E>::all) {
    if (c.value == value) {
      return c.name;
    }
  }
  return "?";
}

/// The enum value named `name`, or false.
template <class E>
bool parse_choice(const std::string& name, E& out) {
  for (const auto& c : Choices<E>::all) {
    if (name == c.name) {
      out = c.value;
      return true;
    }
  }
  return false;
}

/// The limits of an enum field: its names.
template <class E>
Limits choice_limits() {
  std::vector<std::string> names;
  for (const auto& c : Choices<E>::all) {
    names.emplace_back(c.name);
  }
  return one_of(std::move(names));
}

/// Type names used in messages and in the schema reference.
template <class T>
struct TypeName;
template <>
struct TypeName<int64_t> {
  static constexpr const char* value = "integer";
};
template <>
struct TypeName<double> {
  static constexpr const char* value = "number";
};
template <>
struct TypeName<bool> {
  static constexpr const char* value = "boolean";
};
template <>
struct TypeName<std::string> {
  static constexpr const char* value = "string";
};
template <class T>
struct TypeName<std::vector<T>> {
  static std::string get() {
    return std::string("list of ") + TypeName<T>::value;
  }
};
template <class T>
struct TypeName<std::optional<T>> {
  static std::string get() {
    return std::string(TypeName<T>::value) + " or null";
  }
};

template <class T>
std::string type_name() {
  if constexpr (std::is_enum_v<T>) {
    return "string";
  } else if constexpr (
      std::is_same_v<T, int64_t> || std::is_same_v<T, double> || std::is_same_v<T, bool> ||
      std::is_same_v<T, std::string>) {
    return TypeName<T>::value;
  } else {
    return TypeName<T>::get();
  }
}

} // namespace xl::config
