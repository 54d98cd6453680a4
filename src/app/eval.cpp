#include "xl/app/eval.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <map>

#include "xl/app/cli.h"
#include "xl/app/trained_model.h"
#include "xl/eval/per_token.h"
#include "xl/eval/report.h"
#include "xl/eval/setup.h"
#include "xl/io/safetensors.h"
#include "xl/models/factory.h"
#include "xl/run/checkpoint.h"
#include "xl/run/logging.h"
#include "xl/run/metrics.h"
#include "xl/run/outputs.h"
#include "xl/run/run_dir.h"
#include "xl/runtime/device.h"
#include "xl/runtime/signals.h"
#include "xl/sources/batch.h"
#include "xl/sources/dataset.h"
#include "xl/util/error.h"
#include "xl/util/scratch_file.h"

namespace xl::app {

namespace {

namespace fs = std::filesystem;

// --dump-batches: every scored batch under batch_<s>/<field>, so that another implementation
// can be fed exactly what xl scored.
class BatchDump {
 public:
  void add(const sources::Batch& batch) {
    for (const auto& [name, tensor] : sources::named_fields(batch)) {
      tensors_.emplace(fmt::format("batch_{}/{}", batches_, name), tensor);
    }
    ++batches_;
  }

  void write(const fs::path& path, bool continues_streams) const {
    if (path.has_parent_path()) {
      run::create_output_folder("--dump-batches", path.parent_path());
    }
    io::save_safetensors(
        path.string(),
        tensors_,
        {{"batches", std::to_string(batches_)},
         {"continues_streams", continues_streams ? "true" : "false"}});
    spdlog::info("wrote the {} batches to {}", batches_, path.string());
  }

 private:
  std::map<std::string, torch::Tensor> tensors_;
  int64_t batches_ = 0;
};

// --per-token lists a language model's tokens; a classifier's predictions are xl-predict's.
void refuse_per_token_of_classifier(const EvalRequest& request, const sources::Dataset& data) {
  if (request.per_token && data.labelled()) {
    throw UserError(fmt::format(
        "--per-token lists the tokens a language model scores, and {} is a classifier: its "
        "predictions, one per example, come from {} --run {} --file FILE",
        request.run_dir,
        app_command("xl-predict"),
        shell_quote(request.run_dir)));
  }
}

// What identifies the result in metrics.jsonl or --json. A checkpoint of another folder is
// recorded as such, so that xl-compare does not show its score as this run's.
nlohmann::json record_fields(
    const config::Config& config,
    const EvalRequest& request,
    const run::RunPaths& paths,
    const TrainedModel& trained,
    const std::string& setting,
    const nlohmann::json& values) {
  const auto owner = run::enclosing_run(trained.checkpoint);
  // A file copied in from another run of the same model: its seed, which a resume never
  // changes, is not this run's.
  const auto seed_of = [](const std::string& yaml) {
    const auto keys = run::flatten_config(yaml);
    const auto it = keys.find("train.seed");
    return it == keys.end() ? std::string() : it->second;
  };
  const std::string seed = seed_of(trained.saved_config);
  const bool same_seed = seed.empty() || seed == std::to_string(config.train.seed);
  const bool own = owner && run::enclosing_run(paths.dir) == owner && same_seed;
  if (!own && !request.file) {
    spdlog::warn(
        "{} is not a checkpoint of {}{}: its result is recorded there as an evaluation of a "
        "checkpoint from elsewhere",
        trained.checkpoint.string(),
        paths.dir.string(),
        same_seed ? ""
                  : fmt::format(
                        " (it was trained with train.seed {}, the run with {})",
                        seed,
                        config.train.seed));
  }
  nlohmann::json fields{{"step", trained.step}};
  if (request.file) {
    fields["file"] = *request.file;
    fields["run"] = request.run_dir;
  } else {
    fields["split"] = config.eval.split;
  }
  fields["mode"] = config::choice_name(config.eval.mode);
  fields["setting"] = setting;
  fields["eval"] = values;
  fields["checkpoint"] = own ? request.checkpoint : trained.checkpoint.string();
  if (!own && !request.file) {
    fields["elsewhere"] = true;
  }
  return fields;
}

// What reading a user's file adds to the result: the share of it the vocabulary lacks (a
// warning when it is most of the text) and how a short text was cut.
void add_reading(eval::EvalReport& report, const sources::TextReading& reading) {
  const auto& count = reading.count;
  nlohmann::json read{{"unit", reading.unit}, {"units", count.units}, {"unknown", count.unknown}};
  if (count.unknown > 0) {
    const double share = 100.0 * static_cast<double>(count.unknown) / count.units;
    report.line += fmt::format(
        " | {} of {} {} ({:.1f}%) not in the vocabulary, {}",
        count.unknown,
        count.units,
        reading.unit,
        share,
        reading.unknown_as == "<unk>" ? "read as <unk>" : reading.unknown_as);
    read["unknown_as"] = reading.unknown_as;
    if (2 * count.unknown > count.units) {
      spdlog::warn(
          "{:.1f}% of the {} are not in the run's vocabulary: the score says little about "
          "this text",
          share,
          reading.unit);
    }
  }
  if (!reading.fitted.empty()) {
    read["fitted"] = reading.fitted;
  }
  report.record["read"] = std::move(read);
}

} // namespace

EvalOutputs check_eval_outputs(const EvalRequest& request) {
  run::OutputFiles files(request.force);
  files.add_input("--file", request.file);
  EvalOutputs out;
  out.json = files.add("--json", request.json);
  out.per_token = files.add("--per-token", request.per_token);
  out.dump_batches = files.add("--dump-batches", request.dump_batches);
  return out;
}

Evaluated evaluate_request(
    const config::Config& config,
    const EvalRequest& request,
    const EvalOutputs& outputs,
    sources::Dataset& dataset,
    const TrainedModel& trained,
    const torch::Device& device,
    bool list_tokens) {
  refuse_per_token_of_classifier(request, dataset);
  auto& model = *trained.model;
  auto batches = request.file ? dataset.file_batches(*request.file)
                              : dataset.eval_batches(config.eval.split, false);
  auto reading = std::move(batches.reading);
  const formats::Tokens* in_order = batches.tokens;
  if (reading && !reading->fitted.empty()) {
    spdlog::info("{}", reading->fitted);
  }
  auto setup = eval::eval_setup(config, std::move(batches), false, device);
  setup.options.max_batches = request.max_steps;
  setup.options.unigram = dataset.unigram_baseline();
  setup.options.stop = [] { return runtime::stop_signal().load() != 0; };
  std::shared_ptr<eval::PerTokenListing> listing;
  if (outputs.per_token || list_tokens) {
    listing = std::make_shared<eval::PerTokenListing>(
        outputs.per_token.value_or(scratch_dir() / "per-token"), in_order, [&dataset](int64_t id) {
          return dataset.token_text(id);
        });
    setup.options.log_probs = true;
    setup.options.on_output = [&](const sources::Batch& batch, const models::ModelOutput& out) {
      listing->add(batch, out.log_probs.to(torch::kCPU, torch::kFloat));
    };
  }
  if (const auto note = models::eval_span_note(config); !note.empty()) {
    spdlog::info("{}", note);
  }
  spdlog::info("evaluating on {}: {}", request.file.value_or(config.eval.split), setup.setting);
  BatchDump dump;
  auto result =
      eval::evaluate(model, *setup.source, setup.options, [&](const sources::Batch& batch) {
        if (outputs.dump_batches) {
          dump.add(batch);
        }
      });
  if (outputs.dump_batches) {
    dump.write(*outputs.dump_batches, setup.source->continues_streams());
  }
  if (outputs.per_token) {
    const int64_t rows = listing->write(config.run.progress_seconds);
    spdlog::info("listed {} tokens in {}", rows, outputs.per_token->string());
  }
  return {std::move(result), setup.setting, setup.values, std::move(reading), listing};
}

int run_evaluation(const config::Config& config, const EvalRequest& request) {
  // 1. The outputs are checked before anything is read.
  run::setup_logging(config.run.log_level);
  const run::RunPaths paths = run::paths_of(request.run_dir);
  const EvalOutputs outputs = check_eval_outputs(request);
  // 2. The model and its data; a signal from here on stops the evaluation after its batch.
  runtime::setup_runtime(config.train);
  runtime::install_stop_handlers();
  const auto dataset = models::open_dataset(config);
  const torch::Device device = runtime::pick_device(config.train);
  const auto trained = load_trained_model(
      config, paths, request.checkpoint, *dataset, device, request.enforce_memory);
  if (const auto graphs = models::use_cuda_graphs(*trained.model, config, device);
      !graphs.empty()) {
    spdlog::info("{}", graphs);
  }
  spdlog::info("the checkpoint {} (step {})", trained.checkpoint.string(), trained.step);
  // 3. The evaluation.
  const auto done = evaluate_request(config, request, outputs, *dataset, trained, device);
  const int signal = runtime::stop_signal().load();
  if (done.result.batches == 0 && signal != 0) {
    std::cout << fmt::format("stopped by signal {} before any batch was scored", signal)
              << std::endl;
    return 128 + signal;
  }
  // 4. The result alone on stdout, for scripts; a split's also in metrics.jsonl, a file's not
  //    (it is no split of the run's); --json as asked.
  auto report = eval::report_evaluation(
      request.file.value_or(config.eval.split),
      done.result,
      dataset->unit(),
      record_fields(config, request, paths, trained, done.setting, done.values));
  if (done.reading) {
    add_reading(report, *done.reading);
  }
  spdlog::info("{}", report.line);
  if (!request.file) {
    run::MetricsWriter(paths.metrics, config.run.tensorboard).write(report.record);
  }
  if (outputs.json) {
    run::write_output_file("--json", *outputs.json, report.record.dump(2) + "\n");
  }
  std::cout << report.line << std::endl;
  return done.result.stopped && signal != 0 ? 128 + signal : 0;
}

} // namespace xl::app
