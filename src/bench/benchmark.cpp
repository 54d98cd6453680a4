#include "xl/bench/benchmark.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>

#include "xl/bench/iteration_counts.h"
#include "xl/config/config.h"
#include "xl/eval/evaluator.h"
#include "xl/eval/setup.h"
#include "xl/models/factory.h"
#include "xl/models/layer_stack.h"
#include "xl/models/memory_estimate.h"
#include "xl/models/registry.h"
#include "xl/runtime/cuda.h"
#include "xl/runtime/device.h"
#include "xl/sources/dataset.h"
#include "xl/train/optimizer.h"
#include "xl/train/parameter_groups.h"
#include "xl/train/step.h"
#include "xl/util/error.h"
#include "xl/util/log.h"
#include "xl/util/units.h"

namespace xl::bench {

namespace {

void reset_peak(const torch::Device& device) {
  if (device.is_cuda()) {
    runtime::reset_cuda_peaks(device);
  }
}

// Peak bytes: the CUDA allocator's peak since reset_peak, or the process's peak RSS.
double peak_bytes(const torch::Device& device) {
  if (device.is_cuda()) {
    return static_cast<double>(runtime::cuda_allocated(device).peak_allocated);
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) * 1024.0;
}

// What one iteration processed: the targets it scored and the input tokens it read (they
// differ for XLNet's permutation LM and for classification).
struct Work {
  int64_t targets = 0;
  int64_t inputs = 0;
};

Work work_of(const sources::Batch& batch) {
  return {batch.n_targets, batch.tokens.numel()};
}

// Times `iteration` (returning its Work) over warmup + steps calls, then counts one more.
template <class F>
nlohmann::json measure(
    const std::string& mode,
    const BenchOptions& options,
    int64_t warmup,
    const torch::Device& device,
    F iteration) {
  for (int64_t i = 0; i < warmup; ++i) {
    iteration();
  }
  runtime::synchronize(device);
  reset_peak(device);
  Work total;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < options.steps; ++i) {
    const Work w = iteration();
    total.targets += w.targets;
    total.inputs += w.inputs;
  }
  runtime::synchronize(device);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  nlohmann::json record = {
      {"mode", mode},
      {"tokens_per_s", static_cast<double>(total.targets) / seconds},
      {"input_tokens_per_s", static_cast<double>(total.inputs) / seconds},
      {"ms_per_iteration", 1000.0 * seconds / static_cast<double>(options.steps)},
      {"peak_memory_mib", peak_bytes(device) / kMiB},
      {"iterations", options.steps}};
  logger().info(
      "{:8s} {:>10.0f} targets/s {:>10.0f} inputs/s {:>9.2f} ms/it  peak {:.0f} MiB",
      mode,
      record["tokens_per_s"].get<double>(),
      record["input_tokens_per_s"].get<double>(),
      record["ms_per_iteration"].get<double>(),
      record["peak_memory_mib"].get<double>());
  const std::function<void()> again = [&] { iteration(); };
  add_op_counts(mode, options, device, record, again);
  if (options.profile > 0) {
    add_profile(mode, options, device, record, again);
  }
  return record;
}

bool wants(const BenchOptions& options, const std::string& mode) {
  return ("," + options.modes + ",").find("," + mode + ",") != std::string::npos;
}

// Everything a mode needs: the config, the model, and the data to read batches from.
struct Bench {
  const config::Config& config;
  const BenchOptions& options;
  models::LanguageModel model;
  torch::Device device;
  int64_t n_token;
  /// random ids in each random dataset
  int64_t size;

  // The data a mode of config `c` reads (its batches follow c's evaluation mode): the prepared
  // data (--prepared-data), or random data.
  std::unique_ptr<sources::Dataset> dataset(const config::Config& c) const {
    return options.prepared_data ? models::open_dataset(c)
                                 : models::random_dataset(c, n_token, size);
  }
};

// The model FLOPs of `record`'s iterations (per input token; none for a family without a
// count), their rate and its share of the matrix-product rate measured right after, in the
// precision the model's matrices run in: bf16 under autocast, on either device.
void add_model_flops(const Bench& b, nlohmann::json& record, const std::optional<double>& flops) {
  if (!flops) {
    return;
  }
  const bool bf16 = b.config.train.bf16;
  const double model_rate = *flops * record["input_tokens_per_s"].get<double>() / 1e9;
  // Emulated bf16 (a CPU without its instructions) multiplies at well under 1 GFLOP/s: one
  // product of 2048 would take half a minute.
  const int64_t n = b.device.is_cuda() ? 8192 : bf16 && !runtime::cpu_has_bf16() ? 512 : 2048;
  const double matmul_rate =
      runtime::matmul_gflops(b.device, bf16 ? torch::kBFloat16 : torch::kFloat, n, 1.0);
  record["model_flops_per_token"] = *flops;
  record["model_gflops_per_s"] = model_rate;
  record["matmul_gflops_per_s"] = matmul_rate;
  record["model_flops_utilisation"] = model_rate / matmul_rate;
  logger().info(
      "{:<8} model {:.1f} MFLOP/token, {:.1f} GFLOP/s; {} matmul {:.1f} GFLOP/s; {:.1f}% of it",
      record["mode"].get<std::string>(),
      *flops / 1e6,
      model_rate,
      bf16 ? "bf16" : "float32",
      matmul_rate,
      100.0 * model_rate / matmul_rate);
}

// Training steps exactly as xl-train runs them: its batch source and the shared step.
nlohmann::json bench_train(Bench& b) {
  const auto& t = b.config.train;
  b.model->train();
  // The dataset owns the tokens its sources read.
  const auto dataset = b.dataset(b.config);
  auto source = dataset->train_source();
  auto optimizer = train::make_optimizer(t, train::plan_parameters(b.config, *b.model).groups);
  std::vector<nn::Memory> mems(static_cast<size_t>(t.batch_chunk));
  const auto step_options = train::StepOptions::from(t, b.device);
  int64_t step = 0;
  auto record = measure("train", b.options, b.options.warmup, b.device, [&] {
    const auto batch = sources::next_cycling(*source);
    train::train_step(
        *b.model, *optimizer, batch, source->continues_streams(), mems, t.lr, ++step, step_options);
    return work_of(batch);
  });
  record["batch_size"] = t.batch_size;
  record["tgt_len"] = t.tgt_len;
  record["estimated_memory_mib"] =
      models::estimate_training_memory(b.config, b.n_token).total() / kMiB;
  record["setting"] = source->describe();
  const models::ModelFamily& family = models::model_family(b.config);
  add_model_flops(
      b,
      record,
      family.training_flops ? std::optional<double>(family.training_flops(b.config, b.n_token))
                            : std::nullopt);
  return record;
}

// Evaluation batches as xl-eval runs them in `mode`, through the shared evaluator. Memory mode
// warms up until the memory is full, as in the middle of an evaluation; `cache`: it keeps the
// memory's projections between segments, as xl-eval does.
nlohmann::json bench_eval(Bench& b, const config::Config& c, const char* name, bool cache) {
  const auto dataset = b.dataset(c);
  auto setup = eval::eval_setup(c, dataset->eval_batches("test", false), false, b.device);
  setup.options.cache_projections = cache;
  eval::Evaluator evaluator(*b.model, setup.options);
  int64_t warmup = b.options.warmup;
  const int64_t tgt_len = c.eval.tgt_len.value_or(c.train.tgt_len);
  if (setup.source->continues_streams()) {
    warmup += (setup.options.span.mem_len.value_or(0) + tgt_len - 1) / tgt_len;
  }
  auto record = measure(name, b.options, warmup, b.device, [&] {
    const auto batch = sources::next_cycling(*setup.source);
    evaluator.consume(batch, setup.source->continues_streams());
    return work_of(batch);
  });
  record["batch_size"] = c.eval.batch_size;
  record["setting"] = setup.setting;
  record["estimated_memory_mib"] = models::estimate_evaluation_memory(c, b.n_token).total() / kMiB;
  const models::ModelFamily& family = models::model_family(c);
  if (setup.source->continues_streams()) { // memory mode: segments after a full memory
    add_model_flops(
        b,
        record,
        family.evaluation_flops
            ? std::optional<double>(family.evaluation_flops(
                  c, b.n_token, tgt_len, setup.options.span.mem_len.value_or(0), cache))
            : std::nullopt);
  }
  return record;
}

// train.cuda_graphs as the apps apply it, or (`emulate`, the CPU) the graphs emulated.
void use_graphs(
    models::LanguageModelImpl& model,
    const config::Config& c,
    const torch::Device& device,
    bool emulate) {
  if (const auto graphs = models::use_cuda_graphs(model, c, device); !graphs.empty()) {
    logger().info("{}", graphs);
  }
  if (!emulate) {
    return;
  }
  if (device.is_cuda()) {
    throw UserError(
        "--emulate-graphs is for the CPU: on CUDA, train.cuda_graphs runs the graphs themselves");
  }
  if (const auto why_not = models::use_graphs(model, runtime::GraphReplay::kEmulated);
      !why_not.empty()) {
    logger().info("--emulate-graphs: {} runs eagerly: {}", c.model.type.name, why_not);
  }
}

// The vocabulary size the model is built for: --n-token, else the prepared data's (with
// --prepared-data, --n-token must be it).
int64_t bench_vocabulary(const config::Config& c, const BenchOptions& options) {
  if (options.n_token > 0 && !options.prepared_data) {
    return options.n_token;
  }
  const int64_t prepared = models::open_dataset(c)->vocab_size();
  if (options.n_token > 0 && options.n_token != prepared) {
    throw UserError(fmt::format(
        "--n-token {} with --prepared-data: the prepared data in {} has a vocabulary of {}; "
        "leave --n-token out",
        options.n_token,
        c.data.dir,
        prepared));
  }
  return prepared;
}

} // namespace

nlohmann::json run_benchmark(const config::Config& c, const BenchOptions& options) {
  const int64_t n_token = bench_vocabulary(c, options);
  runtime::setup_runtime(c.train);
  const torch::Device device = runtime::pick_device(c.train);
  if (wants(options, "train")) {
    models::check_memory(
        models::estimate_training_memory(c, n_token), "training", device, options.enforce_memory);
  }
  auto model = models::build_model(c, n_token);
  model->to(device);
  use_graphs(*model, c, device, options.emulate_graphs);
  // Enough random tokens for every batch the modes read.
  const int64_t needed = (options.warmup + options.steps + 64) *
      std::max(c.train.batch_size * c.train.tgt_len, c.eval.batch_size * c.train.tgt_len);
  Bench b{c, options, model, device, n_token, needed};
  nlohmann::json results = nlohmann::json::array();
  const std::string header = fmt::format(
      "{} parameters, vocabulary {}, {} threads, device {}{}{}",
      models::count_parameters(*model),
      n_token,
      torch::get_num_threads(),
      device.str(),
      c.train.bf16 ? ", bf16 autocast" : "",
      !models::uses_graphs(*model) ? ""
          : device.is_cuda()       ? ", CUDA graphs"
                                   : ", graphs emulated");
  logger().info("{}", header);
  if (wants(options, "train")) {
    results.push_back(bench_train(b));
  }
  // eval_recompute: the memory evaluation recomputing its projections every segment, as it
  // did before it kept them (to compare the two in one run).
  struct EvalBench {
    config::EvalMode mode;
    const char* name;
    bool cache;
  };
  for (const auto& [mode, name, cache] :
       {EvalBench{config::EvalMode::kMemory, "eval", true},
        EvalBench{config::EvalMode::kMemory, "eval_recompute", false},
        EvalBench{config::EvalMode::kVanilla, "vanilla", true}}) {
    if (!wants(options, name)) {
      continue;
    }
    config::Config modal = c;
    modal.eval.mode = mode;
    try {
      config::validate(modal);
    } catch (const UserError& e) { // e.g. a family without the vanilla evaluation
      logger().info("{}: skipped, {}", name, e.what());
      continue;
    }
    results.push_back(bench_eval(b, modal, name, cache));
  }
  return nlohmann::json{{"setup", header}, {"results", results}};
}

} // namespace xl::bench
