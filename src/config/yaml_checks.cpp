#include "yaml_checks.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

#include "xl/util/error.h"

namespace xl::config {

// The line (1-based) of the first content after a `---` that follows content, or 0. Found by
// scanning the lines: yaml-cpp 0.7's LoadAll loops forever on some malformed texts (fuzzing).
size_t second_document_line(const std::string& text) {
  bool content = false;
  bool separated = false;
  size_t number = 0;
  for (size_t begin = 0; begin < text.size();) {
    const size_t end = std::min(text.find('\n', begin), text.size());
    const std::string_view line(text.data() + begin, end - begin);
    begin = end + 1;
    ++number;
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string_view::npos || line[first] == '#') {
      continue;
    }
    // `---` starts a document, `...` ends one: anything after either is another document.
    const auto marker = line.substr(0, 3);
    if ((marker == "---" || marker == "...") &&
        (line.size() == 3 || line[3] == ' ' || line[3] == '\r')) {
      separated = separated || content;
      continue;
    }
    if (separated) {
      return number;
    }
    content = content || line[0] != '%'; // a directive comes before its document
  }
  return 0;
}

// yaml-cpp reads a NUL or another control byte as part of a key, which a message then shows as
// something else (a NUL looked like a tab): named here, where it is.
void refuse_control_bytes(const std::filesystem::path& path, const std::string& text) {
  const auto bad = std::find_if(text.begin(), text.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return (byte < 0x20 && c != '\n' && c != '\r' && c != '\t') || byte == 0x7f;
  });
  if (bad != text.end()) {
    const auto at = static_cast<size_t>(bad - text.begin());
    const size_t line_start = text.rfind('\n', at == 0 ? 0 : at - 1);
    const size_t column = line_start == std::string::npos || at == 0 ? at + 1 : at - line_start;
    throw ConfigError(fmt::format(
        "{}:{}: a control byte 0x{:02X} at column {}; a config is YAML text: remove it (was the "
        "file saved as UTF-16, or is it not a config?)",
        path.string(),
        std::count(text.begin(), bad, '\n') + 1,
        static_cast<unsigned char>(*bad),
        column));
  }
}

// An alias inside the node it names (`a: &x {b: *x}`) makes a node that contains itself:
// converting it would never end. `where` names the file (with the node's line) or the --set.
void refuse_recursive_aliases(
    const std::string& where,
    bool lines,
    const YAML::Node& node,
    std::vector<YAML::Node>& ancestors) {
  for (const auto& above : ancestors) {
    if (above.is(node)) {
      throw ConfigError(fmt::format(
          "{}{}: an alias refers to the node that holds it, which would contain itself; name "
          "another node with *alias, or write the values out",
          where,
          lines ? ":" + std::to_string(node.Mark().line + 1) : std::string()));
    }
  }
  if (!node.IsMap() && !node.IsSequence()) {
    return;
  }
  ancestors.push_back(node);
  for (const auto& item : node) {
    const YAML::Node child = node.IsMap() ? YAML::Node(item.second) : YAML::Node(item);
    refuse_recursive_aliases(where, lines, child, ancestors);
  }
  ancestors.pop_back();
}

// What yaml-cpp reads without a word but xl would not read as written: YAML's merge key
// (`<<: *defaults`, which it takes for a key named "<<") and tags other than YAML's own
// (`!mytag 0.01`, whose value it reads as if untagged).
void refuse_unread_yaml(const std::string& where, bool lines, const YAML::Node& node) {
  const auto at = [&](const YAML::Node& n) {
    return where + (lines ? ":" + std::to_string(n.Mark().line + 1) : std::string());
  };
  const std::string& tag = node.Tag();
  if (!tag.empty() && tag != "?" && tag != "!" && tag.rfind("tag:yaml.org,2002:", 0) != 0) {
    throw ConfigError(fmt::format(
        "{}: the tag {} is none of YAML's; a config takes plain values (quote a text, or tag "
        "it !!str)",
        at(node),
        tag));
  }
  if (node.IsMap()) {
    for (const auto& item : node) {
      if (item.first.IsScalar() && item.first.Scalar() == "<<") {
        throw ConfigError(fmt::format(
            "{}: YAML's merge key (<<) is not read here; write the keys out, or put what the "
            "sections share in a base config (base: other.yaml)",
            at(item.first)));
      }
      refuse_unread_yaml(where, lines, item.second);
    }
  } else if (node.IsSequence()) {
    for (const auto& item : node) {
      refuse_unread_yaml(where, lines, item);
    }
  }
}

// The first line indented with a tab, or 0: YAML indents with spaces only.
size_t tab_indented_line(const std::string& text) {
  size_t number = 0;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    ++number;
    const size_t first = text.find_first_not_of(' ', at);
    if (first < end && text[first] == '\t') {
      return number;
    }
    at = end + 1;
  }
  return 0;
}

} // namespace xl::config
