#include "xl/config/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <regex>

#include "xl/util/error.h"

namespace xl::config {

namespace {

// ============================================================================
// Scalars: strict conversion from YAML with readable errors.
// ============================================================================

std::string show(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) {
    return "null";
  }
  if (node.IsScalar()) {
    const std::string text = node.Scalar();
    return node.Tag() == "!" ? "the string \"" + text + "\"" : "'" + text + "'";
  }
  if (node.IsSequence()) {
    return "a list";
  }
  return "a mapping";
}

// Plain (unquoted) scalars only: a quoted "3" is a string, not a number.
bool plain_scalar(const YAML::Node& node) {
  return node.IsScalar() && node.Tag() != "!";
}

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
  static const std::regex kNumber(
      "[-+]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?");
  if (!plain_scalar(node) || !std::regex_match(node.Scalar(), kNumber)) {
    return false;
  }
  out = std::stod(node.Scalar());
  return std::isfinite(out);
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

template <class T>
bool within(const T& value, const Limits& limits) {
  if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>) {
    return limits.admits(static_cast<double>(value));
  } else if constexpr (std::is_same_v<T, std::string>) {
    return limits.admits(value);
  } else {
    return true;
  }
}

template <class T>
std::string format_value(const T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value ? "true" : "false";
  } else if constexpr (std::is_same_v<T, double>) {
    // Shortest round-trip digits, always with a '.' in the mantissa ("1.0e-05",
    // not "1e-05"), which YAML 1.1 readers such as PyYAML need to see a float.
    std::string s = fmt::format("{}", value);
    const auto exponent = s.find_first_of("eE");
    const auto mantissa_end =
        exponent == std::string::npos ? s.size() : exponent;
    if (s.find('.') == std::string::npos &&
        s.find_first_of("ni") == std::string::npos) {
      s.insert(mantissa_end, ".0");
    }
    return s;
  } else if constexpr (std::is_same_v<T, std::string>) {
    return value;
  } else {
    return std::to_string(value);
  }
}

template <class T>
std::string expectation(const Limits& limits) {
  std::string text = std::string("expected ") +
      (std::is_same_v<T, int64_t> ? "an " : "a ") + type_name<T>();
  const std::string range = limits.describe();
  return range.empty() ? text : text + " " + range;
}

// ============================================================================
// Reader: walks the schema, converting the tree and rejecting unknown keys.
// ============================================================================

class Reader {
 public:
  Reader(const Tree& section, std::string prefix, Config& config)
      : section_(section), prefix_(std::move(prefix)), config_(config) {}

  template <class T>
  void operator()(
      const char* key,
      T& member,
      const char* /*help*/,
      const Limits& limits) {
    known_.emplace_back(key);
    const Tree* node = section_.find(key);
    if (node == nullptr) {
      return;
    }
    const std::string path = prefix_ + "." + key;
    config_.sources[path] = node->source;
    read(*node, path, member, limits);
  }

  /// Fails on any key of the section that the schema did not ask for.
  void reject_unknown() const {
    for (const auto& [key, node] : section_.children) {
      if (std::find(known_.begin(), known_.end(), key) != known_.end()) {
        continue;
      }
      std::string message =
          node.source.str() + ": unknown key '" + prefix_ + "." + key + "'";
      const std::string guess = closest_key(key, known_);
      if (!guess.empty()) {
        message += " (did you mean '" + prefix_ + "." + guess + "'?)";
      } else {
        message += "; valid keys in '" + prefix_ +
            "': " + fmt::format("{}", fmt::join(known_, ", "));
      }
      throw ConfigError(message);
    }
  }

 private:
  [[noreturn]] static void fail(
      const Tree& node,
      const std::string& path,
      const std::string& expected,
      const std::string& found) {
    throw ConfigError(
        node.source.str() + ": " + path + ": " + expected + ", found " + found);
  }

  template <class T>
  void read(
      const Tree& node,
      const std::string& path,
      T& member,
      const Limits& limits) {
    if (node.is_map) {
      fail(node, path, expectation<T>(limits), "a mapping");
    }
    T value{};
    if (!parse_scalar(node.leaf, value)) {
      fail(node, path, expectation<T>(limits), show(node.leaf));
    }
    if (!within(value, limits)) {
      fail(node, path, expectation<T>(limits), format_value(value));
    }
    member = value;
  }

  template <class T>
  void read(
      const Tree& node,
      const std::string& path,
      std::optional<T>& member,
      const Limits& limits) {
    if (!node.is_map && node.leaf.IsNull()) {
      member.reset();
      return;
    }
    T value{};
    read(node, path, value, limits);
    member = value;
  }

  template <class T>
  void read(
      const Tree& node,
      const std::string& path,
      std::vector<T>& member,
      const Limits& limits) {
    const std::string expected = "expected a " + type_name<std::vector<T>>() +
        (limits.describe().empty() ? "" : " " + limits.describe());
    if (node.is_map || !node.leaf.IsSequence()) {
      fail(node, path, expected, node.is_map ? "a mapping" : show(node.leaf));
    }
    std::vector<T> values;
    for (size_t i = 0; i < node.leaf.size(); ++i) {
      T value{};
      const YAML::Node item = node.leaf[i];
      const std::string item_path = path + "[" + std::to_string(i) + "]";
      if (!parse_scalar(item, value)) {
        fail(node, item_path, expectation<T>(limits), show(item));
      }
      if (!within(value, limits)) {
        fail(node, item_path, expectation<T>(limits), format_value(value));
      }
      values.push_back(value);
    }
    member = std::move(values);
  }

  const Tree& section_;
  std::string prefix_;
  Config& config_;
  std::vector<std::string> known_;
};

// ============================================================================
// Writer: emits the resolved config in schema order.
// ============================================================================

class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}

  template <class T>
  void operator()(
      const char* key,
      const T& member,
      const char* /*help*/,
      const Limits&) {
    out_ += "  " + std::string(key) + ": " + render(member) + "\n";
  }

 private:
  static std::string quote(const std::string& s) {
    YAML::Emitter e;
    e << YAML::DoubleQuoted << s;
    return e.c_str();
  }
  template <class T>
  static std::string render(const T& v) {
    if constexpr (std::is_same_v<T, std::string>) {
      return quote(v);
    } else {
      return format_value(v);
    }
  }
  template <class T>
  static std::string render(const std::optional<T>& v) {
    return v ? render(*v) : "null";
  }
  template <class T>
  static std::string render(const std::vector<T>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) {
      s += (i ? ", " : "") + format_value(static_cast<T>(v[i]));
    }
    return s + "]";
  }

  std::string& out_;
};

// ============================================================================
// Schema reference: one Markdown row per key.
// ============================================================================

class Describer {
 public:
  Describer(std::string& out, std::string prefix)
      : out_(out), prefix_(std::move(prefix)) {}

  template <class T>
  void operator()(
      const char* key,
      const T& member,
      const char* help,
      const Limits& limits) {
    std::string dumped;
    Writer writer(dumped);
    writer(key, member, help, limits);
    const std::string value = dumped.substr(dumped.find(": ") + 2);
    std::string type = type_name<T>();
    const std::string range = limits.describe();
    if (!range.empty()) {
      type += ", " + range;
    }
    out_ += fmt::format(
        "| `{}.{}` | {} | `{}` | {} |\n",
        prefix_,
        key,
        type,
        value.substr(0, value.size() - 1),
        help);
  }

 private:
  std::string& out_;
  std::string prefix_;
};

std::vector<std::string> section_names() {
  std::vector<std::string> names;
  Config config;
  Config::sections(
      config, [&](const char* name, auto&) { names.emplace_back(name); });
  return names;
}

[[noreturn]] void fail_rule(
    const Config& c,
    const std::string& key,
    const std::string& what) {
  throw ConfigError(c.where(key) + ": " + key + ": " + what);
}

} // namespace

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
  return choices.empty() ||
      std::find(choices.begin(), choices.end(), value) != choices.end();
}

// ============================================================================
// Config
// ============================================================================

std::string Config::where(const std::string& key) const {
  const auto it = sources.find(key);
  return it == sources.end() ? "default" : it->second.str();
}

std::string closest_key(
    const std::string& key,
    const std::vector<std::string>& candidates) {
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
        row[j] = std::min(
            {row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
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
      std::string message =
          node.source.str() + ": unknown section '" + key + "'";
      const std::string guess = closest_key(key, names);
      message += guess.empty()
          ? fmt::format(" (sections: {})", fmt::join(names, ", "))
          : " (did you mean '" + guess + "'?)";
      throw ConfigError(message);
    }
    if (!node.is_map) {
      throw ConfigError(
          node.source.str() + ": " + key +
          ": expected a mapping of keys, found " + show(node.leaf));
    }
  }
  Config::sections(config, [&](const char* name, auto& section) {
    using Section = std::decay_t<decltype(section)>;
    Tree empty;
    empty.is_map = true;
    const Tree* node = tree.find(name);
    Reader reader(node != nullptr ? *node : empty, name, config);
    Section::fields(section, reader);
    reader.reject_unknown();
  });
  if (config.run.name.empty()) {
    config.run.name = std::filesystem::path(origin).stem().string();
  }
  validate(config);
  return config;
}

Config load(
    const std::string& path,
    const std::vector<std::string>& overrides) {
  Tree tree = load_tree(path);
  for (const auto& assignment : overrides) {
    apply_override(tree, assignment);
  }
  return from_tree(tree, path);
}

void validate(const Config& c) {
  const ModelConfig& m = c.model;
  if (c.data.dir.empty()) {
    fail_rule(
        c,
        "data.dir",
        "required: the folder that xl-prep wrote (e.g. data/prepared/wt2)");
  }
  for (size_t i = 0; i < m.cutoffs.size(); ++i) {
    if (i > 0 && m.cutoffs[i] <= m.cutoffs[i - 1]) {
      fail_rule(
          c,
          "model.cutoffs",
          fmt::format(
              "expected strictly increasing values, found {} after {}",
              m.cutoffs[i],
              m.cutoffs[i - 1]));
    }
  }
  if (!m.tie_projs.empty() && m.tie_projs.size() != m.cutoffs.size() + 1) {
    fail_rule(
        c,
        "model.tie_projs",
        fmt::format(
            "expected {} entries (one per adaptive cluster: len(model.cutoffs) + "
            "1), found {}",
            m.cutoffs.size() + 1,
            m.tie_projs.size()));
  }
  if (m.div_val > 1 && m.cutoffs.empty()) {
    fail_rule(
        c,
        "model.div_val",
        fmt::format(
            "div_val {} needs adaptive clusters, but model.cutoffs is empty",
            m.div_val));
  }
  const int64_t d_embed = m.d_embed.value_or(m.d_model);
  int64_t smallest = d_embed;
  for (size_t i = 0; i < m.cutoffs.size(); ++i) {
    smallest /= m.div_val;
  }
  if (smallest < 1) {
    fail_rule(
        c,
        "model.div_val",
        fmt::format(
            "the last cluster's embedding size d_embed / div_val^{} = {} / {}^{} "
            "rounds to 0",
            m.cutoffs.size(),
            d_embed,
            m.div_val,
            m.cutoffs.size()));
  }
  if (m.d_model % 2 != 0) { // both attention types use sinusoid positions
    fail_rule(
        c,
        "model.d_model",
        fmt::format(
            "the sinusoidal position embedding needs an even d_model, found {}",
            m.d_model));
  }
  const TrainConfig& t = c.train;
  if (t.batch_size % t.batch_chunk != 0) {
    fail_rule(
        c,
        "train.batch_chunk",
        fmt::format(
            "must divide train.batch_size = {}, found {}",
            t.batch_size,
            t.batch_chunk));
  }
  if (t.warmup_step > t.max_step) {
    fail_rule(
        c,
        "train.warmup_step",
        fmt::format(
            "must not exceed train.max_step = {}, found {}",
            t.max_step,
            t.warmup_step));
  }
  if (t.scheduler == "cosine" && t.eta_min > t.lr) {
    fail_rule(
        c,
        "train.eta_min",
        fmt::format(
            "must not exceed train.lr = {}, found {}", t.lr, t.eta_min));
  }
  if (t.bf16 && t.device == "cpu") {
    fail_rule(
        c,
        "train.bf16",
        "bf16 autocast needs train.device cuda or auto, found cpu");
  }
  const EvalConfig& e = c.eval;
  const int64_t eval_tgt_len = e.tgt_len.value_or(t.tgt_len);
  if (!e.mem_len && m.mem_len + t.tgt_len - eval_tgt_len < 0) {
    fail_rule(
        c,
        "eval.tgt_len",
        fmt::format(
            "with eval.mem_len null the evaluation memory is model.mem_len + "
            "train.tgt_len - eval.tgt_len = {} + {} - {} < 0; set eval.mem_len",
            m.mem_len,
            t.tgt_len,
            eval_tgt_len));
  }
}

std::string dump(const Config& config) {
  std::string out;
  Config::sections(config, [&](const char* name, const auto& section) {
    using Section = std::decay_t<decltype(section)>;
    out += std::string(name) + ":\n";
    Writer writer(out);
    Section::fields(section, writer);
  });
  return out;
}

std::string schema_reference() {
  std::string out;
  const Config defaults;
  Config::sections(defaults, [&](const char* name, const auto& section) {
    using Section = std::decay_t<decltype(section)>;
    out += fmt::format(
        "\n### `{}`\n\n| key | type | default | meaning |\n|---|---|---|---|\n",
        name);
    Describer describer(out, name);
    Section::fields(section, describer);
  });
  return out;
}

} // namespace xl::config
