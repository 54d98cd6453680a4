#include "xl/lab/sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <string_view>

#include "xl/config/config.h"
#include "xl/run/checkpoint.h"
#include "xl/run/resume.h"
#include "xl/run/run_dir.h"
#include "xl/util/error.h"
#include "xl/util/files.h"

namespace xl::lab {

namespace {

bool name_character(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '+' ||
      c == '-';
}

// A value as part of a directory name: "[200,2000]" -> "200-2000"; brackets, braces and
// spaces go, commas become '-', any other character '_'.
std::string name_part(const std::string& value) {
  std::string out;
  for (const char c : value) {
    if (c == ',') {
      out += '-';
    } else if (name_character(c)) {
      out += c;
    } else if (std::string_view("[]{} ").find(c) == std::string_view::npos) {
      out += '_';
    }
  }
  return out;
}

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  for (const char c : text + ' ') {
    if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      if (!word.empty()) {
        words.push_back(std::move(word));
        word.clear();
      }
    } else {
      word += c;
    }
  }
  return words;
}

// The sweep names its runs' folders; an override of either would train elsewhere.
void refuse_run_location(const std::string& where, const std::string& assignment) {
  const std::string key = assignment.substr(0, assignment.find('='));
  if (key == "run.name" || key == "run.dir" || key == "run") {
    throw UserError(fmt::format(
        "{}: {} is set by the sweep (each run trains in --dir/<its name>); leave it out",
        where,
        key));
  }
}

// A key on two axes, or on an axis and in a variant, would be set twice: the later would win.
void refuse_keys_set_twice(const SweepSpec& spec) {
  for (size_t a = 0; a < spec.grid.size(); ++a) {
    const std::string& key = spec.grid[a].key;
    for (size_t b = a + 1; b < spec.grid.size(); ++b) {
      if (spec.grid[b].key == key) {
        throw UserError(fmt::format(
            "--grid {}: given twice; list all its values in one --grid {}=V1,V2,...", key, key));
      }
    }
    for (const auto& variant : spec.variants) {
      for (const auto& assignment : variant.overrides) {
        if (assignment.compare(0, assignment.find('='), key) == 0) {
          throw UserError(fmt::format(
              "--grid {} and --variant '{}' both set {}: keep it in one of them",
              key,
              variant.name,
              key));
        }
      }
    }
  }
}

// config::load names an override it refuses "--set KEY=VALUE: ..."; a variant's or an axis's
// is named by the flag that gave it.
std::string named_by_its_flag(
    const std::string& message,
    const SweepVariant& variant,
    const std::vector<std::string>& grid_overrides) {
  const auto starts = [&](const std::string& assignment) {
    return message.rfind("--set " + assignment + ":", 0) == 0;
  };
  for (const auto& assignment : variant.overrides) {
    if (starts(assignment)) {
      return fmt::format("--variant '{}': {}", variant.name, message.substr(6));
    }
  }
  for (const auto& assignment : grid_overrides) {
    if (starts(assignment)) {
      return "--grid " + message.substr(6);
    }
  }
  return message;
}

} // namespace

GridAxis parse_grid_axis(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw UserError(
        fmt::format("--grid {}: expected KEY=V1,V2,... (e.g. train.lr=0.001,0.00025)", text));
  }
  refuse_run_location("--grid " + text, text);
  GridAxis axis{text.substr(0, eq), {}};
  std::string value;
  int depth = 0; // commas inside [...] or {...} belong to the value
  for (const char c : text.substr(eq + 1) + ',') {
    if (c == ',' && depth == 0) {
      if (value.empty()) {
        throw UserError(fmt::format("--grid {}: an empty value", text));
      }
      axis.values.push_back(std::move(value));
      value.clear();
      continue;
    }
    depth += (c == '[' || c == '{') ? 1 : (c == ']' || c == '}') ? -1 : 0;
    value += c;
  }
  return axis;
}

SweepVariant parse_variant(const std::string& text) {
  auto words = split_words(text);
  if (words.empty() || !std::all_of(words[0].begin(), words[0].end(), name_character) ||
      words[0].find('=') != std::string::npos) {
    throw UserError(fmt::format(
        "--variant '{}': expected a name (letters, digits, ._+-) then KEY=VALUE overrides, "
        "e.g. 'no_memory model.transformer_xl.mem_len=0'",
        text));
  }
  if (const auto problem = plain_name_problem(words[0]); !problem.empty()) {
    throw UserError(fmt::format(
        "--variant '{}': expected a plain name for the run's folder, {}", text, problem));
  }
  if (words[0] == kSweepTable || words[0] == kSweepCurves) {
    throw UserError(fmt::format(
        "--variant '{}': the sweep writes {} in its folder; name the run otherwise",
        text,
        words[0]));
  }
  for (size_t i = 1; i < words.size(); ++i) {
    if (words[i].find('=') == std::string::npos) {
      throw UserError(fmt::format("--variant '{}': '{}' is no KEY=VALUE override", text, words[i]));
    }
    refuse_run_location("--variant '" + text + "'", words[i]);
  }
  return {words[0], {words.begin() + 1, words.end()}};
}

std::vector<SweepRun> expand_sweep(const SweepSpec& spec) {
  if (spec.variants.empty() && spec.grid.empty()) {
    throw UserError("a sweep needs a --grid KEY=V1,V2,... or a --variant 'NAME KEY=VALUE ...'");
  }
  for (const auto& assignment : spec.common) {
    refuse_run_location("--set " + assignment, assignment);
  }
  refuse_keys_set_twice(spec);
  // Every combination of the grid, the last axis fastest: (name parts, overrides).
  std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> points{{}};
  for (const auto& axis : spec.grid) {
    const auto dot = axis.key.rfind('.');
    const std::string short_key = dot == std::string::npos ? axis.key : axis.key.substr(dot + 1);
    std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> next;
    for (const auto& point : points) {
      for (const auto& value : axis.values) {
        auto grown = point;
        grown.first.push_back(short_key + "=" + name_part(value));
        grown.second.push_back(axis.key + "=" + value);
        next.push_back(std::move(grown));
      }
    }
    points = std::move(next);
  }
  const std::vector<SweepVariant> variants =
      spec.variants.empty() ? std::vector<SweepVariant>{{}} : spec.variants;
  std::vector<SweepRun> runs;
  std::set<std::string> names;
  for (const auto& variant : variants) {
    for (const auto& [parts, grid_overrides] : points) {
      std::vector<std::string> name_parts = parts;
      if (!variant.name.empty()) {
        name_parts.insert(name_parts.begin(), variant.name);
      }
      SweepRun run;
      run.name = fmt::format("{}", fmt::join(name_parts, ","));
      if (!names.insert(run.name).second) {
        throw UserError(fmt::format(
            "two runs of the sweep would be named '{}': give the variants other names", run.name));
      }
      run.overrides = spec.common;
      run.overrides.insert(run.overrides.end(), variant.overrides.begin(), variant.overrides.end());
      run.overrides.insert(run.overrides.end(), grid_overrides.begin(), grid_overrides.end());
      run.overrides.push_back("run.name=" + run.name);
      run.overrides.push_back("run.dir=" + (spec.dir / run.name).string());
      try {
        run.config = config::load(spec.config, run.overrides);
      } catch (const ConfigError& e) {
        throw ConfigError(named_by_its_flag(e.what(), variant, grid_overrides));
      }
      runs.push_back(std::move(run));
    }
  }
  return runs;
}

RunState run_state(const SweepRun& run) {
  const auto paths = run::paths_of(run::directory_of(run.config));
  const auto checkpoint = paths.last_checkpoint();
  if (!run::holds_checkpoints(paths)) {
    return RunState::kNew;
  }
  if (!std::filesystem::exists(checkpoint)) {
    return RunState::kInterrupted; // killed in its first checkpoint: --auto-resume restores it
  }
  torch::serialize::InputArchive archive;
  const auto info = run::load_checkpoint(checkpoint, archive);
  if (info.step < run.config.train.max_step) {
    return RunState::kInterrupted;
  }
  run::require_matching_config(
      checkpoint, info.config, config::dump(run.config), {"model", "data", "train"});
  return RunState::kFinished;
}

} // namespace xl::lab
