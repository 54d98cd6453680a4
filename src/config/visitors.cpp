#include "xl/config/visitors.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <regex>

namespace xl::config {

namespace {

// A quoted scalar ("0.1"), or one tagged as text (!!str 0.1): a string, never a number.
bool string_scalar(const YAML::Node& node) {
  return node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str";
}

} // namespace

std::string show(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) {
    return "null";
  }
  if (node.IsScalar()) {
    const std::string& text = node.Scalar();
    return string_scalar(node) ? "the string \"" + text + "\"" : "'" + text + "'";
  }
  if (node.IsSequence()) {
    return "a list";
  }
  return "a mapping";
}

namespace {

bool plain_scalar(const YAML::Node& node) {
  return node.IsScalar() && !string_scalar(node);
}

} // namespace

bool parse_scalar(const YAML::Node& node, int64_t& out) {
  static const std::regex kInt("[-+]?[0-9]+");
  if (!plain_scalar(node) || !std::regex_match(node.Scalar(), kInt)) {
    return false;
  }
  try {
    out = std::stoll(node.Scalar());
  } catch (const std::out_of_range&) {
    return false;
  }
  return true;
}

bool parse_scalar(const YAML::Node& node, double& out) {
  static const std::regex kNumber("[-+]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?");
  if (!plain_scalar(node) || !std::regex_match(node.Scalar(), kNumber)) {
    return false;
  }
  // strtod, not stod: a value beyond double's range (1e400, 1e-400) is a type error naming the
  // key, not an exception.
  char* end = nullptr;
  errno = 0;
  out = std::strtod(node.Scalar().c_str(), &end);
  return errno != ERANGE && std::isfinite(out);
}

bool parse_scalar(const YAML::Node& node, bool& out) {
  if (!plain_scalar(node)) {
    return false;
  }
  const std::string& s = node.Scalar();
  if (s == "true" || s == "True") {
    out = true;
  } else if (s == "false" || s == "False") {
    out = false;
  } else {
    return false;
  }
  return true;
}

bool parse_scalar(const YAML::Node& node, std::string& out) {
  if (!node.IsScalar()) {
    return false;
  }
  out = node.Scalar();
  return true;
}

bool parse_scalar(const YAML::Node& node, ModelType& out) {
  return parse_scalar(node, out.name);
}

std::string format_double(double value) {
  std::string s = fmt::format("{}", value);
  const auto exponent = s.find_first_of("eE");
  const auto mantissa_end = exponent == std::string::npos ? s.size() : exponent;
  if (s.find('.') == std::string::npos && s.find_first_of("ni") == std::string::npos) {
    s.insert(mantissa_end, ".0");
  }
  return s;
}

std::string Writer::quote(const std::string& s) {
  YAML::Emitter e;
  e << YAML::DoubleQuoted << s;
  return e.c_str();
}

} // namespace xl::config
