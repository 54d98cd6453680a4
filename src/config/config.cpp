#include "xl/config/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <mutex>

#include "xl/config/visitors.h"
#include "xl/util/error.h"
#include "xl/util/files.h"

namespace xl::config {

namespace {

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

void validate_data(const Config& c) {
  if (c.data.dir.empty()) {
    fail_rule(
        c,
        "data.dir",
        "required: the folder that xl-prep wrote (e.g. data/prepared/wt2)");
  }
  const bool labelled = c.model.type == "xlnet" && c.model.xlnet.n_class > 0;
  if (c.data.train_examples && !labelled) {
    fail_rule(
        c,
        "data.train_examples",
        "limits labelled examples, which only XLNet classification reads "
        "(model.xlnet.n_class > 0): set null");
  }
  if (c.train.group_by_length && !labelled) {
    fail_rule(
        c,
        "train.group_by_length",
        "groups labelled examples, which only XLNet classification reads "
        "(model.xlnet.n_class > 0): set false");
  }
}

void validate_adaptive(const Config& c) {
  const ModelConfig& m = c.model;
  const TransformerXLConfig& x = m.transformer_xl;
  for (size_t i = 1; i < x.cutoffs.size(); ++i) {
    if (x.cutoffs[i] <= x.cutoffs[i - 1]) {
      fail_rule(
          c,
          "model.transformer_xl.cutoffs",
          fmt::format(
              "expected strictly increasing values, found {} after {}",
              x.cutoffs[i],
              x.cutoffs[i - 1]));
    }
  }
  if (!x.tie_projs.empty() && x.tie_projs.size() != x.cutoffs.size() + 1) {
    fail_rule(
        c,
        "model.transformer_xl.tie_projs",
        fmt::format(
            "expected {} entries (one per adaptive cluster: len(cutoffs) + 1), found {}",
            x.cutoffs.size() + 1,
            x.tie_projs.size()));
  }
  if (x.div_val > 1 && x.cutoffs.empty()) {
    fail_rule(
        c,
        "model.transformer_xl.div_val",
        fmt::format(
            "div_val {} needs adaptive clusters, but model.transformer_xl.cutoffs is empty",
            x.div_val));
  }
  const int64_t d_embed = x.d_embed.value_or(m.d_model);
  int64_t smallest = d_embed;
  for (size_t i = 0; i < x.cutoffs.size(); ++i) {
    smallest /= x.div_val;
  }
  if (smallest < 1) {
    fail_rule(
        c,
        "model.transformer_xl.div_val",
        fmt::format(
            "the last cluster's embedding size d_embed / div_val^{} = {} / {}^{} rounds to 0",
            x.cutoffs.size(),
            d_embed,
            x.div_val,
            x.cutoffs.size()));
  }
}

// Every query must keep a key: same_length hides all of them when there is no memory.
void validate_memory_spans(const Config& c) {
  const TransformerXLConfig& x = c.model.transformer_xl;
  const EvalConfig& e = c.eval;
  if (x.same_length && x.mem_len == 0) {
    fail_rule(
        c,
        "model.transformer_xl.same_length",
        "needs model.transformer_xl.mem_len > 0 (without memory no query would see any key); "
        "set same_length to false");
  }
  const int64_t eval_tgt_len = e.tgt_len.value_or(c.train.tgt_len);
  const int64_t kept_span = x.mem_len + c.train.tgt_len - eval_tgt_len;
  if (!e.mem_len && kept_span < 0) {
    fail_rule(
        c,
        "eval.tgt_len",
        fmt::format(
            "with eval.mem_len null the evaluation memory is model.transformer_xl.mem_len + "
            "train.tgt_len - eval.tgt_len = {} + {} - {} < 0; set eval.mem_len",
            x.mem_len,
            c.train.tgt_len,
            eval_tgt_len));
  }
  if (x.same_length && kept_span == 0) {
    fail_rule(
        c,
        "eval.tgt_len",
        fmt::format(
            "validation during training keeps the training attention span, "
            "model.transformer_xl.mem_len + train.tgt_len - eval.tgt_len = 0, and same_length "
            "with no memory would hide every key; lower eval.tgt_len below {}",
            eval_tgt_len));
  }
  const bool same_length = e.same_length.value_or(x.same_length);
  if (e.mode == EvalMode::kMemory && same_length &&
      e.mem_len.value_or(kept_span) == 0) {
    fail_rule(
        c,
        e.same_length ? "eval.same_length" : "eval.mem_len",
        "the evaluation memory is 0 and same_length is on, so no query would see any key; "
        "set eval.same_length=false or give eval.mem_len > 0");
  }
}

// Learned positions cover [memory | segment] up to n_ctx keys, in training and evaluation.
void validate_learned_positions(const Config& c) {
  const TransformerXLConfig& x = c.model.transformer_xl;
  if (x.attn_type != AttnType::kLearned) {
    if (x.n_ctx) {
      fail_rule(
          c,
          "model.transformer_xl.n_ctx",
          "sizes the learned position tables, which only attn_type learned has; set null");
    }
    return;
  }
  const int64_t span = x.mem_len + c.train.tgt_len;
  const int64_t n_ctx = x.n_ctx.value_or(span);
  if (span > n_ctx) {
    fail_rule(
        c,
        "model.transformer_xl.n_ctx",
        fmt::format(
            "the position tables have {} rows, but training reads mem_len + train.tgt_len = "
            "{} + {} = {} positions",
            n_ctx,
            x.mem_len,
            c.train.tgt_len,
            span));
  }
  const EvalConfig& e = c.eval;
  const int64_t eval_tgt_len = e.tgt_len.value_or(c.train.tgt_len);
  const int64_t eval_span =
      e.mem_len.value_or(span - eval_tgt_len) + eval_tgt_len;
  if (e.mode == EvalMode::kMemory && eval_span > n_ctx) {
    fail_rule(
        c,
        "eval.mem_len",
        fmt::format(
            "the evaluation reads eval.mem_len + eval.tgt_len = {} positions, more than the {} "
            "rows of the learned position tables (model.transformer_xl.n_ctx)",
            eval_span,
            n_ctx));
  }
}

void validate_transformer_xl(const Config& c) {
  validate_adaptive(c);
  validate_learned_positions(c);
  if (c.model.d_model % 2 != 0) { // both attention types use sinusoid positions
    fail_rule(
        c,
        "model.d_model",
        fmt::format(
            "the sinusoidal position embedding needs an even d_model, found {}",
            c.model.d_model));
  }
  validate_memory_spans(c);
}

void validate_xlnet(const Config& c) {
  const ModelConfig& m = c.model;
  if (m.d_model % 2 != 0) {
    fail_rule(
        c,
        "model.d_model",
        fmt::format(
            "the sinusoidal position embedding needs an even d_model, found {}",
            m.d_model));
  }
  if (m.pre_lnorm) {
    fail_rule(
        c,
        "model.pre_lnorm",
        "XLNet normalises after each sub-layer: set false");
  }
  if (c.eval.tgt_len && *c.eval.tgt_len != c.train.tgt_len) {
    fail_rule(
        c,
        "eval.tgt_len",
        fmt::format(
            "XLNet evaluates records (or reviews) of train.tgt_len = {} positions, the length "
            "it was trained on: set null, found {}",
            c.train.tgt_len,
            *c.eval.tgt_len));
  }
  if (m.xlnet.n_class == 1) {
    fail_rule(
        c,
        "model.xlnet.n_class",
        "a classifier needs 2 classes or more (0: pretraining, no classification head), "
        "found 1");
  }
  if (c.eval.mode != EvalMode::kMemory) {
    fail_rule(
        c,
        "eval.mode",
        "XLNet is evaluated on its own batches (permutation LM or classification): set memory");
  }
}

void validate_char_transformer(const Config& c) {
  const CharTransformerConfig& x = c.model.char_transformer;
  if (c.train.tgt_len > x.n_ctx) {
    fail_rule(
        c,
        "train.tgt_len",
        fmt::format(
            "windows must fit the learned position tables: at most "
            "model.char_transformer.n_ctx = {}, found {}",
            x.n_ctx,
            c.train.tgt_len));
  }
  if (x.target_weights.empty()) {
    fail_rule(
        c,
        "model.char_transformer.target_weights",
        "needs the t+1 weight at least, found []");
  }
  if (static_cast<int64_t>(x.target_weights.size()) > c.train.tgt_len) {
    fail_rule(
        c,
        "model.char_transformer.target_weights",
        fmt::format(
            "{} weights, but a window of train.tgt_len = {} has targets up to t+{}: the "
            "heads beyond it would never see a target",
            x.target_weights.size(),
            c.train.tgt_len,
            c.train.tgt_len));
  }
  if (c.eval.mode != EvalMode::kVanilla) {
    fail_rule(
        c,
        "eval.mode",
        "the character transformer has no memory: set vanilla (eval.stride S scores the last S "
        "positions of each window, reported as @stride=S)");
  }
}

void validate_model(const Config& c) {
  // A family accepted at run time (accept_model_type) has no section of its own to check.
  if (c.model.type == "transformer_xl") {
    validate_transformer_xl(c);
  } else if (c.model.type == "xlnet") {
    validate_xlnet(c);
  } else if (c.model.type == "char_transformer") {
    validate_char_transformer(c);
  }
}

void validate_train(const Config& c) {
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
            "must not exceed train.max_step = {}, found {}: a run this short needs a "
            "shorter warmup too, e.g. --set train.warmup_step={}",
            t.max_step,
            t.warmup_step,
            t.max_step / 10));
  }
  if ((t.scheduler == Scheduler::kCosine || t.scheduler == Scheduler::kPoly) &&
      t.eta_min > t.lr) {
    fail_rule(
        c,
        "train.eta_min",
        fmt::format(
            "must not exceed train.lr = {}, found {}", t.lr, t.eta_min));
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
        "expected a plain name (the run's folder in runs/; run.dir names any folder), " +
            problem);
  }
  if (c.run.dir && c.run.dir->empty()) {
    fail_rule(
        c,
        "run.dir",
        "expected a folder, found an empty path (null: runs/<run.name>)");
  }
}

// The names of the families with a section of their own in ModelConfig, then those accepted
// since. Read and extended under one lock: a test may accept a family while another thread
// loads a config.
std::vector<std::string>& accepted_model_types() {
  // ModelConfig::fields' family sections, in order (a test checks they agree).
  static std::vector<std::string> types{
      "transformer_xl", "xlnet", "char_transformer"};
  return types;
}

std::mutex& model_types_lock() {
  static std::mutex lock;
  return lock;
}

} // namespace

std::vector<std::string> model_types() {
  const std::lock_guard<std::mutex> guard(model_types_lock());
  return accepted_model_types();
}

void accept_model_type(const std::string& name) {
  const std::lock_guard<std::mutex> guard(model_types_lock());
  auto& types = accepted_model_types();
  if (std::find(types.begin(), types.end(), name) != types.end()) {
    throw UserError(fmt::format("model.type {} is taken", name));
  }
  types.push_back(name);
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

int64_t ext_len(const ModelConfig& model) {
  return model.type == "transformer_xl" ? model.transformer_xl.ext_len : 0;
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
    Reader reader(node != nullptr ? *node : empty, name, config.sources);
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
    out += fmt::format(
        "\n### `{}`\n\n| key | type | default | meaning |\n|---|---|---|---|\n",
        name);
    Describer describer(out, name);
    Section::fields(section, describer);
  });
  return out;
}

} // namespace xl::config
