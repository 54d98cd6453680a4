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

} // namespace

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
