// Loading, validating and printing configurations.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "xl/config/schema.h"

namespace xl::config {

struct Tree;

/// Loads `path` (with its `base:` chain), applies `overrides` ("a.b=value",
/// later ones win), parses every section strictly and validates cross-field
/// rules. Errors are ConfigErrors naming the file (and line), the key path,
/// what was expected and what was found.
Config load(const std::string& path, const std::vector<std::string>& overrides = {});

/// Parses an already merged tree. `origin` names the config for the default run
/// name.
Config from_tree(const Tree& tree, const std::string& origin);

/// Checks the rules between fields (ranges of single fields are checked while
/// parsing).
void validate(const Config& config);

/// The fully resolved config as YAML; load() of this text gives the same
/// Config.
std::string dump(const Config& config);

/// A reference of every key: path, type, default and meaning (Markdown table
/// rows).
std::string schema_reference();

/// Fails with a ConfigError naming where `key` was set, the key and `what` is wrong: a rule
/// between fields is broken.
[[noreturn]] void fail_rule(const Config& config, const std::string& key, const std::string& what);

/// The key of `candidates` closest to `key` by edit distance, or "" if none is
/// close.
std::string closest_key(const std::string& key, const std::vector<std::string>& candidates);

} // namespace xl::config
