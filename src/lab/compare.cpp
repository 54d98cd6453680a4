#include "xl/lab/compare.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <set>

#include "xl/run/checkpoint.h"
#include "xl/run/progress.h"
#include "xl/util/error.h"
#include "xl/util/files.h"

namespace xl::lab {
namespace {

// Seconds since the epoch of a record's "time" ("2026-11-25T12:37:04.619Z"), or NaN.
double seconds_of(const nlohmann::json& record) {
  if (!record.contains("time") || !record["time"].is_string()) {
    return std::nan("");
  }
  std::tm tm{};
  int ms = 0;
  const auto text = record["time"].get<std::string>();
  if (std::sscanf(
          text.c_str(),
          "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ",
          &tm.tm_year,
          &tm.tm_mon,
          &tm.tm_mday,
          &tm.tm_hour,
          &tm.tm_min,
          &tm.tm_sec,
          &ms) != 7) {
    return std::nan("");
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<double>(timegm(&tm)) + ms / 1000.0;
}

std::vector<CurvePoint> points(const std::map<int64_t, double>& by_step) {
  std::vector<CurvePoint> out;
  for (const auto& [step, loss] : by_step) {
    out.push_back({step, loss});
  }
  return out;
}

std::string number(std::optional<double> value, int digits = 4) {
  return value && std::isfinite(*value) ? fmt::format("{:.{}f}", *value, digits) : "";
}

// The metric of a loss in `unit` ("ppl": e^loss, "bpc": loss / ln 2).
std::optional<double> metric_of(const std::string& unit, std::optional<double> loss) {
  if (!loss) {
    return std::nullopt;
  }
  if (unit == "ppl") {
    return std::exp(*loss);
  }
  if (unit == "bpc") {
    return *loss / std::log(2.0);
  }
  return std::nullopt;
}

// What an evaluation record says of its setting.
EvalSetting setting_of(const nlohmann::json& r, const std::string& split, std::string qualifier) {
  EvalSetting s;
  s.split = split;
  s.mode = r["mode"].is_string() ? r["mode"].get<std::string>() : "";
  s.qualifier = std::move(qualifier);
  if (r.contains("eval") && r["eval"].is_object()) {
    for (auto it = r["eval"].begin(); it != r["eval"].end(); ++it) {
      s.values[it.key()] =
          it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
    }
  }
  s.note = std::string(r.value("partial", false) ? " (partial)" : "") +
      (r.value("elsewhere", false) ? " (checkpoint from elsewhere)" : "");
  return s;
}

// Folds metrics.jsonl's records, in order, into a RunSummary: the training time of the
// processes that wrote them, the loss curves, the metric's unit and xl-eval's results.
class MetricsFold {
 public:
  explicit MetricsFold(RunSummary& summary) : summary_(summary) {}

  void add(const nlohmann::json& r) {
    ++summary_.records;
    const bool evaluation = r.contains("mode"); // xl-eval's, written after the training
    track_time(r, evaluation);
    if (!r.contains("split")) {
      return; // an event
    }
    const bool step_ok =
        !r.contains("step") || (r["step"].is_number_integer() && r["step"].get<int64_t>() >= 0);
    if (!r["split"].is_string() || !r.contains("loss") || !r["loss"].is_number() || !step_ok) {
      ++summary_.malformed;
      return;
    }
    const auto split = r["split"].get<std::string>();
    const double loss = r["loss"].get<double>();
    // The metric's name, and its qualifier: "ppl", "bpc@stride=16".
    std::string qualifier;
    for (auto it = r.begin(); it != r.end(); ++it) {
      for (const std::string unit : {"ppl", "bpc"}) {
        if (it.key().rfind(unit, 0) == 0) {
          summary_.metric = unit;
          qualifier = it.key().substr(unit.size());
        }
      }
    }
    // A classifier's loss has no metric of its own: its accuracy is the one to compare.
    std::optional<double> accuracy;
    for (auto it = r.begin(); it != r.end() && !accuracy; ++it) {
      if (it.key().rfind("acc/", 0) == 0 && it.value().is_number()) {
        accuracy = it.value().get<double>();
        summary_.metric = "acc";
      }
    }
    if (evaluation) {
      // Only the run's own splits: a file's score (older xl-eval --file) is no result of it.
      if (split == "valid" || split == "test") {
        auto setting = setting_of(r, split, qualifier);
        auto key = setting.key();
        summary_.evaluations[key] = {
            std::move(setting), r.value("step", int64_t{0}), loss, accuracy};
      }
    } else if (split == "train") {
      train_[r.value("step", int64_t{0})] = loss;
    } else if (split == "valid") {
      valid_[r.value("step", int64_t{0})] = loss;
      if (accuracy) {
        summary_.best_valid_accuracy =
            std::max(summary_.best_valid_accuracy.value_or(*accuracy), *accuracy);
      }
    }
  }

  void finish() {
    close_process();
    summary_.train = points(train_);
    summary_.valid = points(valid_);
    summary_.steps = train_.empty() ? 0 : train_.rbegin()->first;
    for (const auto& [step, loss] : valid_) {
      summary_.best_valid_loss = std::min(summary_.best_valid_loss.value_or(loss), loss);
    }
  }

 private:
  // Each process (a "start" event) counts from its start to its last training record.
  void track_time(const nlohmann::json& r, bool evaluation) {
    const double time = seconds_of(r);
    if (r.value("event", "") == "start") {
      close_process();
      process_start_ = time;
    }
    if (!evaluation) {
      process_last_ = time;
    }
  }

  void close_process() {
    if (std::isfinite(process_start_) && std::isfinite(process_last_)) {
      summary_.seconds += process_last_ - process_start_;
    }
  }

  RunSummary& summary_;
  std::map<int64_t, double> train_;
  std::map<int64_t, double> valid_;
  double process_start_ = std::nan("");
  double process_last_ = std::nan("");
};

} // namespace

std::string EvalSetting::key() const {
  std::string text = split + "/" + mode + qualifier;
  for (const auto& [name, value] : values) {
    text += fmt::format(" {}={}", name, value);
  }
  return text + note;
}

RunSummary summarize_run(const std::filesystem::path& dir) {
  RunSummary summary;
  summary.dir = dir;
  const auto config_path = dir / "config.yaml";
  std::error_code exists;
  if (!std::filesystem::exists(config_path, exists)) {
    throw UserError(fmt::format(
        "{}: not a run directory (it holds no config.yaml); name the folders xl-train wrote",
        dir.string()));
  }
  try {
    summary.config = run::flatten_config(read_file(config_path, "run config"));
  } catch (const UserError& e) {
    throw UserError(fmt::format(
        "{}: the run's config cannot be read ({}); was it edited by hand?",
        config_path.string(),
        e.what()));
  }
  std::error_code ec;
  if (!std::filesystem::exists(dir / "metrics.jsonl", ec)) {
    throw UserError(fmt::format("{}: no metrics.jsonl (not trained yet?)", dir.string()));
  }
  const std::string text = read_file(dir / "metrics.jsonl", "metrics file");
  MetricsFold fold(summary);
  // A last line without its newline is a record still being written, or torn: skipped.
  for (size_t begin = 0, end = 0; (end = text.find('\n', begin)) != std::string::npos;
       begin = end + 1) {
    const auto r = nlohmann::json::parse(text.begin() + begin, text.begin() + end, nullptr, false);
    if (r.is_object()) {
      fold.add(r);
    } else {
      ++summary.unreadable;
    }
  }
  fold.finish();
  return summary;
}

namespace {

// The config keys whose values differ between the runs (a key a run lacks reads as ""), but
// the run's own name and folder.
std::vector<std::string> differing_keys(const std::vector<RunSummary>& runs) {
  std::set<std::string> keys;
  for (const auto& r : runs) {
    for (const auto& [key, value] : r.config) {
      keys.insert(key);
    }
  }
  std::vector<std::string> differing;
  for (const auto& key : keys) {
    if (key == "run.name" || key == "run.dir") {
      continue;
    }
    std::set<std::string> values;
    for (const auto& r : runs) {
      const auto it = r.config.find(key);
      values.insert(it == r.config.end() ? "" : it->second);
    }
    if (values.size() > 1) {
      differing.push_back(key);
    }
  }
  return differing;
}

} // namespace

namespace {

// The settings a memory-mode column names, and how: mem_len whenever its cells share it, the
// others when they set the columns apart.
constexpr std::pair<const char*, const char*> kNamedSettings[] = {
    {"mem_len", "mem"},
    {"tgt_len", "tgt"},
    {"clamp_len", "clamp"},
    {"same_length", "same_length"},
    {"batch", "batch"}};

// An evaluation's group: what always sets columns apart.
std::string group_of(const EvalSetting& s) {
  return s.split + "/" + s.mode + s.qualifier + s.note;
}

std::string value_of(const EvalSetting& s, const std::string& key) {
  const auto it = s.values.find(key);
  return it == s.values.end() ? "" : it->second;
}

// The settings of each group that some run holds two evaluations of, with different values.
std::map<std::string, std::set<std::string>> distinguishing(const std::vector<RunSummary>& runs) {
  std::map<std::string, std::set<std::string>> out;
  for (const auto& r : runs) {
    std::map<std::string, std::vector<const EvalSetting*>> groups;
    for (const auto& [key, evaluation] : r.evaluations) {
      groups[group_of(evaluation.setting)].push_back(&evaluation.setting);
    }
    for (const auto& [group, settings] : groups) {
      for (const auto* a : settings) {
        for (const auto* b : settings) {
          for (const auto& [name, value] : a->values) {
            // A record older than the settings says nothing of them.
            if (b->values.count(name) > 0 && value_of(*b, name) != value) {
              out[group].insert(name);
            }
          }
        }
      }
    }
  }
  return out;
}

// A column's name and its cells' notes, from the settings of its cells (null: no evaluation).
void name_column(
    EvalColumn& column,
    const EvalSetting& first,
    const std::vector<const EvalSetting*>& cells,
    const std::set<std::string>& apart,
    const std::string& metric) {
  column.name = first.split + " " + metric + first.qualifier;
  if (first.mode == "vanilla" && first.qualifier.empty()) {
    column.name += " vanilla";
  }
  column.notes.assign(cells.size(), "");
  for (const auto& [key, shown] : kNamedSettings) {
    if (first.mode != "memory" || first.values.count(key) == 0) {
      continue;
    }
    const bool shared = std::all_of(cells.begin(), cells.end(), [&](const EvalSetting* s) {
      return s == nullptr || value_of(*s, key) == value_of(first, key);
    });
    if (shared && (std::string(key) == "mem_len" || apart.count(key) > 0)) {
      column.name += fmt::format(" {}={}", shown, value_of(first, key));
    } else if (!shared) {
      for (size_t r = 0; r < cells.size(); ++r) {
        if (cells[r] != nullptr) {
          column.notes[r] += fmt::format(" {}={}", shown, value_of(*cells[r], key));
        }
      }
    }
  }
  column.name += first.note;
}

} // namespace

std::vector<EvalColumn> evaluation_columns(
    const std::vector<RunSummary>& runs,
    const std::string& metric) {
  const auto apart = distinguishing(runs);
  // Each column's key: the group and the values of the settings that set its columns apart.
  const auto column_key = [&](const EvalSetting& s) {
    const std::string group = group_of(s);
    std::string key = group;
    if (const auto it = apart.find(group); it != apart.end()) {
      for (const auto& name : it->second) {
        key += fmt::format(" {}={}", name, value_of(s, name));
      }
    }
    return key;
  };
  std::map<std::string, std::vector<const Evaluation*>> cells;
  std::map<std::string, std::string> first_key; // the column's first evaluation key, for order
  for (size_t r = 0; r < runs.size(); ++r) {
    for (const auto& [key, evaluation] : runs[r].evaluations) {
      auto& column = cells[column_key(evaluation.setting)];
      column.resize(runs.size(), nullptr);
      column[r] = &evaluation;
      auto& first = first_key[column_key(evaluation.setting)];
      first = first.empty() ? key : std::min(first, key);
    }
  }
  std::vector<std::pair<std::string, std::string>> order;
  for (const auto& [column, key] : first_key) {
    order.emplace_back(key, column);
  }
  std::sort(order.begin(), order.end());
  std::vector<EvalColumn> columns;
  for (const auto& [unused, column_id] : order) {
    const auto& evaluations = cells.at(column_id);
    EvalColumn column;
    std::vector<const EvalSetting*> settings;
    const EvalSetting* first = nullptr;
    for (size_t r = 0; r < runs.size(); ++r) {
      const Evaluation* e = evaluations[r];
      settings.push_back(e != nullptr ? &e->setting : nullptr);
      column.keys.push_back(e != nullptr ? e->setting.key() : "");
      first = first != nullptr || e == nullptr ? first : &e->setting;
    }
    const auto it = apart.find(group_of(*first));
    name_column(
        column, *first, settings, it == apart.end() ? std::set<std::string>{} : it->second, metric);
    columns.push_back(std::move(column));
  }
  return columns;
}

Table compare_runs(const std::vector<RunSummary>& runs) {
  Table table;
  std::set<std::string> units;
  for (const auto& r : runs) {
    units.insert(r.metric);
  }
  const std::vector<std::string> differing = differing_keys(runs);
  // One unit for all: it names the columns; runs of several: each cell names its own.
  const bool shared = units.size() == 1 && !units.begin()->empty();
  const std::string metric = shared ? *units.begin() : "metric";
  const auto columns = evaluation_columns(runs, metric);
  // The metric of a loss (a classifier's: its accuracy, given), or the loss without one.
  const auto cell =
      [&](const RunSummary& r, std::optional<double> loss, std::optional<double> accuracy) {
        const auto value = r.metric == "acc" ? accuracy : metric_of(r.metric, loss);
        if (!value) {
          return number(loss, 3);
        }
        return shared ? number(value, 3) : number(value, 3) + " " + r.metric;
      };
  table.header = {
      "run",
      "steps",
      "time",
      "train loss",
      "valid loss",
      "best valid loss",
      "best valid " + metric};
  for (const auto& column : columns) {
    table.header.push_back(column.name);
  }
  table.header.insert(table.header.end(), differing.begin(), differing.end());
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunSummary& r = runs[i];
    std::vector<std::string> row{
        r.dir.string(),
        r.records == 0 ? "no records" : std::to_string(r.steps),
        run::format_duration(r.seconds),
        r.train.empty() ? "" : number(r.train.back().loss),
        r.valid.empty() ? "" : number(r.valid.back().loss),
        number(r.best_valid_loss),
        r.best_valid_loss ? cell(r, r.best_valid_loss, r.best_valid_accuracy) : ""};
    for (const auto& column : columns) {
      const auto it = r.evaluations.find(column.keys[i]);
      row.push_back(
          it == r.evaluations.end()
              ? ""
              : cell(r, it->second.loss, it->second.accuracy) + column.notes[i]);
    }
    for (const auto& key : differing) {
      const auto it = r.config.find(key);
      row.push_back(it == r.config.end() ? "" : it->second);
    }
    table.rows.push_back(std::move(row));
  }
  return table;
}

std::string to_markdown(const Table& table) {
  std::vector<size_t> width(table.header.size(), 3);
  const auto measure = [&](const std::vector<std::string>& row) {
    for (size_t c = 0; c < row.size(); ++c) {
      width[c] = std::max(width[c], row[c].size());
    }
  };
  measure(table.header);
  for (const auto& row : table.rows) {
    measure(row);
  }
  const auto line = [&](const std::vector<std::string>& row) {
    std::string text = "|";
    for (size_t c = 0; c < row.size(); ++c) {
      text += fmt::format(" {:<{}} |", row[c], width[c]);
    }
    return text + "\n";
  };
  std::string out = line(table.header) + "|";
  for (const size_t w : width) {
    out += std::string(w + 2, '-') + "|";
  }
  out += "\n";
  for (const auto& row : table.rows) {
    out += line(row);
  }
  return out;
}

std::string to_csv(const Table& table) {
  const auto field = [](const std::string& text) {
    if (text.find_first_of(",\"\n") == std::string::npos) {
      return text;
    }
    std::string quoted = "\"";
    for (const char c : text) {
      quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    }
    return quoted + "\"";
  };
  const auto line = [&](const std::vector<std::string>& row) {
    std::string text;
    for (size_t c = 0; c < row.size(); ++c) {
      text += (c > 0 ? "," : "") + field(row[c]);
    }
    return text + "\n";
  };
  std::string out = line(table.header);
  for (const auto& row : table.rows) {
    out += line(row);
  }
  return out;
}

} // namespace xl::lab
