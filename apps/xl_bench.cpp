// xl-bench: training and evaluation speed and peak memory of a config's model.
//   xl-bench --config configs/transformer_xl/wt103_base.yaml --n-token 267735 --steps 20
//            [--set train.bf16=true] [--modes train,eval,eval_recompute,vanilla]
//            [--prepared-data]
//            [--top-ops N] [--profile N] [--emulate-graphs] [--json out.json [--force]]
// Each mode runs what the apps run: the training step of xl-train, the evaluation loop of xl-eval.
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>

#include "xl/app/cli.h"
#include "xl/bench/benchmark.h"
#include "xl/run/logging.h"
#include "xl/run/outputs.h"

namespace {

// What to measure and how: every option but the config's and the outputs'.
void add_bench_options(CLI::App& app, xl::bench::BenchOptions& options) {
  app.add_option(
         "--n-token",
         options.n_token,
         "vocabulary size (0, the default: that of the config's prepared data)")
      ->check(xl::count_from(0));
  app.add_flag(
      "--prepared-data",
      options.prepared_data,
      "read the config's prepared data (data.dir: training from its training split, "
      "evaluation from its test split) instead of random tokens");
  app.add_option("--warmup", options.warmup, "untimed iterations")->check(xl::count_from(0));
  app.add_option("--steps", options.steps, "timed iterations")->check(xl::positive_count());
  app.add_option(
         "--modes",
         options.modes,
         "comma-separated: train, eval, eval_recompute (the memory evaluation "
         "recomputing its memory's projections every segment), vanilla")
      ->check([](const std::string& modes) {
        if (modes.empty()) {
          return std::string("no mode given: choose from train, eval, eval_recompute, vanilla");
        }
        std::stringstream list(modes);
        for (std::string mode; std::getline(list, mode, ',');) {
          if (mode != "train" && mode != "eval" && mode != "eval_recompute" && mode != "vanilla") {
            return "unknown mode '" + mode + "': choose from train, eval, eval_recompute, vanilla";
          }
        }
        return std::string();
      });
  app.add_option(
         "--top-ops",
         options.top_ops,
         "also list the N operators and autograd nodes called most in the counted iteration")
      ->check(xl::count_from(0));
  app.add_option(
         "--profile",
         options.profile,
         "also profile one more iteration per mode and list the N kernels (GPU) or operators "
         "(CPU, inclusive times) that took the longest")
      ->check(xl::count_from(0));
  app.add_flag(
      "--emulate-graphs",
      options.emulate_graphs,
      "CPU: run the model's graphed blocks emulated (each call runs them on the graph's "
      "buffers) and also count the operator calls the host would make with CUDA graphs");
}

} // namespace

int main(int argc, char** argv) {
  return xl::app::run_main(argv, [&] {
    CLI::App app{"xl-bench: tokens/s and peak memory of training and evaluation"};
    xl::app::ConfigFlags flags;
    xl::bench::BenchOptions options;
    std::string json_path;
    xl::app::add_config_flags(app, flags);
    bool force = false;
    add_bench_options(app, options);
    app.add_option("--json", json_path, "also write the results to this file");
    app.add_flag("--force", force, "replace the file --json names if it exists");
    xl::config::Config config;
    if (const auto status = xl::app::parse_and_load(app, argc, argv, flags, config)) {
      return *status;
    }
    xl::run::setup_logging(config.run.log_level);
    const auto json_file = json_path.empty()
        ? std::filesystem::path()
        : xl::run::check_output_file("--json", json_path, force);
    options.enforce_memory = !flags.skip_memory_check;
    const auto results = xl::bench::run_benchmark(config, options);
    if (!json_file.empty()) {
      xl::run::write_output_file("--json", json_file, results.dump(2) + "\n");
    }
    std::cout << results.dump() << std::endl;
    return 0;
  });
}
