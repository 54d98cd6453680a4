#include "xl/config/tree.h"

#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>

#include <algorithm>
#include <filesystem>
#include <string_view>
#include <utility>

#include "xl/util/error.h"
#include "xl/util/files.h"
#include "yaml_checks.h"

namespace xl::config {

namespace {

Source source_at(const std::string& file, const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  return Source{file, mark.is_null() ? 0 : mark.line + 1};
}

Tree from_yaml(const YAML::Node& node, const std::string& file, const Source* fixed) {
  Tree tree;
  tree.source = fixed != nullptr ? *fixed : source_at(file, node);
  if (!node.IsMap()) {
    tree.leaf = node;
    return tree;
  }
  tree.is_map = true;
  for (const auto& item : node) {
    Source key_source = fixed != nullptr ? *fixed : source_at(file, item.first);
    if (!item.first.IsScalar()) {
      // YAML allows any node as a key ("? [a, b]"); a config key is a name.
      throw ConfigError(
          key_source.str() + ": expected a key name, found a " +
          (item.first.IsMap()            ? "mapping"
               : item.first.IsSequence() ? "list"
                                         : "null") +
          " as a key");
    }
    const std::string key = item.first.as<std::string>();
    if (tree.find(key) != nullptr) {
      throw ConfigError(key_source.str() + ": duplicate key '" + key + "'");
    }
    Tree child = from_yaml(item.second, file, fixed);
    child.source = key_source;
    tree.children.emplace_back(key, std::move(child));
  }
  return tree;
}

// Overlays `top` onto `bottom`: mappings merge recursively, anything else
// replaces.
void merge_into(Tree& bottom, const Tree& top) {
  if (!bottom.is_map || !top.is_map) {
    bottom = top;
    return;
  }
  for (const auto& [key, value] : top.children) {
    Tree* existing = bottom.find(key);
    if (existing == nullptr) {
      bottom.children.emplace_back(key, value);
    } else {
      merge_into(*existing, value);
    }
  }
}

// A file already on the inheritance stack would load forever.
void check_no_cycle(const fs::path& canonical, const std::vector<fs::path>& stack) {
  if (std::find(stack.begin(), stack.end(), canonical) == stack.end()) {
    return;
  }
  std::string chain;
  for (const auto& p : stack) {
    chain += p.string() + " -> ";
  }
  throw ConfigError("config inheritance cycle: " + chain + canonical.string());
}

// The config file's text; a missing one of configs/txl/ or configs/char/, which were renamed as
// their families, says where it went.
std::string read_config_text(const fs::path& path) {
  try {
    return read_file(path, "config file");
  } catch (const UserError& e) {
    for (const auto& [old, now] :
         {std::pair{"configs/txl/", "configs/transformer_xl/"},
          std::pair{"configs/char/", "configs/char_transformer/"}}) {
      if (const auto at = path.generic_string().find(old); at != std::string::npos) {
        std::string moved = path.generic_string();
        throw ConfigError(fmt::format(
            "{} (configs/ names its folders as the model families now: {})",
            e.what(),
            moved.replace(at, std::string_view(old).size(), now)));
      }
    }
    throw ConfigError(e.what());
  }
}

// The file's top-level mapping (an empty file is refused: it names no config).
YAML::Node parse_config_file(const fs::path& path) {
  const std::string text = read_config_text(path);
  refuse_control_bytes(path, text);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) { // its message says "bad file"
    throw ConfigError(fmt::format(
        "{}:{}: invalid YAML: nested {} levels deep, past the parser's limit; a config's "
        "sections nest a few levels",
        path.string(),
        e.mark.line + 1,
        e.depth()));
  } catch (const YAML::ParserException& e) {
    if (const size_t tab = tab_indented_line(text);
        tab > 0 && tab <= static_cast<size_t>(e.mark.line) + 1) {
      throw ConfigError(fmt::format(
          "{}:{}: a tab indents this line; YAML indents with spaces only: replace it with "
          "spaces",
          path.string(),
          tab));
    }
    throw ConfigError(
        path.string() + ":" + std::to_string(e.mark.line + 1) + ": invalid YAML: " + e.msg);
  }
  std::vector<YAML::Node> ancestors;
  refuse_recursive_aliases(path.string(), true, root, ancestors);
  refuse_unread_yaml(path.string(), true, root);
  // YAML::Load reads the first document only: a second one (after `---` or `...`) would be
  // ignored.
  if (const size_t line = second_document_line(text); line > 0) {
    throw ConfigError(fmt::format(
        "{}:{}: a second YAML document (after --- or ...); a config is one document: merge the "
        "two, "
        "or put the second in its own file",
        path.string(),
        line));
  }
  if (root.IsNull()) {
    throw ConfigError(fmt::format(
        "{} holds no settings (it is empty, or comments only); name the config you meant "
        "(configs/), or write its settings",
        path.string()));
  }
  if (!root.IsMap()) {
    throw ConfigError(
        source_at(path.string(), root).str() +
        ": expected a mapping of sections (model, data, train, eval, run) at the "
        "top level");
  }
  return root;
}

// The files `base:` names (one or a list), relative to the file that names them.
std::vector<fs::path> base_files(const fs::path& path, const YAML::Node& base) {
  const Source base_source = source_at(path.string(), base);
  const std::string expected = ": base: expected a file name or a list of file names";
  std::vector<std::string> names;
  if (base.IsScalar()) {
    names.push_back(base.as<std::string>());
  } else if (base.IsSequence()) {
    for (const auto& b : base) {
      if (!b.IsScalar()) {
        throw ConfigError(base_source.str() + expected);
      }
      names.push_back(b.as<std::string>());
    }
  } else {
    throw ConfigError(base_source.str() + expected);
  }
  std::vector<fs::path> files;
  for (const auto& name : names) {
    if (name.empty()) {
      throw ConfigError(
          base_source.str() +
          ": base: an empty file name; name the config to inherit from, or "
          "remove the key");
    }
    const fs::path base_path = path.parent_path() / name;
    try {
      check_input(base_path, base_source.str() + ": base file");
    } catch (const UserError& e) {
      throw ConfigError(e.what());
    }
    files.push_back(base_path);
  }
  return files;
}

Tree load_chain(const fs::path& path, std::vector<fs::path>& stack) {
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(path, ec);
  check_no_cycle(canonical, stack);
  YAML::Node root = parse_config_file(path);
  stack.push_back(canonical);
  Tree merged;
  merged.is_map = true;
  merged.source = Source{path.string(), 1};
  if (const YAML::Node base = root["base"]) {
    for (const auto& base_path : base_files(path, base)) {
      merge_into(merged, load_chain(base_path, stack));
    }
    root.remove("base");
  }
  merge_into(merged, from_yaml(root, path.string(), nullptr));
  stack.pop_back();
  return merged;
}

} // namespace

std::string Source::str() const {
  return line > 0 ? file + ":" + std::to_string(line) : file;
}

Tree* Tree::find(const std::string& key) {
  for (auto& [k, v] : children) {
    if (k == key) {
      return &v;
    }
  }
  return nullptr;
}

const Tree* Tree::find(const std::string& key) const {
  return const_cast<Tree*>(this)->find(key);
}

Tree& Tree::child(const std::string& key, const Source& src) {
  if (Tree* existing = find(key)) {
    return *existing;
  }
  Tree fresh;
  fresh.is_map = true;
  fresh.source = src;
  children.emplace_back(key, std::move(fresh));
  return children.back().second;
}

Tree tree_from_yaml(const YAML::Node& node, const Source& source) {
  return from_yaml(node, source.file, &source);
}

Tree load_tree(const std::string& path) {
  std::vector<fs::path> stack;
  return load_chain(path, stack);
}

namespace {

// A shell expands ~ only at the start of a word: in --set run.dir=~/x it reaches xl as is, a
// folder named "~" (or, alone, YAML's null: the default folder).
void refuse_unexpanded_home(const Source& source, const std::string& key, const std::string& text) {
  const auto ends_with = [&](const char* tail) {
    const std::string_view end(tail);
    return key.size() > end.size() && key.compare(key.size() - end.size(), end.size(), end) == 0;
  };
  if (text.rfind("~/", 0) == 0 || (text == "~" && (ends_with(".dir") || ends_with("from")))) {
    throw ConfigError(
        source.str() +
        ": the shell did not expand ~ here (it does at the start of a word only), and xl does "
        "not: write the folder out ($HOME/...), or null for the default");
  }
}

} // namespace

void apply_override(Tree& tree, const std::string& assignment) {
  const auto eq = assignment.find('=');
  const Source source{"--set " + assignment, 0};
  if (eq == std::string::npos || eq == 0) {
    throw ConfigError(source.str() + ": expected KEY.PATH=VALUE, e.g. --set model.d_model=512");
  }
  const std::string path = assignment.substr(0, eq);
  refuse_unexpanded_home(source, path, assignment.substr(eq + 1));
  YAML::Node value;
  try {
    value = YAML::Load(assignment.substr(eq + 1));
  } catch (const YAML::ParserException& e) {
    throw ConfigError(source.str() + ": value is not valid YAML: " + e.msg);
  }
  std::vector<YAML::Node> ancestors;
  refuse_recursive_aliases(source.str(), false, value, ancestors);
  refuse_unread_yaml(source.str(), false, value);
  std::vector<std::string> keys;
  size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    keys.push_back(path.substr(start, dot - start));
    if (dot == std::string::npos) {
      break;
    }
    start = dot + 1;
  }
  Tree* node = &tree;
  std::string walked;
  for (size_t i = 0; i + 1 < keys.size(); ++i) {
    if (keys[i].empty()) {
      throw ConfigError(source.str() + ": empty key in path '" + path + "'");
    }
    node = &node->child(keys[i], source);
    walked += (walked.empty() ? "" : ".") + keys[i];
    if (node->is_map) {
      continue;
    }
    if (node->leaf.IsNull()) {
      // A section the file left empty (only comments: YAML null) would otherwise become a new
      // mapping holding this key alone, and the base's section would be lost.
      throw ConfigError(
          node->source.str() + ": " + walked + ": expected a mapping of keys, found null, inside " +
          "which " + source.str() + " sets a key (a section holding only comments is null: " +
          "delete its line to inherit the base's, or give it keys)");
    }
    // Through a value: the override replaces it, and the schema names the override.
    *node = Tree{};
    node->is_map = true;
    node->source = source;
  }
  if (keys.back().empty()) {
    throw ConfigError(source.str() + ": empty key in path '" + path + "'");
  }
  Tree top;
  top.is_map = true;
  top.source = source; // it replaces a scalar when the path runs through one
  top.children.emplace_back(keys.back(), tree_from_yaml(value, source));
  merge_into(*node, top);
}

} // namespace xl::config
