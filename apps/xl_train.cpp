// xl-train: trains a model from a YAML config.
//   xl-train --config configs/transformer_xl/wt2_small.yaml [--set train.max_step=100]
//            [--resume | --auto-resume] [--stop-at-step N]
//   xl-train --config runs/wt2_small/config.yaml --add-tokenizer
#include "xl/app/cli.h"
#include "xl/app/train.h"
#include "xl/run/resume.h"
#include "xl/run/run_dir.h"

int main(int argc, char** argv) {
  return xl::app::run_main(argv, [&] {
    CLI::App app{"xl-train: train a long-context language model from a YAML config"};
    xl::app::ConfigFlags flags;
    bool resume = false;
    std::optional<int64_t> stop_at;
    xl::app::add_config_flags(app, flags);
    bool auto_resume = false;
    auto* resume_flag =
        app.add_flag("--resume", resume, "continue the run from its last checkpoint");
    app.add_flag(
           "--auto-resume",
           auto_resume,
           "continue the run if it has a checkpoint, start it otherwise (for schedulers "
           "that restart jobs, and xl-sweep)")
        ->excludes(resume_flag);
    app.add_option(
           "--stop-at-step",
           stop_at,
           "checkpoint and stop at this step (continue later with --resume)")
        ->check(xl::positive_count());
    bool add_tokenizer = false;
    app.add_flag(
           "--add-tokenizer",
           add_tokenizer,
           "give the run whose config.yaml --config names the tokenizer of its data.dir (a run "
           "trained before runs kept theirs), so that it opens without its data, and exit")
        ->excludes(resume_flag);
    xl::config::Config config;
    if (const auto status = xl::app::parse_and_load(app, argc, argv, flags, config)) {
      return *status;
    }
    if (add_tokenizer) {
      const auto folder = std::filesystem::path(flags.path).parent_path();
      return xl::app::add_tokenizer(config, folder.empty() ? "." : folder);
    }
    xl::run::check_config_belongs(flags.path, config);
    if (auto_resume) {
      resume = xl::run::holds_checkpoints(xl::run::paths_of(xl::run::directory_of(config)));
    }
    return xl::app::run_training(
        config, resume, stop_at, !flags.skip_memory_check, /*finished_ok=*/auto_resume);
  });
}
