// What the apps do, from a resolved config: a training run, an evaluation, an import. The app
// layer builds the components (corpus, model, checkpoint) and hands them to the library.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "xl/config/schema.h"
#include "xl/run/sweep.h"

namespace xl::app {

/// Trains as `config` says, in its run directory (created, or continued with `resume`); `stop_at`
/// checkpoints and stops at that step. A config whose memory estimate exceeds the available
/// memory is refused unless `enforce_memory` is false. Returns the process exit status (128 +
/// the signal when SIGINT/SIGTERM stopped it after checkpointing).
int run_training(
    const config::Config& config,
    bool resume,
    std::optional<int64_t> stop_at = std::nullopt,
    bool enforce_memory = true);

struct EvalRequest {
  std::string run_dir;
  /// "best", "last", another checkpoint of the run ("step_300", "averaged") or a file
  std::string checkpoint = "best";
  /// stop after this many batches (segments in memory mode, windows batches in vanilla mode)
  std::optional<int64_t> max_steps;
  /// evaluate this file instead of eval.split (raw text for XLNet pretraining runs, labelled
  /// text for classification runs), encoded with the run's vocabulary
  std::optional<std::string> file;
  /// write every scored batch to this safetensors file (batch_<s>/<field>; metadata: batches,
  /// continues_streams)
  std::optional<std::string> dump_batches;
  /// replace an existing --dump-batches file
  bool force = false;
  /// refuse a config whose memory estimate exceeds the available memory
  bool enforce_memory = true;
};

/// Evaluates a checkpoint of a run on config.eval.split in config.eval.mode. Returns the process
/// exit status.
int run_evaluation(const config::Config& config, const EvalRequest& request);

struct SampleRequest {
  std::string run_dir;
  /// "best", "last", another checkpoint of the run or a file
  std::string checkpoint = "best";
  /// the text to continue (empty: a new line)
  std::string prompt;
  /// read the prompt from this file instead
  std::optional<std::string> prompt_file;
  /// tokens to generate per sample
  int64_t tokens = 200;
  /// samples drawn side by side (batch rows)
  int64_t samples = 1;
  /// 0 (the most probable token) or from 1e-6 to 1e6
  double temperature = 1.0;
  int64_t top_k = 0;
  /// in (0, 1]
  double top_p = 1.0;
  /// >= 0
  int64_t seed = 0;
  /// re-read the last `window` tokens for every new token instead of carrying the memory
  bool no_memory = false;
  /// tokens re-read per new token without memory (unset: the memory's length, or train.tgt_len)
  std::optional<int64_t> window;
  /// refuse a config whose memory estimate exceeds the available memory
  bool enforce_memory = true;
};

/// Generates text from a checkpoint of a causal language model run (eval/generate.h): the prompt
/// and the samples on stdout, the speed on stderr. Returns the process exit status.
int run_sample(const config::Config& config, const SampleRequest& request);

struct ExportRequest {
  std::string run_dir;
  /// "best", "last", another checkpoint of the run or a file
  std::string checkpoint = "best";
  /// the folder to write (created; outside any run)
  std::string out;
  /// write into a folder that is not empty
  bool force = false;
};

/// Writes a checkpoint of a run in Hugging Face's format (models/hf_export.h): out/config.json,
/// out/model.safetensors, and the run's vocabulary file. Returns the process exit status.
int run_export(const config::Config& config, const ExportRequest& request);

struct ImportRequest {
  /// safetensors with Hugging Face TransfoXLLMHeadModel names
  std::string weights;
  /// the file orders adaptive-softmax clusters like kimiyoung's PyTorch code
  bool reverse_clusters = false;
  /// refuse a config whose memory estimate exceeds the available memory
  bool enforce_memory = true;
};

/// Creates a run directory (config.yaml and checkpoints/best.pt) from imported weights, so that
/// xl-eval evaluates them like a trained run. The vocabulary of config.data must be the model's.
/// Returns the process exit status.
int run_import(const config::Config& config, const ImportRequest& request);

struct AverageRequest {
  std::string run_dir;
  /// the run's checkpoints to average, by name or path; empty: its snapshots
  std::vector<std::string> checkpoints;
  /// of the snapshots, only the newest this many (unset: all)
  std::optional<int64_t> last;
  /// the name of the result in the run's checkpoints/ (not one the trainer writes)
  std::string out = "averaged";
  /// replace an earlier result of that name
  bool force = false;
};

/// Averages checkpoints of a run (run/average.h) into checkpoints/<out>.pt and prints what it
/// did. Returns the process exit status.
int run_average(const AverageRequest& request);

struct SweepRequest {
  run::SweepSpec spec;
  /// print each run's xl-train command instead of running it (for a scheduler)
  bool dry_run = false;
  /// evaluate each finished run with xl-eval unless it has been
  bool evaluate = true;
  /// refuse a config whose memory estimate exceeds the available memory
  bool enforce_memory = true;
};

/// Trains every run of a sweep one after another with xl-train (a finished run is skipped, an
/// interrupted one resumed), evaluates each with xl-eval, then prints xl-compare's table and
/// writes <dir>/compare.csv and <dir>/curves.png. SIGINT and SIGTERM are passed on to the
/// running child (which checkpoints and exits) and stop the sweep; a child gets SIGTERM when the
/// sweep dies. Returns the process exit status: 128 + the signal that stopped a run or the
/// sweep, 1 when a run failed.
int run_sweep(const SweepRequest& request);

} // namespace xl::app
