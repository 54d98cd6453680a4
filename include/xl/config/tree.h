// The merged configuration tree: YAML files joined through `base:` inheritance
// and `--set` overrides, where every value remembers which file and line (or
// which override) set it, so that errors can point there.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <utility>
#include <vector>

#include "xl/config/source.h"

namespace xl::config {

/// A node of the merged tree. Mappings keep their keys in first-seen order; any
/// other YAML value (scalar, sequence, null) is a leaf held as a YAML node.
struct Tree {
  bool is_map = false;
  YAML::Node leaf;
  std::vector<std::pair<std::string, Tree>> children;
  Source source;

  Tree* find(const std::string& key);
  const Tree* find(const std::string& key) const;
  /// Returns the child `key`, creating an empty mapping child if absent.
  Tree& child(const std::string& key, const Source& source);
};

/// Loads `path` with its `base:` chain (relative paths, several levels, a list
/// of bases is merged left to right, the file itself last). Mappings merge key
/// by key; any other value replaces. A cycle, a missing file or invalid YAML is
/// a ConfigError.
Tree load_tree(const std::string& path);

/// Applies one override "a.b.c=value"; the value is parsed as YAML (so `3`, `0.5`, `true`,
/// `[1, 2]` and `{x: 1}` keep their types).
void apply_override(Tree& tree, const std::string& assignment);

/// Converts a YAML node into a tree whose every node has `source`.
Tree tree_from_yaml(const YAML::Node& node, const Source& source);

} // namespace xl::config
