// Comparing runs: one row per run directory with its steps, training time, final and best
// metrics (from metrics.jsonl, a resumed run's repeats replacing what they repeat) and the
// config keys that differ between the runs.
//   xl-compare runs/wt2_small runs/no_memory runs/vanilla_attn [--csv table.csv]
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
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

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

/// A column of xl-eval results.
struct EvalColumn {
  std::string name;
  /// per run (in the order given): the key of its evaluation in this column, "" for none
  std::vector<std::string> keys;
  /// per run: the settings of its evaluation that the column's others do not share ("mem=0")
  std::vector<std::string> notes;
};

/// The evaluations of `runs` as columns. Evaluations of one split, mode, qualifier and note
/// share a column unless a run has several that differ in a setting: then that setting sets
/// the columns apart, so that one run's evaluations at two memories are two columns, while the
/// runs of an ablation, each evaluated once at its own memory, share one. A column is named by
/// the split, the metric (`metric`: "ppl", "loss") with its qualifier, " vanilla" for a vanilla
/// evaluation without one, the settings its cells share among mem_len ("mem=M", always) and
/// those that set columns apart ("tgt=T", "clamp=C", "same_length=...", "batch=B"), then the
/// note: "test ppl mem=640", "test bpc@stride=16". The settings its cells do not share are
/// named in each cell's note. In the order of the evaluations' keys.
std::vector<EvalColumn> evaluation_columns(
    const std::vector<RunSummary>& runs,
    const std::string& metric);

/// The comparison: run, steps ("no records" for a run without any), time, final train loss,
/// final and best valid loss, the best valid metric, every evaluation (evaluation_columns),
/// then each config key whose value differs between the runs (run.name and run.dir left out).
/// The metric columns are named by the runs' unit when they share one ("best valid ppl");
/// otherwise each cell names its own ("1.234 bpc").
Table compare_runs(const std::vector<RunSummary>& runs);

/// The table as Markdown (aligned columns) and as CSV.
std::string to_markdown(const Table& table);
std::string to_csv(const Table& table);

} // namespace xl::lab
