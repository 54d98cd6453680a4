// Sweeps: one base config and a grid or a list of overrides, expanded into named runs under one
// directory, each trained (or resumed, or skipped when finished) by xl-train and compared by
// xl-compare at the end.
//   xl-sweep -c configs/transformer_xl/wt2_small.yaml --dir runs/ablation
//            --grid model.transformer_xl.mem_len=0,64 --grid train.lr=0.001,0.00025
//   xl-sweep -c configs/transformer_xl/wt2_small.yaml --dir runs/ablation
//            --variant "full" --variant "no_memory model.transformer_xl.mem_len=0"
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "xl/config/schema.h"

namespace xl::lab {

/// A key and the values it takes in a grid ("train.lr=0.001,0.00025"; commas inside brackets
/// or braces belong to the value: "cutoffs=[10,20],[20,40]").
struct GridAxis {
  std::string key;
  std::vector<std::string> values;
};

/// A named set of overrides ("no_memory model.transformer_xl.mem_len=0 train.lr=0.001").
struct SweepVariant {
  std::string name;
  std::vector<std::string> overrides;
};

/// "KEY=V1,V2,..." -> the axis; a missing '=', an empty key, an empty value or run.name and
/// run.dir (the sweep sets them) are UserErrors.
GridAxis parse_grid_axis(const std::string& text);

/// "NAME [KEY=VALUE ...]" -> the variant; a name with characters other than letters, digits
/// and ._+- (or none), "." or "..", kSweepTable or kSweepCurves and an override of run.name or
/// run.dir are UserErrors.
SweepVariant parse_variant(const std::string& text);

/// The files a sweep writes in its folder beside the runs (no run may take their names).
inline constexpr const char* kSweepTable = "compare.csv";
inline constexpr const char* kSweepCurves = "curves.png";

struct SweepSpec {
  /// the base config file
  std::string config;
  /// overrides every run gets
  std::vector<std::string> common;
  std::vector<SweepVariant> variants;
  std::vector<GridAxis> grid;
  /// the runs go to <dir>/<name>
  std::filesystem::path dir;
};

/// One run of a sweep: its name, its overrides (common, variant, grid, then run.name and
/// run.dir) and its resolved config.
struct SweepRun {
  std::string name;
  std::vector<std::string> overrides;
  config::Config config;
};

/// Every variant (or one unnamed run) times every combination of the grid, in the order given,
/// the last axis fastest; names join the variant's and "<last key part>=<value>" with ','.
/// Each config is loaded and validated here, so that a bad key fails before any run starts.
/// No variant and no axis, two runs of one name, or run.name or run.dir among the common
/// overrides are UserErrors.
std::vector<SweepRun> expand_sweep(const SweepSpec& spec);

enum class RunState {
  kNew,         ///< no checkpoint yet: trained from the start
  kInterrupted, ///< a checkpoint before train.max_step: resumed
  kFinished,    ///< checkpointed at train.max_step: skipped
};

/// Where `run` stands. A finished run whose stored config differs from the sweep's is a
/// UserError naming the differences (an interrupted one is checked by xl-train --resume).
RunState run_state(const SweepRun& run);

} // namespace xl::lab
