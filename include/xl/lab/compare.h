// Comparing runs: one row per run directory with its steps, training time, final and best
// metrics (from metrics.jsonl, a resumed run's repeats replacing what they repeat) and the
// config keys that differ between the runs.
//   xl-compare runs/wt2_small runs/no_memory runs/vanilla_attn [--csv table.csv]
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace xl::lab {

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
  /// "ppl", "bpc", "acc" (a classifier's records: its first "acc/<name>") or ""
  std::string metric;
  /// the curves by step: the last record of each step (a resumed run's replaces the killed
  /// run's)
  std::vector<CurvePoint> train;
  std::vector<CurvePoint> valid;
  std::optional<double> best_valid_loss;
  /// xl-eval's latest loss per "<split>/<mode>" ("test/memory", "test/vanilla (partial)",
  /// "test/memory (checkpoint from elsewhere)" for a checkpoint outside the run)
  std::map<std::string, double> evaluations;
  /// a classifier's: the best validation accuracy, and xl-eval's latest per evaluation
  std::optional<double> best_valid_accuracy;
  std::map<std::string, double> evaluation_accuracy;
  /// the resolved config by key path
  std::map<std::string, std::string> config;
};

/// Reads `dir`'s metrics.jsonl and config.yaml; a missing or unreadable one is a UserError.
RunSummary summarize_run(const std::filesystem::path& dir);

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

/// The comparison: run, steps ("no records" for a run without any), time, final train loss,
/// final and best valid loss, the best valid metric, every evaluation, then each config key
/// whose value differs between the runs (run.name and run.dir left out). The metric columns
/// are named by the runs' unit when they share one ("best valid ppl"); otherwise each cell
/// names its own ("1.234 bpc").
Table compare_runs(const std::vector<RunSummary>& runs);

/// The table as Markdown (aligned columns) and as CSV.
std::string to_markdown(const Table& table);
std::string to_csv(const Table& table);

} // namespace xl::lab
