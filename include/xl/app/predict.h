// xl-predict: a classifier run's predictions for a file of examples, one row per example.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "xl/config/schema.h"

namespace xl::app {

struct PredictRequest {
  std::string run_dir;
  /// "best", "last", another checkpoint of the run or a file
  std::string checkpoint = "best";
  /// the examples: NSMC's ratings tsv, labelled text (label<TAB>text) or plain text, a line each
  std::string file;
  /// "auto" (from the first line), "nsmc", "labelled" or "text" (formats/example_reader.h)
  std::string format = "auto";
  /// the predictions' TSV file (unset: stdout)
  std::optional<std::string> out;
  /// replace an existing --out
  bool force = false;
  /// the classes' names, in class order (empty: the run's model.xlnet.labels, else their
  /// numbers)
  std::vector<std::string> labels;
  /// one JSON object a line instead of the TSV
  bool json = false;
  /// refuse a config whose memory estimate exceeds the available memory
  bool enforce_memory = true;
};

/// Predicts the class of every example of request.file with a checkpoint of a classifier run, in
/// batches of eval.batch_size, reading the file a part at a time (bounded memory). Writes a TSV
/// with a header, "line<TAB>predicted<TAB>prob_0<TAB>...<TAB>prob_{C-1}[<TAB>gold][<TAB>label]
/// <TAB>id|text" (the example's line in the file, the most probable class, each class's
/// probability, the file's label when it has them, the predicted class's name when
/// request.labels or the run's config gives them, and the example's id where the file has ids (NSMC's), else its
/// text with tabs and line ends as spaces), or with request.json one object a line ("line",
/// "id" or "text", "label", "predicted", "probs" by name, "gold"), in file order; with labels,
/// the accuracy and loss beside it
/// (on stdout after --out, else in the log). SIGINT or SIGTERM stop it after the batch at hand:
/// the examples done so far are kept, PARTIAL, and the status is 128 + the signal. Returns the
/// process exit status.
int run_prediction(const config::Config& config, const PredictRequest& request);

} // namespace xl::app
