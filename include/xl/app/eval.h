// xl-eval: a checkpoint of a run scored on a split or on a file of the user's.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "xl/app/trained_model.h"
#include "xl/config/schema.h"
#include "xl/eval/evaluator.h"
#include "xl/eval/per_token.h"
#include "xl/sources/dataset.h"

namespace xl::app {

struct EvalRequest {
  std::string run_dir;
  /// "best", "last", another checkpoint of the run ("step_300", "averaged") or a file
  std::string checkpoint = "best";
  /// stop after this many batches (segments in memory mode, windows batches in vanilla mode)
  std::optional<int64_t> max_steps;
  /// score this file instead of eval.split, encoded with the run's vocabulary (text, a token
  /// file, raw text for XLNet pretraining, labelled text for classification); its result goes to
  /// stdout and --json, never into the run's metrics.jsonl
  std::optional<std::string> file;
  /// also write the result as a JSON object to this file
  std::optional<std::string> json;
  /// also list every token's log-probability in this TSV file (eval/per_token.h)
  std::optional<std::string> per_token;
  /// write every scored batch to this safetensors file (batch_<s>/<field>; metadata: batches,
  /// continues_streams)
  std::optional<std::string> dump_batches;
  /// replace existing --json, --per-token and --dump-batches files
  bool force = false;
  /// refuse a config whose memory estimate exceeds the available memory
  bool enforce_memory = true;
};

/// The files an evaluation writes beside its report.
struct EvalOutputs {
  std::optional<std::filesystem::path> json;
  std::optional<std::filesystem::path> per_token;
  std::optional<std::filesystem::path> dump_batches;
};

/// The request's outputs, checked before anything is read (run::OutputFiles).
EvalOutputs check_eval_outputs(const EvalRequest& request);

/// An evaluation done: its totals, its setting (words and values) and, for a file, how the text
/// was read.
struct Evaluated {
  eval::EvalResult result;
  std::string setting;
  nlohmann::json values;
  std::optional<sources::TextReading> reading;
  /// each token's score, with `list_tokens` or --per-token
  std::shared_ptr<eval::PerTokenListing> listing;
};

/// Scores the split or the file of `request` with the trained model (the batches dumped and the
/// tokens listed as `outputs` asks; `list_tokens`: listed, in Evaluated::listing, also without
/// a --per-token file): what xl-eval and the library's Model::score_file run. A signal
/// (runtime::stop_signal) stops it after the batch at hand.
Evaluated evaluate_request(
    const config::Config& config,
    const EvalRequest& request,
    const EvalOutputs& outputs,
    sources::Dataset& dataset,
    const TrainedModel& trained,
    const torch::Device& device,
    bool list_tokens = false);

/// Evaluates a checkpoint of a run on config.eval.split (or request.file) in config.eval.mode.
/// SIGINT or SIGTERM stops it after the batch at hand: what it had is reported as PARTIAL and
/// the status is 128 + the signal. Returns the process exit status.
int run_evaluation(const config::Config& config, const EvalRequest& request);

} // namespace xl::app
