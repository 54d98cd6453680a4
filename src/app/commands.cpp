#include "xl/app/commands.h"

#include <c10/cuda/CUDAFunctions.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>

#include "xl/app/cli.h"
#include "xl/config/config.h"
#include "xl/data/batch.h"
#include "xl/data/dataset.h"
#include "xl/data/text.h"
#include "xl/eval/generate.h"
#include "xl/eval/report.h"
#include "xl/eval/setup.h"
#include "xl/io/archive.h"
#include "xl/io/safetensors.h"
#include "xl/models/factory.h"
#include "xl/models/hf_export.h"
#include "xl/models/hf_import.h"
#include "xl/models/memory_estimate.h"
#include "xl/run/average.h"
#include "xl/run/checkpoint.h"
#include "xl/run/device.h"
#include "xl/run/distributed.h"
#include "xl/run/logging.h"
#include "xl/run/metrics.h"
#include "xl/run/outputs.h"
#include "xl/run/progress.h"
#include "xl/run/run_dir.h"
#include "xl/train/parameter_groups.h"
#include "xl/train/trainer.h"
#include "xl/util/error.h"
#include "xl/util/files.h"

namespace xl::app {

namespace {

// train.init_from: the weights of another run (its best checkpoint) or checkpoint, except the
// parameters it lacks (a new head) and those train.init_exclude names, which keep their fresh
// values. Returns what it did, for the log.
std::string load_initial_weights(
    const config::Config& config,
    models::LanguageModelImpl& model) {
  std::filesystem::path path = *config.train.init_from;
  if (std::filesystem::is_directory(path)) {
    path = run::run_paths(path).best_checkpoint();
  }
  const auto excluded = train::parameters_named(
      config, model, config.train.init_exclude, "train.init_exclude");
  std::map<std::string, torch::Tensor> fresh;
  for (const auto& name : excluded) {
    fresh.emplace(name, model.named_parameters()[name].detach().clone());
  }
  torch::serialize::InputArchive archive;
  const auto info = run::load_checkpoint(path, archive);
  for (const auto& difference :
       run::config_differences(info.config, config::dump(config), {"model"})) {
    if (difference.rfind("model.type:", 0) == 0) {
      throw UserError(fmt::format(
          "train.init_from: {} holds another model family ({})",
          path.string(),
          difference));
    }
  }
  auto left = io::read_module_matching(archive, "model", model, path.string());
  {
    torch::NoGradGuard no_grad;
    for (const auto& [name, value] : fresh) {
      model.named_parameters()[name].copy_(value);
    }
  }
  // The checkpoint's tensors this model has no place for (a head it lacks).
  std::vector<std::string> skipped;
  const auto params = model.named_parameters();
  const auto buffers = model.named_buffers();
  for (const auto& item : io::read_tensors(archive, "model")) {
    if (!params.contains(item.first) && !buffers.contains(item.first)) {
      skipped.push_back(item.first);
    }
  }
  return fmt::format(
      "initialised from {} (step {}): {} of {} parameters loaded{}{}{}{}{}{}",
      path.string(),
      info.step,
      params.size() - left.size() - excluded.size(),
      params.size(),
      left.empty() ? "" : "; fresh, not in the checkpoint: ",
      fmt::join(left, ", "),
      excluded.empty() ? "" : "; fresh, train.init_exclude: ",
      fmt::join(excluded, ", "),
      skipped.empty() ? "" : "; skipped, not in this model: ",
      fmt::join(skipped, ", "));
}

// What a run did, for stdout (the logs go to stderr).
std::string training_summary(
    const config::Config& config,
    const run::RunPaths& paths,
    const train::TrainResult& result,
    data::VocabKind unit) {
  const int64_t max_step = config.train.max_step;
  std::string how = "finished";
  std::string next =
      fmt::format("evaluate: xl-eval --run {}", paths.dir.string());
  if (result.signal != 0) {
    how = fmt::format("stopped by signal {}", result.signal);
  } else if (result.step < max_step) {
    how = "stopped (--stop-at-step)";
  }
  if (result.step < max_step) {
    next = fmt::format(
        "continue: xl-train --config {} --resume", paths.config.string());
  }
  std::string text = fmt::format(
      "{}: {} at step {} of {} ({} steps from step {} in {})\n",
      paths.dir.string(),
      how,
      result.step,
      max_step,
      result.step - result.first_step,
      result.first_step,
      run::format_duration(result.seconds));
  if (!result.last_train.empty()) {
    text += fmt::format(
        "  train (last logged window){}\n",
        eval::terms_line(result.last_train, unit));
  }
  if (!result.last_valid.empty()) {
    text += fmt::format(
        "  valid (step {}){}\n",
        result.last_valid_step,
        eval::terms_line(result.last_valid, unit));
  }
  if (std::isfinite(result.best_valid_loss)) {
    text += fmt::format(
        "  best validation loss {:.4f}: {}\n",
        result.best_valid_loss,
        paths.best_checkpoint().string());
  }
  text +=
      fmt::format("  last checkpoint: {}\n", paths.last_checkpoint().string());
  text += fmt::format("  {}\n", next);
  return text;
}

// A trained model, read from a checkpoint of a run whose config and vocabulary it must match.
struct TrainedModel {
  models::LanguageModel model;
  std::filesystem::path checkpoint;
  int64_t step = 0;
};

TrainedModel load_trained_model(
    const config::Config& config,
    const run::RunPaths& paths,
    const std::string& checkpoint_name,
    const data::Dataset& dataset,
    const torch::Device& device,
    bool enforce_memory,
    const char* use = "evaluation") {
  models::check_memory(
      models::estimate_evaluation_memory(config, dataset.vocab_size()),
      use,
      device,
      enforce_memory);
  TrainedModel out{
      models::build_model(config, dataset.vocab_size()),
      paths.checkpoint(checkpoint_name)};
  torch::serialize::InputArchive archive;
  const auto info = run::load_checkpoint(out.checkpoint, archive);
  run::require_matching_config(
      out.checkpoint, info.config, config::dump(config), {"model", "data"});
  run::require_same_vocabulary(
      out.checkpoint,
      info.vocabulary,
      dataset.vocabulary(),
      dataset.vocabulary_file());
  io::read_module(archive, "model", *out.model, out.checkpoint.string());
  out.model->to(device);
  out.step = info.step;
  return out;
}

} // namespace

int run_training(
    const config::Config& config,
    bool resume,
    std::optional<int64_t> stop_at,
    bool enforce_memory) {
  // Data, model and initial weights first: a bad corpus, batch setting, size or init_from
  // fails before the run directory is written.
  run::setup_runtime(config.train);
  // torchrun's environment: this process is one rank of a data-parallel run.
  const auto env = run::distributed_env();
  const int64_t ranks = env ? env->world_size : 1;
  if (config.train.batch_size % (ranks * config.train.batch_chunk) != 0) {
    throw ConfigError(fmt::format(
        "train.batch_size {} must split into {} processes x train.batch_chunk {}",
        config.train.batch_size,
        ranks,
        config.train.batch_chunk));
  }
  torch::Device device = run::pick_device(config.train);
  if (env && device.is_cuda()) {
    // One GPU per process: LOCAL_RANK's, also for tensors made without a device index.
    device = torch::Device(
        torch::kCUDA, static_cast<c10::DeviceIndex>(env->local_rank));
    c10::cuda::set_device(device.index());
  }
  const auto dataset = data::open_dataset(config);
  dataset->prepare_training();
  models::check_memory(
      models::estimate_training_memory(config, dataset->vocab_size()),
      "training",
      device,
      enforce_memory);
  auto model = models::build_model(config, dataset->vocab_size());
  const std::string initialised = config.train.init_from && !resume
      ? load_initial_weights(config, *model)
      : "";
  // Which parameters train (a bad train.freeze fails here, before the run directory is
  // written); the frozen ones compute no gradient, and data-parallel training reduces the
  // others only.
  train::plan_parameters(config, *model);
  std::unique_ptr<run::Group> group;
  run::RunPaths paths;
  if (env) {
    // A dead peer is noticed at once; a hung one after this long.
    group = std::make_unique<run::Group>(
        *env,
        device,
        std::chrono::milliseconds(
            static_cast<int64_t>(config.train.dist_start_timeout_s * 1000.0)),
        std::chrono::minutes(30));
    // Rank 0 alone prepares and locks the run directory; the others learn whether it could.
    std::string failure;
    if (env->rank == 0) {
      try {
        paths = run::prepare_run_directory(config, resume);
      } catch (const UserError& e) {
        failure = e.what();
      }
    }
    if (group->any(!failure.empty())) {
      throw UserError(
          env->rank == 0
              ? failure
              : fmt::format(
                    "rank {}: rank 0 could not prepare the run directory (its "
                    "error says why)",
                    env->rank));
    }
    if (env->rank != 0) {
      paths = run::run_paths(run::run_directory(config));
    }
    // The other ranks repeat rank 0's lines: they show only warnings and errors.
    run::setup_logging(
        env->rank == 0 ? config.run.log_level : "warn",
        env->rank == 0 ? std::optional(paths.log) : std::nullopt);
    spdlog::info(
        "data-parallel training on {} processes: each trains {} of every batch's {} rows",
        env->world_size,
        config.train.batch_size / env->world_size,
        config.train.batch_size);
  } else {
    paths = run::prepare_run_directory(config, resume);
    run::setup_logging(config.run.log_level, paths.log);
  }
  spdlog::info(
      "run directory {} (resolved config: {})",
      paths.dir.string(),
      paths.config.string());
  spdlog::info("data {}: {}", config.data.dir, dataset->describe());
  if (!initialised.empty()) {
    spdlog::info("{}", initialised);
  }
  model->to(device);
  std::unique_ptr<train::DataParallel> parallel;
  if (group) {
    std::vector<std::pair<std::string, torch::Tensor>> named;
    for (const auto& item : model->named_parameters()) {
      if (item.value().requires_grad()) {
        named.emplace_back(item.key(), item.value());
      }
    }
    parallel = std::make_unique<train::DataParallel>(*group, named);
  }
  train::install_stop_handlers();
  train::Trainer trainer(
      config, paths, *dataset, model, device, parallel.get());
  const train::TrainResult result = trainer.run(resume, stop_at);
  if (!env || env->rank == 0) {
    std::cout << training_summary(config, paths, result, dataset->unit())
              << std::flush;
  }
  return result.signal != 0 ? 128 + result.signal : 0;
}

int run_evaluation(const config::Config& config, const EvalRequest& request) {
  run::setup_logging(config.run.log_level);
  const run::RunPaths paths = run::run_paths(request.run_dir);
  if (request.dump_batches) {
    run::check_output_file(
        "--dump-batches", *request.dump_batches, request.force);
  }
  run::setup_runtime(config.train);
  const auto dataset = data::open_dataset(config);
  const torch::Device device = run::pick_device(config.train);
  const auto [model, checkpoint, step] = load_trained_model(
      config,
      paths,
      request.checkpoint,
      *dataset,
      device,
      request.enforce_memory);

  const std::string split = request.file.value_or(config.eval.split);
  auto setup = eval::eval_setup(
      config,
      request.file ? dataset->file_batches(*request.file)
                   : dataset->eval_batches(split, false),
      false,
      device);
  setup.options.max_batches = request.max_steps;
  if (models::trained_without_memory(config) &&
      config.eval.mem_len.value_or(0) > 0) {
    spdlog::info(
        "the model was trained without memory (model.transformer_xl.mem_len 0): evaluated "
        "without one, not with eval.mem_len {} (--set eval.mem_len={} asks for it)",
        *config.eval.mem_len,
        *config.eval.mem_len);
  }
  spdlog::info(
      "evaluating {} (step {}) on {}: {}",
      checkpoint.string(),
      step,
      split,
      setup.setting);
  // --dump-batches: every scored batch under batch_<s>/<field>, so that another implementation
  // can be fed exactly what xl scored.
  std::map<std::string, torch::Tensor> dumped;
  int64_t dumped_batches = 0;
  setup.options.unigram = dataset->unigram_baseline();
  const auto result = eval::evaluate(
      *model, *setup.source, setup.options, [&](const data::Batch& b) {
        if (!request.dump_batches) {
          return;
        }
        for (const auto& [name, tensor] : data::named_fields(b)) {
          dumped.emplace(
              fmt::format("batch_{}/{}", dumped_batches, name), tensor);
        }
        ++dumped_batches;
      });
  if (request.dump_batches) {
    const std::filesystem::path file(*request.dump_batches);
    if (file.has_parent_path()) {
      run::create_output_folder("--dump-batches", file.parent_path());
    }
    io::save_safetensors(
        *request.dump_batches,
        dumped,
        {{"batches", std::to_string(dumped_batches)},
         {"continues_streams",
          setup.source->continues_streams() ? "true" : "false"}});
    spdlog::info(
        "wrote the {} batches to {}", dumped_batches, *request.dump_batches);
  }
  // A checkpoint of another folder is recorded as such, so that xl-compare does not show its
  // score as this run's.
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
      {"setting", setup.setting},
      {"checkpoint", own ? request.checkpoint : checkpoint.string()}};
  if (!own) {
    fields["elsewhere"] = true;
  }
  const auto report =
      eval::report_evaluation(split, result, dataset->unit(), fields);
  spdlog::info("{}", report.line);
  run::MetricsWriter(paths.metrics, config.run.tensorboard)
      .write(report.record);
  // The result alone on stdout, for scripts.
  std::cout << report.line << std::endl;
  return 0;
}

int run_sample(const config::Config& config, const SampleRequest& request) {
  run::setup_logging(config.run.log_level);
  if (config.model.type == config::ModelType::kXLNet) {
    throw UserError(fmt::format(
        "{} is an XLNet run: xl-sample generates from causal language models "
        "(transformer_xl, char_transformer), and XLNet's permutation LM scores targets "
        "instead",
        request.run_dir));
  }
  // Checked here, with messages of their own: a NaN passes CLI11's range checks, and a
  // temperature below 1e-6 overflows the scaled log-probabilities.
  if (!(request.temperature == 0.0 ||
        (request.temperature >= 1e-6 && request.temperature <= 1e6))) {
    throw UserError(fmt::format(
        "--temperature {}: expected 0 (always the most probable token) or a number from "
        "1e-06 to 1e+06",
        request.temperature));
  }
  if (!(request.top_p > 0.0 && request.top_p <= 1.0)) {
    throw UserError(fmt::format(
        "--top-p {}: expected a probability above 0, up to 1 (1: every token)",
        request.top_p));
  }
  if (request.seed < 0) {
    throw UserError(
        fmt::format("--seed {}: expected a whole number >= 0", request.seed));
  }
  const run::RunPaths paths = run::run_paths(request.run_dir);
  run::setup_runtime(config.train);
  const auto dataset = data::open_dataset(config);
  const data::Vocab& vocab = dataset->text_vocab();
  const torch::Device device = run::pick_device(config.train);
  // The samples are the batch rows: the memory check counts them.
  auto sampling = config;
  sampling.eval.batch_size = request.samples;
  const auto [model, checkpoint, step] = load_trained_model(
      sampling,
      paths,
      request.checkpoint,
      *dataset,
      device,
      request.enforce_memory,
      "sampling");

  // Words are UTF-8 text; bytes (enwik8) may be anything.
  const std::string text = !request.prompt_file ? request.prompt
      : vocab.kind() == data::VocabKind::kWord
      ? data::read_utf8_text(*request.prompt_file, "prompt file")
      : read_file(*request.prompt_file, "prompt file");
  auto ids = vocab.encode(
      text, request.prompt_file.value_or("--prompt"), /*open_end=*/true);
  if (const int64_t unk = vocab.index("<unk>"); unk >= 0) {
    // Words outside the vocabulary became <unk>: the model reads those, not what stdout echoes.
    const auto read_as_unk = std::count(ids.begin(), ids.end(), unk);
    int64_t written = 0;
    for (const auto word : data::split_words(text)) {
      written += word == "<unk>" ? 1 : 0;
    }
    if (read_as_unk > written) {
      spdlog::warn(
          "{} of the prompt's words are not in the vocabulary of {}: the model reads them "
          "as <unk>",
          read_as_unk - written,
          vocab.size());
    }
  }
  if (ids.empty()) { // a new line: what follows a line break in training
    const int64_t start =
        vocab.index(vocab.kind() == data::VocabKind::kWord ? "<eos>" : "\n");
    if (start < 0) {
      throw UserError(
          "the vocabulary has no line break to start from: give a --prompt");
    }
    ids.push_back(start);
  }
  eval::GenerateOptions options;
  options.sampling = {request.temperature, request.top_k, request.top_p};
  options.max_tokens = request.tokens;
  options.span = models::eval_span(config, false);
  options.segment = config.eval.tgt_len.value_or(config.train.tgt_len);
  const int64_t mem_len = options.span.mem_len.value_or(0);
  options.window =
      request.window.value_or(mem_len > 0 ? mem_len : config.train.tgt_len);
  // Learned position tables bound the window a model can re-read.
  const auto& txl = config.model.transformer_xl;
  std::optional<int64_t> n_ctx;
  if (config.model.type == config::ModelType::kCharTransformer) {
    n_ctx = config.model.char_transformer.n_ctx;
  } else if (txl.attn_type == config::AttnType::kLearned) {
    n_ctx = txl.n_ctx.value_or(txl.mem_len + config.train.tgt_len);
  }
  if (n_ctx && options.window > *n_ctx) {
    throw UserError(fmt::format(
        "--window {}: this model's learned position tables hold {} positions (n_ctx); give "
        "--window {} or less",
        options.window,
        *n_ctx,
        *n_ctx));
  }
  options.use_memory = !request.no_memory;
  options.seed = static_cast<uint64_t>(request.seed);
  options.device = device;
  spdlog::info(
      "sampling {} x {} tokens from {} (step {}) after a prompt of {} tokens: temperature "
      "{}, top-k {}, top-p {}, seed {}",
      request.samples,
      request.tokens,
      checkpoint.string(),
      step,
      ids.size(),
      request.temperature,
      request.top_k,
      request.top_p,
      request.seed);

  const auto prompt =
      torch::tensor(ids).unsqueeze(1).repeat({1, request.samples}); // [P, B]
  // The prompt as given, then the continuation: one sample streams as it is drawn.
  std::cout << text << std::flush;
  const auto is_word = [&](int64_t id) {
    return vocab.kind() == data::VocabKind::kWord && vocab.token(id) != "<eos>";
  };
  bool after_word = is_word(ids.back());
  const auto generated =
      eval::generate(*model, prompt, options, [&](const torch::Tensor& drawn) {
        if (request.samples == 1) {
          const int64_t id = drawn[0].item<int64_t>();
          std::cout << vocab.decode({id}, after_word) << std::flush;
          after_word = is_word(id);
        }
      });
  if (request.samples > 1) {
    const auto rows = generated.tokens.t().contiguous(); // [B, N]
    for (int64_t b = 0; b < request.samples; ++b) {
      const auto row = rows[b];
      std::cout << fmt::format("\n--- sample {} ---\n", b + 1) << text
                << vocab.decode(
                       {row.data_ptr<int64_t>(),
                        row.data_ptr<int64_t>() + row.numel()},
                       is_word(ids.back()));
    }
  }
  std::cout << std::endl;
  const auto n = static_cast<double>(generated.tokens.numel());
  spdlog::info(
      "{} tokens in {:.2f} s: {:.1f} tokens/s, {}; the prompt read in {:.2f} s; the samples' "
      "perplexity under the model {:.2f}",
      generated.tokens.numel(),
      generated.seconds,
      n / std::max(generated.seconds, 1e-9),
      generated.used_memory
          ? fmt::format("one position per token over a memory of {}", mem_len)
          : fmt::format("re-reading up to {} tokens per token", options.window),
      generated.prompt_seconds,
      std::exp(-generated.log_probs.to(torch::kDouble).mean().item<double>()));
  return 0;
}

int run_export(const config::Config& config, const ExportRequest& request) {
  run::setup_logging(config.run.log_level);
  const auto out =
      run::check_output_folder("--out", request.out, request.force);
  // Checked before the weights are read: what HF cannot express fails at once.
  const auto dataset = data::open_dataset(config);
  const int64_t eos = config.model.type == config::ModelType::kTransformerXL
      ? dataset->text_vocab().index("<eos>")
      : 0;
  auto hf = models::hf_config(config, dataset->vocab_size(), eos);
  hf["xl_version"] = version_line();
  const auto [model, checkpoint, step] = load_trained_model(
      config,
      run::run_paths(request.run_dir),
      request.checkpoint,
      *dataset,
      torch::kCPU,
      true);
  run::create_output_folder("--out", out);
  io::save_safetensors(
      out / "model.safetensors", models::hf_state(*model), {{"format", "pt"}});
  atomic_write(out / "config.json", hf.dump(2) + "\n");
  const auto vocabulary = dataset->vocabulary_file();
  std::filesystem::copy_file(
      vocabulary,
      out / vocabulary.filename(),
      std::filesystem::copy_options::overwrite_existing);
  std::cout
      << fmt::format(
             "exported {} (step {}) as {} to {} (config.json, model.safetensors, {}); "
             "in Python: {}.from_pretrained(\"{}\")",
             checkpoint.string(),
             step,
             hf["architectures"][0].get<std::string>(),
             out.string(),
             vocabulary.filename().string(),
             hf["architectures"][0].get<std::string>(),
             out.string())
      << std::endl;
  return 0;
}

int run_import(const config::Config& config, const ImportRequest& request) {
  run::setup_logging(config.run.log_level);
  const auto dataset = data::open_dataset(config);
  models::check_memory(
      models::estimate_evaluation_memory(config, dataset->vocab_size()),
      "the imported model",
      torch::kCPU,
      request.enforce_memory);
  auto model = models::build_model(config, dataset->vocab_size());
  const auto weights = io::SafeTensors::load(request.weights);
  models::HFImportOptions options;
  options.reverse_clusters = request.reverse_clusters;
  models::import_hf(*model, weights, options);
  const run::RunPaths paths = run::prepare_run_directory(config, false);
  run::save_checkpoint(
      paths.best_checkpoint(),
      run::CheckpointInfo{
          run::kCheckpointFormat,
          0,
          config::dump(config),
          dataset->vocabulary()},
      [&](torch::serialize::OutputArchive& archive) {
        io::write_module(archive, "model", *model);
      });
  spdlog::info(
      "imported {} ({} parameters) into {}; evaluate with xl-eval --run {}",
      request.weights,
      models::count_parameters(*model),
      paths.best_checkpoint().string(),
      paths.dir.string());
  return 0;
}

int run_average(const AverageRequest& request) {
  run::setup_logging("info");
  const run::RunPaths paths = run::run_paths(request.run_dir);
  run::check_plain_name("--out", request.out);
  if (run::written_by_trainer(request.out)) {
    throw UserError(fmt::format(
        "--out {}: the trainer writes checkpoints/{}.pt; name the average otherwise (e.g. "
        "averaged)",
        request.out,
        request.out));
  }
  const auto out = paths.checkpoints / (request.out + ".pt");
  if (std::filesystem::exists(out) && !request.force) {
    throw UserError(fmt::format(
        "--out {}: {} exists; pass --force to replace it, or name the average otherwise",
        request.out,
        out.string()));
  }
  std::vector<std::filesystem::path> inputs;
  for (const auto& name : request.checkpoints) {
    inputs.push_back(paths.checkpoint(name));
    const auto same = std::find_if(
        inputs.begin(), inputs.end() - 1, [&](const auto& earlier) {
          return std::filesystem::equivalent(earlier, inputs.back());
        });
    if (same != inputs.end() - 1) {
      throw UserError(fmt::format(
          "--checkpoints names {} twice ({} and {}): each checkpoint counts once",
          inputs.back().string(),
          request.checkpoints[static_cast<size_t>(same - inputs.begin())],
          name));
    }
  }
  if (inputs.empty()) {
    inputs = paths.snapshots();
    if (inputs.empty()) {
      throw UserError(fmt::format(
          "{} holds no snapshots (checkpoints/step_<S>.pt): train with "
          "train.keep_snapshots=N, or name checkpoints with --checkpoints",
          request.run_dir));
    }
    if (request.last && static_cast<size_t>(*request.last) > inputs.size()) {
      std::vector<std::string> held;
      for (const auto& input : inputs) {
        held.push_back(input.stem().string());
      }
      throw UserError(fmt::format(
          "--last {}: {} holds {} snapshots ({}); ask for at most that many",
          *request.last,
          request.run_dir,
          inputs.size(),
          fmt::join(held, ", ")));
    }
    if (request.last && static_cast<size_t>(*request.last) < inputs.size()) {
      inputs.erase(
          inputs.begin(),
          inputs.end() - static_cast<std::ptrdiff_t>(*request.last));
    }
  }
  if (std::find(inputs.begin(), inputs.end(), out) != inputs.end()) {
    throw UserError(fmt::format(
        "--out {} would overwrite one of the checkpoints it averages",
        request.out));
  }
  run::average_checkpoints(inputs, out);
  std::vector<std::string> names;
  for (const auto& input : inputs) {
    names.push_back(input.filename().string());
  }
  std::cout
      << fmt::format(
             "averaged {} checkpoints ({}) into {}; evaluate with: xl-eval --run {} "
             "--checkpoint {}",
             inputs.size(),
             fmt::join(names, ", "),
             out.string(),
             request.run_dir,
             request.out)
      << std::endl;
  return 0;
}

} // namespace xl::app
