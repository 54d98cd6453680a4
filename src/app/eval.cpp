#include "xl/app/eval.h"

#include <fmt/format.h>

#include <iostream>
#include <map>

#include "xl/app/cli.h"
#include "xl/eval/report.h"
#include "xl/infer/scorer.h"
#include "xl/io/safetensors.h"
#include "xl/run/checkpoint.h"
#include "xl/run/logging.h"
#include "xl/run/metrics.h"
#include "xl/run/outputs.h"
#include "xl/runtime/device.h"
#include "xl/runtime/signals.h"
#include "xl/util/error.h"
#include "xl/util/log.h"

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
    logger().info("wrote the {} batches to {}", batches_, path.string());
  }

 private:
  std::map<std::string, torch::Tensor> tensors_;
  int64_t batches_ = 0;
};

// What identifies the result in metrics.jsonl or --json. A checkpoint of another folder is
// recorded as such, so that xl-compare does not show its score as this run's.
nlohmann::json record_fields(
    const EvalRequest& request,
    const infer::TrainedRun& run,
    const infer::Scored& scored) {
  const config::Config& config = run.config();
  const auto owner = run::enclosing_run(run.checkpoint());
  // A file copied in from another run of the same model: its seed, which a resume never
  // changes, is not this run's.
  const auto keys = run::flatten_config(run.saved_config());
  const auto saved = keys.find("train.seed");
  const std::string seed = saved == keys.end() ? std::string() : saved->second;
  const bool same_seed = seed.empty() || seed == std::to_string(config.train.seed);
  const bool own = owner && run::enclosing_run(run.paths().dir) == owner && same_seed;
  if (!own && !request.file) {
    logger().warn(
        "{} is not a checkpoint of {}{}: its result is recorded there as an evaluation of a "
        "checkpoint from elsewhere",
        run.checkpoint().string(),
        run.paths().dir.string(),
        same_seed ? ""
                  : fmt::format(
                        " (it was trained with train.seed {}, the run with {})",
                        seed,
                        config.train.seed));
  }
  nlohmann::json fields{{"step", run.step()}};
  if (request.file) {
    fields["file"] = *request.file;
    fields["run"] = request.run_dir;
  } else {
    fields["split"] = config.eval.split;
  }
  fields["mode"] = config::choice_name(config.eval.mode);
  fields["setting"] = scored.setting;
  fields["eval"] = scored.values;
  fields["checkpoint"] = own ? request.checkpoint : run.checkpoint().string();
  if (!own && !request.file) {
    fields["elsewhere"] = true;
  }
  return fields;
}

// The run, a signal from here on stopping the evaluation after its batch.
std::shared_ptr<const infer::TrainedRun> open_run(
    const config::Config& config,
    const EvalRequest& request,
    bool per_token) {
  runtime::setup_runtime(config.train);
  runtime::install_stop_handlers();
  infer::OpenOptions open;
  open.checkpoint = request.checkpoint;
  open.enforce_memory = request.enforce_memory;
  open.graphs = true;
  auto run = infer::TrainedRun::open(config, request.run_dir, open);
  if (per_token && run->classifier()) {
    throw UserError(fmt::format(
        "--per-token lists the tokens a language model scores, and {} is a classifier: its "
        "predictions, one per example, come from {} --run {} --file FILE",
        request.run_dir,
        app_command("xl-predict"),
        shell_quote(request.run_dir)));
  }
  if (!run->graphs_note().empty()) {
    logger().info("{}", run->graphs_note());
  }
  logger().info("the checkpoint {} (step {})", run->checkpoint().string(), run->step());
  return run;
}

// Why a split's result cannot go into the run's metrics.jsonl (a read-only run, another user's),
// or "" when it can: checked before the evaluation, which then goes on and shows its result.
std::string unrecordable(const fs::path& metrics) {
  try {
    const run::MetricsWriter probe(metrics);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

} // namespace

int run_evaluation(const config::Config& config, const EvalRequest& request) {
  // 1. The outputs are checked before anything is read.
  run::setup_logging(config.run.log_level);
  run::OutputFiles files(request.force);
  files.add_input("--file", request.file);
  const auto json = files.add("--json", request.json);
  const auto per_token = files.add("--per-token", request.per_token);
  const auto dump_batches = files.add("--dump-batches", request.dump_batches);
  // 2. The model and its data, then the evaluation.
  const auto run = open_run(config, request, per_token.has_value());
  const std::string not_recorded = request.file ? "" : unrecordable(run->paths().metrics);
  if (!not_recorded.empty()) {
    logger().warn("{}: the result will be shown, not recorded in the run", not_recorded);
  }
  infer::ScoreOptions options;
  options.scoring = {request.streams, request.permutation};
  options.per_token_file = per_token;
  options.max_batches = request.max_steps;
  options.stop = [] { return runtime::stop_signal().load() != 0; };
  options.progress_seconds = config.run.progress_seconds;
  BatchDump dump;
  if (dump_batches) {
    options.observe = [&](const sources::Batch& batch) { dump.add(batch); };
  }
  const auto scored = request.file
      ? infer::score_text(*run, {*request.file, {}, *request.file, {request.pretokenized}}, options)
      : infer::score_split(*run, config.eval.split, options);
  if (dump_batches) {
    dump.write(*dump_batches, scored.continued);
  }
  const int signal = runtime::stop_signal().load();
  if (scored.result.batches == 0 && signal != 0) {
    std::cout << fmt::format("stopped by signal {} before any batch was scored", signal)
              << std::endl;
    return 128 + signal;
  }
  // 3. The result alone on stdout, for scripts; a split's also in metrics.jsonl, a file's not
  //    (it is no split of the run's); --json as asked.
  auto report = eval::report_evaluation(
      request.file.value_or(config.eval.split),
      scored.result,
      run->data().unit(),
      record_fields(request, *run, scored));
  if (scored.reading) {
    eval::add_text_reading(report, *scored.reading);
  }
  // Beside the usual perplexity where <unk> targets count in it.
  if (scored.in_vocabulary && scored.in_vocabulary->tokens < scored.result.tokens()) {
    eval::add_in_vocabulary(report, scored.in_vocabulary->tokens, scored.in_vocabulary->nll);
  }
  if (!request.file && not_recorded.empty()) {
    run::MetricsWriter(run->paths().metrics, config.run.tensorboard).write(report.record);
  }
  if (json) {
    run::write_output_file("--json", *json, report.record.dump(2) + "\n");
  }
  show_result(report.line);
  return scored.result.stopped && signal != 0 ? 128 + signal : 0;
}

} // namespace xl::app
