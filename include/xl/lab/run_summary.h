// A run directory read for comparison: its steps, training time, curves, final and best metrics
// and xl-eval's results (from metrics.jsonl, a resumed run's repeats replacing what they
// repeat), and its resolved config (lab/compare.h sets runs side by side).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace xl::lab {

/// What an xl-eval record evaluated: its split and mode, the metric's qualifier ("@stride=16"),
/// the settings of its "eval" values (tgt_len, batch, mem_len, clamp_len, same_length; window,
/// stride), none in records written before them, and a note (" (partial)", " (checkpoint from
/// elsewhere)").
struct EvalSetting {
  std::string split;
  std::string mode;
  std::string qualifier;
  std::map<std::string, std::string> values;
  std::string note;
  /// all of it, one string: evaluations of one key share a column
  std::string key() const;
};

/// An evaluation's latest result.
struct Evaluation {
  EvalSetting setting;
  /// the checkpoint's step
  int64_t step = 0;
  double loss = 0.0;
  /// a classifier's
  std::optional<double> accuracy;
};

/// One (split, step) point of a run's curve.
struct CurvePoint {
  int64_t step = 0;
  double loss = 0.0;
};

struct RunSummary {
  std::filesystem::path dir;
  /// the last training step logged
  int64_t steps = 0;
  /// training wall time: each process from its start record to its last training record
  /// (xl-eval's records later do not count), summed
  double seconds = 0.0;
  /// metrics.jsonl's records, and its lines that are no JSON record (complete lines only)
  int64_t records = 0;
  int64_t unreadable = 0;
  /// records of a split whose step is no whole number >= 0 or whose loss is no number (skipped)
  int64_t malformed = 0;
  /// "ppl", "bpc", "acc" (a classifier's records: its first "acc/<name>") or ""
  std::string metric;
  /// the curves by step: the last record of each step (a resumed run's replaces the killed
  /// run's)
  std::vector<CurvePoint> train;
  std::vector<CurvePoint> valid;
  std::optional<double> best_valid_loss;
  /// xl-eval's latest result of each setting, by EvalSetting::key()
  std::map<std::string, Evaluation> evaluations;
  /// a classifier's best validation accuracy
  std::optional<double> best_valid_accuracy;
  /// the resolved config by key path
  std::map<std::string, std::string> config;
};

/// Reads `dir`'s metrics.jsonl and config.yaml; a missing or unreadable one is a UserError.
RunSummary summarize_run(const std::filesystem::path& dir);

} // namespace xl::lab
