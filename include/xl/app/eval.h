// xl-eval: a checkpoint of a run scored on a split or on a file of the user's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "xl/config/schema.h"

namespace xl::app {

struct EvalRequest {
  std::string run_dir;
  /// "best", "last", another checkpoint of the run ("step_300", "averaged") or a file
  std::string checkpoint = "best";
  /// stop after this many batches (segments in memory mode, windows batches in vanilla mode)
  std::optional<int64_t> max_steps;
  /// score this file instead of eval.split, encoded with the run's vocabulary (text, a token
  /// file, raw text for XLNet, labelled text for classification); its result goes to stdout
  /// and --json, never into the run's metrics.jsonl
  std::optional<std::string> file;
  /// the streams a file is cut into (1: the whole text with the long memory)
  int64_t streams = 1;
  /// XLNet: the permutation LM's sampled estimate instead of every piece left to right
  bool permutation = false;
  /// the file is tokenized already: split at blanks, not by the run's rules for raw text
  bool pretokenized = false;
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

/// Evaluates a checkpoint of a run on config.eval.split (or request.file) in config.eval.mode.
/// SIGINT or SIGTERM stops it after the batch at hand: what it had is reported as PARTIAL and
/// the status is 128 + the signal. Returns the process exit status.
int run_evaluation(const config::Config& config, const EvalRequest& request);

} // namespace xl::app
