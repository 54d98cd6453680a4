// xl-average: averages the model weights of checkpoints of a run (fairseq's checkpoint
// averaging) into one that xl-eval evaluates and train.init_from starts from.
//   xl-average --run runs/wt103_base --last 5        (the newest 5 of train.keep_snapshots)
//   xl-average --run runs/r --checkpoints step_300 step_400 best --out avg3
#include "xl/app/average.h"
#include "xl/app/cli.h"

int main(int argc, char** argv) {
  return xl::app::run_main(argv, [&] {
    CLI::App app{"xl-average: average the weights of a run's checkpoints"};
    xl::app::add_common_flags(app);
    xl::app::AverageRequest request;
    app.add_option("--run", request.run_dir, "run directory")->required();
    auto* names = app.add_option(
        "--checkpoints",
        request.checkpoints,
        "checkpoints of the run (step_300, best, ...) or files (default: its snapshots, "
        "checkpoints/step_<S>.pt, kept by train.keep_snapshots)");
    app.add_option("--last", request.last, "average only the newest N snapshots")
        ->check(xl::positive_count())
        ->excludes(names);
    app.add_option(
        "--out",
        request.out,
        "name of the result in the run's checkpoints/ (xl-eval --checkpoint NAME); not best, "
        "last or step_<S>, which the trainer writes");
    app.add_flag("--force", request.force, "replace an earlier result named --out");
    if (const int status = xl::app::parse_command_line(app, argc, argv); status >= 0) {
      return status;
    }
    return xl::app::run_average(request);
  });
}
