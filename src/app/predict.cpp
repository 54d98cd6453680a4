#include "xl/app/predict.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <vector>

#include "xl/app/cli.h"
#include "xl/eval/report.h"
#include "xl/formats/example_reader.h"
#include "xl/infer/classifier.h"
#include "xl/models/factory.h"
#include "xl/run/logging.h"
#include "xl/run/outputs.h"
#include "xl/run/progress.h"
#include "xl/runtime/device.h"
#include "xl/runtime/signals.h"
#include "xl/sources/labelled_texts.h"
#include "xl/util/error.h"
#include "xl/util/files.h"
#include "xl/util/log.h"

namespace xl::app {

namespace {

// The model's predictions, part by part, as TSV rows in file order.
class Predictor {
 public:
  Predictor(const infer::TrainedRun& run, const PredictRequest& request)
      : config_(run.config()),
        data_(run.data()),
        request_(request),
        reader_(
            request.file,
            request.format,
            run.config().eval.batch_size * sources::kGroupBatches),
        progress_(formats::count_lines(request.file)),
        classifier_(run, "xl-eval --file") {
    progress_.count_as("ex");
  }

  // Writes the TSV to `sink`.
  void run(const ByteSink& sink) {
    reader_.read([&](formats::ExamplePart& part) {
      const auto probs = classifier_.classify(
          part.examples, request_.file, [] { return runtime::stop_signal().load() != 0; });
      if (!probs) {
        stopped_ = true;
        return false; // the part at hand is left out whole
      }
      add_rows(part, *probs);
      if (!header_written_ && classes_ > 0) {
        const std::string header = header_line();
        sink(header.data(), header.size()); // none for JSON
        header_written_ = true;
      }
      for (const auto& row : rows_) {
        sink(row.data(), row.size());
      }
      done_ += static_cast<int64_t>(rows_.size());
      written_ = classifier_.result();
      progress_.update(done_, static_cast<int64_t>(rows_.size()));
      if (progress_.due(config_.run.progress_seconds)) {
        logger().info("{}", progress_.line("example"));
      }
      return true;
    });
    if (reader_.examples() == 0) {
      throw UserError(fmt::format("{} holds no examples to predict", request_.file));
    }
    if (reader_.blank_lines() + reader_.textless_lines() > 0) {
      logger().warn(
          "{}: {} blank lines{} left out (no text to classify); the rows keep the file's line "
          "numbers",
          request_.file,
          reader_.blank_lines(),
          reader_.textless_lines() > 0
              ? fmt::format(" and {} lines of a label without text", reader_.textless_lines())
              : "");
    }
  }

  // The summary of the examples written: how many and, for labelled input, the accuracy and
  // loss.
  std::string summary() const {
    const std::string partial =
        stopped_ ? fmt::format(" | PARTIAL: the first {} examples", done_) : "";
    if (!reader_.labelled() || done_ == 0) {
      return fmt::format(
          "{} | {} examples | {} ex/s{}",
          request_.file,
          done_,
          run::format_count(written_.tokens_per_second()),
          partial);
    }
    return eval::report_evaluation(request_.file, written_, data_.unit(), {}).line + partial;
  }

  bool stopped() const {
    return stopped_;
  }

 private:
  std::string header_line() const {
    if (request_.json) {
      return "";
    }
    std::string header = "line\tpredicted";
    for (int64_t c = 0; c < classes_; ++c) {
      header += fmt::format("\tprob_{}", c);
    }
    header += reader_.labelled() ? "\tgold" : "";
    header += request_.labels.empty() ? "" : "\tlabel";
    return header + (has_ids_ ? "\tid\n" : "\ttext\n");
  }

  // The name of class `c`: its --labels (or model.xlnet.labels) name, else its number.
  nlohmann::json class_name(int64_t c) const {
    return c >= 0 && c < static_cast<int64_t>(request_.labels.size())
        ? nlohmann::json(request_.labels[static_cast<size_t>(c)])
        : nlohmann::json(c);
  }

  // Each example's row, in the part's order.
  void add_rows(const formats::ExamplePart& part, const torch::Tensor& probs) {
    const auto predicted = probs.argmax(1);
    const auto p = probs.accessor<double, 2>();
    classes_ = probs.size(1);
    has_ids_ = !part.ids.empty();
    if (!request_.labels.empty() && static_cast<int64_t>(request_.labels.size()) != classes_) {
      throw UserError(fmt::format(
          "--labels names {} classes and the classifier has {}: give one name a class, in "
          "class order",
          request_.labels.size(),
          classes_));
    }
    rows_.assign(part.examples.size(), "");
    for (int64_t e = 0; e < probs.size(0); ++e) {
      const auto i = static_cast<size_t>(e);
      const int64_t best = predicted[e].item<int64_t>();
      rows_[i] = request_.json ? json_row(part, i, best, p[e]) : tsv_row(part, i, best, p[e]);
    }
  }

  std::string tsv_row(
      const formats::ExamplePart& part,
      size_t i,
      int64_t best,
      const torch::TensorAccessor<double, 1>& p) const {
    std::string row = fmt::format("{}\t{}", part.lines[i], best);
    for (int64_t c = 0; c < classes_; ++c) {
      row += fmt::format("\t{:.6f}", p[c]);
    }
    row += reader_.labelled() ? fmt::format("\t{}", part.examples[i].label) : "";
    row += request_.labels.empty() ? "" : "\t" + request_.labels[static_cast<size_t>(best)];
    if (has_ids_) {
      return row + "\t" + part.ids[i] + "\n";
    }
    // The text, readable in one field: its tabs and line ends as spaces.
    std::string text = part.examples[i].text;
    std::replace_if(
        text.begin(), text.end(), [](char c) { return c == '\t' || c == '\r'; }, ' ');
    return row + "\t" + text + "\n";
  }

  std::string json_row(
      const formats::ExamplePart& part,
      size_t i,
      int64_t best,
      const torch::TensorAccessor<double, 1>& p) const {
    nlohmann::ordered_json row{{"line", part.lines[i]}};
    if (has_ids_) {
      row["id"] = part.ids[i];
    }
    row["text"] = part.examples[i].text;
    row["label"] = class_name(best);
    row["predicted"] = best;
    nlohmann::ordered_json probs = nlohmann::ordered_json::object();
    for (int64_t c = 0; c < classes_; ++c) {
      const auto name = class_name(c);
      probs[name.is_string() ? name.get<std::string>() : std::to_string(c)] = p[c];
    }
    row["probs"] = probs;
    if (reader_.labelled()) {
      row["gold"] = class_name(part.examples[i].label);
    }
    return row.dump() + "\n";
  }

  const config::Config& config_;
  sources::Dataset& data_;
  const PredictRequest& request_;
  formats::ExampleReader reader_;
  run::Progress progress_;
  infer::ExampleClassifier classifier_;
  std::vector<std::string> rows_;
  int64_t classes_ = 0;
  bool has_ids_ = false;
  bool header_written_ = false;
  int64_t done_ = 0;
  /// the totals of the examples written (a part cut short by a signal is not)
  eval::EvalResult written_;
  bool stopped_ = false;
};

} // namespace

int run_prediction(const config::Config& config, const PredictRequest& request) {
  // 1. The flags and the output are checked before anything is read.
  run::setup_logging(config.run.log_level);
  for (size_t c = 0; c < request.labels.size(); ++c) {
    const auto& name = request.labels[c];
    if (name.empty() || !formats::example_problem(name).empty() ||
        name.find_first_of("\t\n\r") != std::string::npos) {
      throw UserError(
          fmt::format("--labels: class {}'s name '{}' is empty or no text of one line", c, name));
    }
    if (std::find(request.labels.begin(), request.labels.begin() + static_cast<long>(c), name) !=
        request.labels.begin() + static_cast<long>(c)) {
      throw UserError(fmt::format("--labels names '{}' twice: give each class its own name", name));
    }
  }
  run::OutputFiles outputs(request.force);
  outputs.add_input("--file", request.file);
  const auto out = outputs.add("--out", request.out);
  // 2. The classifier; a signal from here on stops after the batch at hand.
  runtime::setup_runtime(config.train);
  runtime::install_stop_handlers();
  infer::OpenOptions open;
  open.checkpoint = request.checkpoint;
  open.enforce_memory = request.enforce_memory;
  open.use = "prediction";
  const auto run = infer::TrainedRun::open(config, request.run_dir, open);
  if (!run->classifier()) {
    throw UserError(fmt::format(
        "xl-predict gives a classifier's predictions, and {} is a language model: score a text "
        "with {} --run {} --file FILE (each token's score with --per-token FILE)",
        request.run_dir,
        app_command("xl-eval"),
        shell_quote(request.run_dir)));
  }
  logger().info(
      "predicting {} with {} (step {})", request.file, run->checkpoint().string(), run->step());
  // 3. The predictions, part by part, into --out (whole or not at all) or onto stdout; the
  //    classes named by --labels, else by the run's config.
  PredictRequest named = request;
  if (named.labels.empty()) {
    named.labels = models::class_names(config);
  }
  Predictor predictor(*run, named);
  if (out) {
    run::write_output("--out", *out, [&](const ByteSink& sink) { predictor.run(sink); });
    std::cout << predictor.summary() << std::endl;
  } else {
    predictor.run([](const void* data, size_t size) { std::fwrite(data, 1, size, stdout); });
    std::fflush(stdout);
    logger().info("{}", predictor.summary());
  }
  const int signal = runtime::stop_signal().load();
  return predictor.stopped() && signal != 0 ? 128 + signal : 0;
}

} // namespace xl::app
