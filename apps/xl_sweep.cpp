// xl-sweep: trains the runs of a grid or a list of overrides over one base config, one after
// another (a finished run is skipped, an interrupted one resumed: the same command continues a
// sweep), evaluates them, and ends with xl-compare's table and plot.
//   xl-sweep -c configs/transformer_xl/wt2_small.yaml --dir runs/ablation
//            --variant full --variant "no_memory model.transformer_xl.mem_len=0"
//            --grid train.lr=0.00025,0.0005
//   xl-sweep ... --dry-run   (one xl-train command per line, for a job scheduler)
#include <filesystem>

#include "xl/app/cli.h"
#include "xl/app/sweep.h"

int main(int argc, char** argv) {
  return xl::app::run_main(argv, [&] {
    CLI::App app{"xl-sweep: train, evaluate and compare the runs of a sweep"};
    xl::app::add_common_flags(app);
    xl::app::SweepRequest request;
    auto& spec = request.spec;
    std::vector<std::string> grid;
    std::vector<std::string> variants;
    std::string dir;
    bool skip_memory_check = false;
    bool no_eval = false;
    app.add_option("-c,--config", spec.config, "the base config (YAML)")
        ->required()
        ->check(CLI::ExistingFile);
    app.add_option("--set", spec.common, "overrides every run gets: key.path=value ...");
    app.add_option(
        "--grid",
        grid,
        "KEY=V1,V2,...: every run for each value; several --grid give every combination");
    app.add_option(
        "--variant",
        variants,
        "'NAME KEY=VALUE ...': a named run with its overrides (combined with the grid)");
    app.add_option("--dir", dir, "directory of the runs (default: runs/<config name>_sweep)");
    app.add_flag(
        "--dry-run",
        request.dry_run,
        "print each run's xl-train command (it resumes a run that has a checkpoint) and exit");
    app.add_flag("--no-eval", no_eval, "do not run xl-eval on the finished runs");
    app.add_flag(
        "--force",
        request.force,
        "replace a compare.csv or curves.png in --dir that no sweep wrote");
    app.add_flag(
        "--skip-memory-check",
        skip_memory_check,
        "train even when a config's memory estimate exceeds the available memory");
    if (const int status = xl::app::parse_command_line(app, argc, argv); status >= 0) {
      return status;
    }
    for (const auto& g : grid) {
      spec.grid.push_back(xl::lab::parse_grid_axis(g));
    }
    for (const auto& v : variants) {
      spec.variants.push_back(xl::lab::parse_variant(v));
    }
    spec.dir = dir.empty() ? std::filesystem::path("runs") /
            (std::filesystem::path(spec.config).stem().string() + "_sweep")
                           : std::filesystem::path(dir);
    request.evaluate = !no_eval;
    request.enforce_memory = !skip_memory_check;
    return xl::app::run_sweep(request);
  });
}
