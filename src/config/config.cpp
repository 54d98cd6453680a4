#include "xl/config/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <mutex>

#include "xl/config/visitors.h"
#include "xl/util/error.h"
#include "xl/util/files.h"

namespace xl::config {

namespace {

// Who reads labelled examples, for messages: "model.type xlnet with model.xlnet.n_class > 0".
std::string labelled_readers() {
  std::vector<std::string> readers;
  for (const FamilySchema* schema : family_schemas()) {
    if (schema->labelled != nullptr) {
      readers.push_back(fmt::format("model.type {} with {}", schema->name, schema->labelled_when));
    }
  }
  return readers.empty() ? "no model family" : fmt::format("{}", fmt::join(readers, " or "));
}

std::vector<std::string> section_names() {
  std::vector<std::string> names;
  Config config;
  Config::sections(config, [&](const char* name, auto&) { names.emplace_back(name); });
  return names;
}

void validate_data(const Config& c) {
  if (c.data.dir.empty()) {
    fail_rule(c, "data.dir", "required: the folder that xl-prep wrote (e.g. data/prepared/wt2)");
  }
  const FamilySchema* family = family_schema(c.model.type.name);
  const bool labelled = family != nullptr && family->labelled != nullptr && family->labelled(c);
  if (c.data.train_examples && !labelled) {
    fail_rule(
        c,
        "data.train_examples",
        fmt::format("limits labelled examples, which only {} reads: set null", labelled_readers()));
  }
  if (c.train.group_by_length && !labelled) {
    fail_rule(
        c,
        "train.group_by_length",
        fmt::format(
            "groups labelled examples, which only {} reads: set false", labelled_readers()));
  }
}

void validate_model(const Config& c) {
  const FamilySchema* family = family_schema(c.model.type.name);
  if (family != nullptr && !family->carries_memory && c.eval.mode != EvalMode::kVanilla) {
    fail_rule(
        c,
        "eval.mode",
        fmt::format(
            "model.type {} has no memory to carry between segments: set vanilla (eval.stride S "
            "scores the last S positions of each window, reported as @stride=S)",
            family->name));
  }
  if (family != nullptr && family->validate != nullptr) {
    family->validate(c);
  }
}

void validate_train(const Config& c) {
  const TrainConfig& t = c.train;
  if (t.batch_size % t.batch_chunk != 0) {
    fail_rule(
        c,
        "train.batch_chunk",
        fmt::format("must divide train.batch_size = {}, found {}", t.batch_size, t.batch_chunk));
  }
  if (t.warmup_step > t.max_step) {
    fail_rule(
        c,
        "train.warmup_step",
        fmt::format(
            "must not exceed train.max_step = {}, found {}: a run this short needs a "
            "shorter warmup too, e.g. --set train.warmup_step={}",
            t.max_step,
            t.warmup_step,
            t.max_step / 10));
  }
  if ((t.scheduler == Scheduler::kCosine || t.scheduler == Scheduler::kPoly) && t.eta_min > t.lr) {
    fail_rule(
        c,
        "train.eta_min",
        fmt::format("must not exceed train.lr = {}, found {}", t.lr, t.eta_min));
  }
  if (!t.init_exclude.empty() && !t.init_from) {
    fail_rule(
        c,
        "train.init_exclude",
        "names parameters not to load from train.init_from, which is null: set "
        "train.init_from or []");
  }
}

void validate_eval(const Config& c) {
  const EvalConfig& e = c.eval;
  if (e.mode == EvalMode::kVanilla && e.stride > c.train.tgt_len) {
    fail_rule(
        c,
        "eval.stride",
        fmt::format(
            "the vanilla windows are train.tgt_len = {} tokens long and score at most all of "
            "them, found stride {}",
            c.train.tgt_len,
            e.stride));
  }
}

void validate_run(const Config& c) {
  if (const auto problem = plain_name_problem(c.run.name); !problem.empty()) {
    fail_rule(
        c,
        "run.name",
        "expected a plain name (the run's folder in runs/; run.dir names any folder), " + problem);
  }
  if (c.run.dir && c.run.dir->empty()) {
    fail_rule(c, "run.dir", "expected a folder, found an empty path (null: runs/<run.name>)");
  }
}

// The registered families in order (a deque: references stay valid as it grows). Read and
// extended under one lock: a test may register a family while another thread loads a config.
std::deque<FamilySchema>& schemas() {
  static std::deque<FamilySchema> all;
  return all;
}

std::mutex& schemas_lock() {
  static std::mutex lock;
  return lock;
}

} // namespace

void fail_rule(const Config& config, const std::string& key, const std::string& what) {
  throw ConfigError(config.where(key) + ": " + key + ": " + what);
}

void register_family_schema(FamilySchema family) {
  const std::lock_guard<std::mutex> guard(schemas_lock());
  for (const FamilySchema& known : schemas()) {
    if (known.name == family.name) {
      throw UserError(fmt::format("model.type {} is taken", family.name));
    }
  }
  schemas().push_back(std::move(family));
}

std::vector<std::string> model_types() {
  std::vector<std::string> names;
  for (const FamilySchema* schema : family_schemas()) {
    names.push_back(schema->name);
  }
  return names;
}

const FamilySchema* family_schema(const std::string& name) {
  const std::lock_guard<std::mutex> guard(schemas_lock());
  for (const FamilySchema& schema : schemas()) {
    if (schema.name == name) {
      return &schema;
    }
  }
  return nullptr;
}

std::vector<const FamilySchema*> family_schemas() {
  const std::lock_guard<std::mutex> guard(schemas_lock());
  std::vector<const FamilySchema*> all;
  for (const FamilySchema& schema : schemas()) {
    all.push_back(&schema);
  }
  return all;
}

// ============================================================================
// Limits
// ============================================================================

std::string Limits::describe() const {
  if (!choices.empty()) {
    return fmt::format("(one of: {})", fmt::join(choices, ", "));
  }
  const auto num = [](double x) { return fmt::format("{}", x); };
  if (min && max) {
    return fmt::format(
        "in {}{}, {}{}",
        min_exclusive ? "(" : "[",
        num(*min),
        num(*max),
        max_exclusive ? ")" : "]");
  }
  if (min) {
    return fmt::format("{} {}", min_exclusive ? ">" : ">=", num(*min));
  }
  if (max) {
    return fmt::format("{} {}", max_exclusive ? "<" : "<=", num(*max));
  }
  return "";
}

bool Limits::admits(double value) const {
  if (min && (min_exclusive ? value <= *min : value < *min)) {
    return false;
  }
  if (max && (max_exclusive ? value >= *max : value > *max)) {
    return false;
  }
  return true;
}

bool Limits::admits(const std::string& value) const {
  return choices.empty() || std::find(choices.begin(), choices.end(), value) != choices.end();
}

// ============================================================================
// Config
// ============================================================================

std::string Config::where(const std::string& key) const {
  const auto it = sources.find(key);
  if (it != sources.end()) {
    return it->second.str();
  }
  return origin.empty() ? "default" : origin;
}

std::string closest_key(const std::string& key, const std::vector<std::string>& candidates) {
  const auto distance = [](const std::string& a, const std::string& b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) {
      row[j] = j;
    }
    for (size_t i = 1; i <= a.size(); ++i) {
      size_t diagonal = row[0];
      row[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        const size_t above = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
        diagonal = above;
      }
    }
    return row[b.size()];
  };
  std::string best;
  size_t best_distance = std::max<size_t>(2, key.size() / 3) + 1;
  for (const auto& candidate : candidates) {
    const size_t d = distance(key, candidate);
    if (d < best_distance) {
      best = candidate;
      best_distance = d;
    }
  }
  return best;
}

Config from_tree(const Tree& tree, const std::string& origin) {
  Config config;
  const std::vector<std::string> names = section_names();
  for (const auto& [key, node] : tree.children) {
    if (std::find(names.begin(), names.end(), key) == names.end()) {
      std::string message = node.source.str() + ": unknown section '" + key + "'";
      const std::string guess = closest_key(key, names);
      message += guess.empty() ? fmt::format(" (sections: {})", fmt::join(names, ", "))
                               : " (did you mean '" + guess + "'?)";
      throw ConfigError(message);
    }
    if (!node.is_map) {
      throw ConfigError(
          node.source.str() + ": " + key + ": expected a mapping of keys, found " +
          show(node.leaf));
    }
  }
  Config::sections(config, [&](const char* name, auto& section) {
    using Section = std::decay_t<decltype(section)>;
    Tree empty;
    empty.is_map = true;
    const Tree* node = tree.find(name);
    Reader reader(node != nullptr ? *node : empty, name, config.sources);
    Section::fields(section, reader);
    reader.reject_unknown();
  });
  if (config.run.name.empty()) {
    config.run.name = std::filesystem::path(origin).stem().string();
  }
  config.origin = origin;
  validate(config);
  return config;
}

Config load(const std::string& path, const std::vector<std::string>& overrides) {
  Tree tree = load_tree(path);
  for (const auto& assignment : overrides) {
    apply_override(tree, assignment);
  }
  return from_tree(tree, path);
}

void validate(const Config& c) {
  validate_data(c);
  validate_model(c);
  validate_train(c);
  validate_eval(c);
  validate_run(c);
}

std::string dump(const Config& config) {
  std::string out;
  Config::sections(config, [&](const char* name, const auto& section) {
    using Section = std::decay_t<decltype(section)>;
    out += std::string(name) + ":\n";
    Writer writer(out, "  ");
    Section::fields(section, writer);
  });
  return out;
}

std::string schema_reference() {
  std::string out;
  const Config defaults;
  Config::sections(defaults, [&](const char* name, const auto& section) {
    using Section = std::decay_t<decltype(section)>;
    out +=
        fmt::format("\n### `{}`\n\n| key | type | default | meaning |\n|---|---|---|---|\n", name);
    Describer describer(out, name);
    Section::fields(section, describer);
  });
  return out;
}

} // namespace xl::config
