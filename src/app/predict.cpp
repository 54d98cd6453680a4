#include "xl/app/predict.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <vector>

#include "xl/app/cli.h"
#include "xl/app/trained_model.h"
#include "xl/eval/evaluator.h"
#include "xl/eval/report.h"
#include "xl/formats/text.h"
#include "xl/models/factory.h"
#include "xl/prep/nsmc.h"
#include "xl/run/logging.h"
#include "xl/run/outputs.h"
#include "xl/run/progress.h"
#include "xl/run/run_dir.h"
#include "xl/runtime/device.h"
#include "xl/runtime/signals.h"
#include "xl/sources/labelled_texts.h"
#include "xl/util/error.h"
#include "xl/util/files.h"

namespace xl::app {

namespace {

namespace fs = std::filesystem;

// Examples of the input, with the line of the file each came from.
struct Part {
  std::vector<formats::LabelledText> examples;
  std::vector<int64_t> lines;
};

// Reads the input's lines into examples, one part of `part_size` at a time.
class ExampleReader {
 public:
  ExampleReader(fs::path file, std::string format, int64_t part_size)
      : file_(std::move(file)), format_(std::move(format)), part_size_(part_size) {}

  // Hands each full part to `on_part`, then the rest; `on_part` returns false to stop reading.
  void read(const std::function<bool(Part&)>& on_part) {
    std::string carry;
    try {
      formats::read_text_pieces(
          file_, "examples file", true, [&](std::string_view piece, bool line_goes_on) {
            carry.append(piece);
            if (line_goes_on) {
              return; // the piece holds no line break: the line goes on
            }
            for (const auto line : formats::split_lines(carry)) {
              add_line(line);
              if (static_cast<int64_t>(part_.examples.size()) == part_size_ && !hand(on_part)) {
                throw Stop{};
              }
            }
            carry.clear();
          });
      if (!part_.examples.empty()) {
        hand(on_part);
      }
    } catch (const Stop&) {
    }
  }

  // Whether the examples carry labels (known once a line was read).
  bool labelled() const {
    return format_ == "nsmc" || format_ == "labelled";
  }
  int64_t examples() const {
    return examples_;
  }
  // Blank lines left out.
  int64_t blank_lines() const {
    return blank_;
  }

 private:
  struct Stop {};

  bool hand(const std::function<bool(Part&)>& on_part) {
    const bool go_on = on_part(part_);
    part_ = {};
    return go_on;
  }

  void add_line(std::string_view line) {
    const std::string where = fmt::format("{}:{}", file_.string(), ++line_);
    // A blank line holds no example (xl-prep leaves empty reviews out too); the line numbers of
    // the others stay the file's.
    if (line.find_first_not_of(" \t\r\v\f") == std::string_view::npos) {
      ++blank_;
      return;
    }
    if (!detected_) {
      detected_ = true;
      detect(line, where);
      if (format_ == "nsmc") {
        if (line != prep::kNsmcHeader) {
          throw UserError(fmt::format(
              "{}: expected NSMC's header 'id<TAB>document<TAB>label' (--format nsmc)", where));
        }
        return;
      }
    }
    if (format_ == "nsmc") {
      part_.examples.push_back(prep::nsmc_review(line, where));
    } else if (format_ == "labelled") {
      part_.examples.push_back(formats::parse_labelled_line(line, where));
    } else {
      part_.examples.push_back({0, std::string(line)});
    }
    part_.lines.push_back(line_);
    ++examples_;
  }

  // --format auto: from the first line that is not blank.
  void detect(std::string_view line, const std::string& where) {
    if (format_ != "auto") {
      return;
    }
    format_ = line == prep::kNsmcHeader    ? "nsmc"
        : formats::starts_with_label(line) ? "labelled"
                                           : "text";
    spdlog::info("{} reads as {} (--format)", file_.string(), format_);
    // "positive<TAB>...", "-1<TAB>...": labelled text whose labels are no class numbers.
    if (const size_t tab = line.find('\t'); format_ == "text" && tab != std::string_view::npos) {
      spdlog::warn(
          "{}: '{}' before a tab is no class number (0, 1, ...), so every line is read as plain "
          "text, tabs and all, without gold labels; --format labelled says which lines are wrong",
          where,
          line.substr(0, std::min<size_t>(tab, 40)));
    }
  }

  fs::path file_;
  std::string format_;
  int64_t part_size_;
  Part part_;
  int64_t line_ = 0;
  int64_t examples_ = 0;
  bool detected_ = false;
  int64_t blank_ = 0;
};

// The lines of a file, for the progress's total; 0 (none known) for a pipe, read once.
int64_t count_lines(const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    return 0;
  }
  int64_t lines = 0;
  read_file_chunks(file, "examples file", [&](const void* data, size_t size) {
    const auto* bytes = static_cast<const char*>(data);
    lines += std::count(bytes, bytes + size, '\n');
  });
  return lines;
}

// The model's predictions, part by part, as TSV rows in file order.
class Predictor {
 public:
  Predictor(
      const config::Config& config,
      sources::Dataset& data,
      models::LanguageModelImpl& model,
      const torch::Device& device,
      const PredictRequest& request)
      : config_(config),
        data_(data),
        request_(request),
        reader_(request.file, request.format, config.eval.batch_size * sources::kGroupBatches),
        progress_(count_lines(request.file)),
        classifier_(data, model, device, config.train.bf16) {
    progress_.count_as("ex");
  }

  // Writes the TSV to `sink`.
  void run(const ByteSink& sink) {
    reader_.read([&](Part& part) {
      const auto probs = classifier_.classify(
          part.examples, request_.file, [] { return runtime::stop_signal().load() != 0; });
      if (!probs) {
        stopped_ = true;
        return false; // the part at hand is left out whole
      }
      add_rows(part, *probs);
      if (!header_written_ && classes_ > 0) {
        const std::string header = header_line();
        sink(header.data(), header.size());
        header_written_ = true;
      }
      for (const auto& row : rows_) {
        sink(row.data(), row.size());
      }
      done_ += static_cast<int64_t>(rows_.size());
      written_ = classifier_.result();
      progress_.update(done_, static_cast<int64_t>(rows_.size()));
      if (progress_.due(config_.run.progress_seconds)) {
        spdlog::info("{}", progress_.line("example"));
      }
      return true;
    });
    if (reader_.examples() == 0) {
      throw UserError(fmt::format("{} holds no examples to predict", request_.file));
    }
    if (reader_.blank_lines() > 0) {
      spdlog::warn(
          "{}: {} blank lines left out (no text to classify); the rows keep the file's line "
          "numbers",
          request_.file,
          reader_.blank_lines());
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
    std::string header = "line\tpredicted";
    for (int64_t c = 0; c < classes_; ++c) {
      header += fmt::format("\tprob_{}", c);
    }
    return header + (reader_.labelled() ? "\tgold\n" : "\n");
  }

  // Each example's row, in the part's order.
  void add_rows(const Part& part, const torch::Tensor& probs) {
    const auto predicted = probs.argmax(1);
    const auto p = probs.accessor<double, 2>();
    classes_ = probs.size(1);
    rows_.assign(part.examples.size(), "");
    for (int64_t e = 0; e < probs.size(0); ++e) {
      const auto i = static_cast<size_t>(e);
      std::string row = fmt::format("{}\t{}", part.lines[i], predicted[e].item<int64_t>());
      for (int64_t c = 0; c < classes_; ++c) {
        row += fmt::format("\t{:.6f}", p[e][c]);
      }
      row += reader_.labelled() ? fmt::format("\t{}\n", part.examples[i].label) : "\n";
      rows_[i] = std::move(row);
    }
  }

  const config::Config& config_;
  sources::Dataset& data_;
  const PredictRequest& request_;
  ExampleReader reader_;
  run::Progress progress_;
  ExampleClassifier classifier_;
  std::vector<std::string> rows_;
  int64_t classes_ = 0;
  bool header_written_ = false;
  int64_t done_ = 0;
  /// the totals of the examples written (a part cut short by a signal is not)
  eval::EvalResult written_;
  bool stopped_ = false;
};

} // namespace

ExampleClassifier::ExampleClassifier(
    sources::Dataset& data,
    models::LanguageModelImpl& model,
    const torch::Device& device,
    bool bf16)
    : data_(data), evaluator_(model, options(device, bf16)) {}

eval::EvalOptions ExampleClassifier::options(const torch::Device& device, bool bf16) {
  eval::EvalOptions o;
  o.device = device;
  o.bf16 = bf16;
  // Each batch row's probabilities, at its example's place (the batch's target_index).
  o.on_output = [this](const sources::Batch& batch, const models::ModelOutput& out) {
    const auto probs = torch::softmax(out.logits.to(torch::kCPU, torch::kDouble), 1);
    const auto rows = batch.target_index[0].to(torch::kLong);
    if (probs_.size(1) != probs.size(1)) {
      probs_ = torch::zeros({probs_.size(0), probs.size(1)}, torch::kDouble);
    }
    probs_.index_copy_(0, rows, probs);
  };
  return o;
}

std::optional<torch::Tensor> ExampleClassifier::classify(
    const std::vector<formats::LabelledText>& examples,
    const std::string& name,
    const std::function<bool()>& stop) {
  probs_ = torch::zeros({static_cast<int64_t>(examples.size()), 0}, torch::kDouble);
  const auto source = data_.example_batches(examples, name);
  while (auto batch = source->next()) {
    if (stop && stop()) {
      return std::nullopt;
    }
    evaluator_.consume(*batch, false);
  }
  return probs_.contiguous();
}

int run_prediction(const config::Config& config, const PredictRequest& request) {
  // 1. The output is checked before anything is read.
  run::setup_logging(config.run.log_level);
  const run::RunPaths paths = run::paths_of(request.run_dir);
  run::OutputFiles outputs(request.force);
  outputs.add_input("--file", request.file);
  const auto out = outputs.add("--out", request.out);
  // 2. The classifier; a signal from here on stops after the batch at hand.
  runtime::setup_runtime(config.train);
  runtime::install_stop_handlers();
  const auto dataset = models::open_dataset(config);
  if (!dataset->labelled()) {
    throw UserError(fmt::format(
        "xl-predict gives a classifier's predictions, and {} is a language model: score a text "
        "with {} --run {} --file FILE (each token's score with --per-token FILE)",
        request.run_dir,
        app_command("xl-eval"),
        shell_quote(request.run_dir)));
  }
  const torch::Device device = runtime::pick_device(config.train);
  const auto trained = load_trained_model(
      config, paths, request.checkpoint, *dataset, device, request.enforce_memory, "prediction");
  spdlog::info(
      "predicting {} with {} (step {})", request.file, trained.checkpoint.string(), trained.step);
  // 3. The predictions, part by part, into --out (whole or not at all) or onto stdout.
  Predictor predictor(config, *dataset, *trained.model, device, request);
  if (out) {
    run::create_output_folder("--out", out->has_parent_path() ? out->parent_path() : ".");
    atomic_write(*out, [&](const ByteSink& sink) { predictor.run(sink); });
    std::cout << predictor.summary() << std::endl;
  } else {
    predictor.run([](const void* data, size_t size) { std::fwrite(data, 1, size, stdout); });
    std::fflush(stdout);
    spdlog::info("{}", predictor.summary());
  }
  const int signal = runtime::stop_signal().load();
  return predictor.stopped() && signal != 0 ? 128 + signal : 0;
}

} // namespace xl::app
