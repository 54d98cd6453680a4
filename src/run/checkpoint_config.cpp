// The resolved configs a checkpoint keeps, compared with the config a run goes on with
// (run/checkpoint.h: flatten_config, config_differences, resume_changes,
// require_matching_config).
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <map>
#include <set>

#include "xl/config/config.h"
#include "xl/run/checkpoint.h"
#include "xl/util/error.h"

namespace xl::run {

namespace {

void flatten(
    const YAML::Node& node,
    const std::string& prefix,
    std::map<std::string, std::string>& out) {
  if (node.IsMap()) {
    for (const auto& item : node) {
      const std::string key = item.first.as<std::string>();
      flatten(item.second, prefix.empty() ? key : prefix + "." + key, out);
    }
    return;
  }
  YAML::Emitter emitter;
  emitter << YAML::Flow << node;
  out[prefix] = emitter.c_str();
}

} // namespace

std::map<std::string, std::string> flatten_config(const std::string& yaml) {
  std::map<std::string, std::string> out;
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) { // a config.yaml edited by hand
    throw UserError(fmt::format(
        "not valid YAML at line {}, column {}: {}", e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  flatten(root, "", out);
  // A config written by an older xl lacks the keys added since; their defaults are the
  // behaviour that xl had.
  config::Config defaults;
  const auto type = out.find("model.type");
  if (type != out.end()) {
    defaults.model.type = type->second;
  }
  std::map<std::string, std::string> all;
  flatten(YAML::Load(config::dump(defaults)), "", all);
  for (auto& [key, value] : all) {
    out.emplace(key, std::move(value));
  }
  return out;
}

namespace {

struct Difference {
  std::string key;
  std::string saved;
  std::string current;
};

std::vector<Difference> differing_keys(
    const std::string& checkpoint_config,
    const std::string& current_config,
    const std::vector<std::string>& sections) {
  std::map<std::string, std::string> saved;
  std::map<std::string, std::string> current;
  try {
    saved = flatten_config(checkpoint_config);
  } catch (const YAML::Exception& e) {
    throw UserError(
        "the config saved in the checkpoint cannot be read (the file is corrupt): " +
        std::string(e.what()));
  }
  current = flatten_config(current_config);
  const auto selected = [&](const std::string& key) {
    for (const auto& s : sections) {
      if (key.rfind(s + ".", 0) == 0) {
        return true;
      }
    }
    return false;
  };
  std::vector<Difference> differences;
  std::map<std::string, std::string> all = saved;
  all.insert(current.begin(), current.end());
  for (const auto& [key, unused] : all) {
    if (!selected(key)) {
      continue;
    }
    const auto a = saved.find(key);
    const auto b = current.find(key);
    const std::string left = a == saved.end() ? "(absent)" : a->second;
    const std::string right = b == current.end() ? "(absent)" : b->second;
    if (left != right) {
      differences.push_back({key, left, right});
    }
  }
  return differences;
}

} // namespace

std::vector<std::string> config_differences(
    const std::string& checkpoint_config,
    const std::string& current_config,
    const std::vector<std::string>& sections) {
  std::vector<std::string> out;
  for (const auto& d : differing_keys(checkpoint_config, current_config, sections)) {
    out.push_back(fmt::format("{}: checkpoint {}, config {}", d.key, d.saved, d.current));
  }
  return out;
}

ResumeChanges resume_changes(
    const std::string& checkpoint_config,
    const std::string& current_config) {
  static const std::set<std::string> kRefused{
      "train.sampling",
      "train.batch_size",
      "train.batch_chunk",
      "train.tgt_len",
      "train.group_by_length",
      "train.optim",
      "train.seed",
      // the optimizer's parameter groups
      "train.freeze",
      "train.lr_layer_decay",
      "train.decay_vectors",
      // only a new run starts from them; a resumed one continues from its checkpoint
      "train.init_from",
      "train.init_exclude"};
  ResumeChanges changes;
  for (const auto& d :
       differing_keys(checkpoint_config, current_config, {"train", "eval", "run"})) {
    (kRefused.count(d.key) > 0 ? changes.refused : changes.applied)
        .push_back(fmt::format("{}: {} -> {}", d.key, d.saved, d.current));
  }
  return changes;
}

void require_matching_config(
    const std::filesystem::path& checkpoint,
    const std::string& checkpoint_config,
    const std::string& current_config,
    const std::vector<std::string>& sections,
    const std::set<std::string>& may_differ) {
  // Another family differs in nearly every key: its type says it in one line.
  for (const auto& d : differing_keys(checkpoint_config, current_config, {"model"})) {
    if (d.key == "model.type") {
      throw UserError(fmt::format(
          "checkpoint {} holds a model of type {}, but the config is of type {}: use the config it "
          "was trained with (its run's config.yaml)",
          checkpoint.string(),
          d.saved,
          d.current));
    }
  }
  std::vector<std::string> differences;
  bool moved = false;
  for (const auto& d : differing_keys(checkpoint_config, current_config, sections)) {
    if (may_differ.count(d.key) == 0) {
      differences.push_back(fmt::format("{}: checkpoint {}, config {}", d.key, d.saved, d.current));
      moved = moved || d.key == "data.dir";
    }
  }
  if (!differences.empty()) {
    throw UserError(fmt::format(
        "checkpoint {} was made with a different config:\n  {}{}",
        checkpoint.string(),
        fmt::join(differences, "\n  "),
        moved ? "\n  (a resume reads the data it was trained on: if that folder moved, a link "
                "from its old place to the new one resumes the run; xl-eval, xl-sample and "
                "xl-predict take data of the same vocabulary anywhere)"
              : ""));
  }
}

} // namespace xl::run
