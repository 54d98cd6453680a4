#include "xl/app/eval.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <map>

#include "xl/app/trained_model.h"
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
#include "xl/sources/batch.h"
#include "xl/sources/dataset.h"

namespace xl::app {

namespace {

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

  void write(const std::string& path, bool continues_streams) const {
    const std::filesystem::path file(path);
    if (file.has_parent_path()) {
      run::create_output_folder("--dump-batches", file.parent_path());
    }
    io::save_safetensors(
        path,
        tensors_,
        {{"batches", std::to_string(batches_)},
         {"continues_streams", continues_streams ? "true" : "false"}});
    spdlog::info("wrote the {} batches to {}", batches_, path);
  }

 private:
  std::map<std::string, torch::Tensor> tensors_;
  int64_t batches_ = 0;
};

// What metrics.jsonl records with the scores. A checkpoint of another folder is recorded as
// such, so that xl-compare does not show its score as this run's.
nlohmann::json record_fields(
    const config::Config& config,
    const EvalRequest& request,
    const run::RunPaths& paths,
    const std::filesystem::path& checkpoint,
    int64_t step,
    const std::string& split,
    const std::string& setting) {
  const auto owner = run::enclosing_run(checkpoint);
  const bool own = owner && run::enclosing_run(paths.dir) == owner;
  if (!own) {
    spdlog::warn(
        "{} is not a checkpoint of {}: its result is recorded there as an evaluation of a "
        "checkpoint from elsewhere",
        checkpoint.string(),
        paths.dir.string());
  }
  nlohmann::json fields{
      {"step", step},
      {"split", split},
      {"mode", config::choice_name(config.eval.mode)},
      {"setting", setting},
      {"checkpoint", own ? request.checkpoint : checkpoint.string()}};
  if (!own) {
    fields["elsewhere"] = true;
  }
  return fields;
}

} // namespace

int run_evaluation(const config::Config& config, const EvalRequest& request) {
  // 1. The outputs are checked before anything is read.
  run::setup_logging(config.run.log_level);
  const run::RunPaths paths = run::paths_of(request.run_dir);
  if (request.dump_batches) {
    run::check_output_file("--dump-batches", *request.dump_batches, request.force);
  }
  // 2. The model and the batches.
  runtime::setup_runtime(config.train);
  const auto dataset = models::open_dataset(config);
  const torch::Device device = runtime::pick_device(config.train);
  const auto [model, checkpoint, step] = load_trained_model(
      config, paths, request.checkpoint, *dataset, device, request.enforce_memory);
  if (const auto graphs = models::use_cuda_graphs(*model, config, device); !graphs.empty()) {
    spdlog::info("{}", graphs);
  }
  const std::string split = request.file.value_or(config.eval.split);
  auto setup = eval::eval_setup(
      config,
      request.file ? dataset->file_batches(*request.file) : dataset->eval_batches(split, false),
      false,
      device);
  setup.options.max_batches = request.max_steps;
  setup.options.unigram = dataset->unigram_baseline();
  if (const auto note = models::eval_span_note(config); !note.empty()) {
    spdlog::info("{}", note);
  }
  spdlog::info(
      "evaluating {} (step {}) on {}: {}", checkpoint.string(), step, split, setup.setting);
  // 3. The evaluation, and the batches it scored when asked.
  BatchDump dump;
  const auto result =
      eval::evaluate(*model, *setup.source, setup.options, [&](const sources::Batch& batch) {
        if (request.dump_batches) {
          dump.add(batch);
        }
      });
  if (request.dump_batches) {
    dump.write(*request.dump_batches, setup.source->continues_streams());
  }
  // 4. The record in metrics.jsonl, and the result alone on stdout, for scripts.
  const auto report = eval::report_evaluation(
      split,
      result,
      dataset->unit(),
      record_fields(config, request, paths, checkpoint, step, split, setup.setting));
  spdlog::info("{}", report.line);
  run::MetricsWriter(paths.metrics, config.run.tensorboard).write(report.record);
  std::cout << report.line << std::endl;
  return 0;
}

} // namespace xl::app
