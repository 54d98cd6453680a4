#include "xl/lab/run_summary.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <ctime>

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
    // A loss is a negative log-likelihood: below 0 (or not finite) it is a damaged record.
    const bool loss_ok = r.contains("loss") && r["loss"].is_number() &&
        std::isfinite(r["loss"].get<double>()) && r["loss"].get<double>() >= 0.0;
    if (!r["split"].is_string() || !loss_ok || !step_ok) {
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

} // namespace xl::lab
