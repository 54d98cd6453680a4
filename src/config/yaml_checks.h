// What xl refuses of a YAML text before reading it as a config, where yaml-cpp reads it without a
// word (or never ends): a second document, control bytes, tab indents, an alias inside the node
// it names, merge keys and tags of its own. Config files (tree.cpp) and --set values share them.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace xl::config {

/// The line (1-based) of the first content after a `---` that follows content, or 0.
size_t second_document_line(const std::string& text);

/// A NUL or another control byte of `path`'s text, named where it is (a ConfigError).
void refuse_control_bytes(const std::filesystem::path& path, const std::string& text);

/// An alias inside the node it names; `where` names the file (`lines`: with the node's line) or
/// the --set; `ancestors`: the nodes above `node`.
void refuse_recursive_aliases(
    const std::string& where,
    bool lines,
    const YAML::Node& node,
    std::vector<YAML::Node>& ancestors);

/// YAML's merge key and tags other than YAML's own.
void refuse_unread_yaml(const std::string& where, bool lines, const YAML::Node& node);

/// The first line indented with a tab, or 0.
size_t tab_indented_line(const std::string& text);

} // namespace xl::config
