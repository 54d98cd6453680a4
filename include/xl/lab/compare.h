// Comparing runs: one row per run directory with its steps, training time, final and best
// metrics (lab/run_summary.h: from metrics.jsonl) and the config keys that differ between the
// runs.
//   xl-compare runs/wt2_small runs/no_memory runs/vanilla_attn [--csv table.csv]
#pragma once

#include <string>
#include <vector>

#include "xl/lab/run_summary.h"

namespace xl::lab {

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
