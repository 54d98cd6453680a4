// xl-compare: a table of runs, one row each: steps, training time, final and best losses and
// metrics, xl-eval's results, and the config keys that differ between the runs.
//   xl-compare runs/wt2_small runs/no_memory runs/vanilla_attn [--csv compare.csv]
//              [--plot curves.png] [--force]

#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "xl/app/cli.h"
#include "xl/lab/compare.h"
#include "xl/lab/plot.h"
#include "xl/run/logging.h"
#include "xl/run/outputs.h"
#include "xl/util/error.h"
#include "xl/util/log.h"

namespace {

// Each run's summary, with a warning for metrics it could not read.
std::vector<xl::lab::RunSummary> summarize_runs(const std::vector<std::string>& dirs) {
  std::vector<xl::lab::RunSummary> runs;
  for (const auto& dir : dirs) {
    runs.push_back(xl::lab::summarize_run(dir));
    if (runs.back().records == 0) {
      xl::logger().warn("{}: metrics.jsonl holds no readable records (its row is empty)", dir);
    } else if (runs.back().unreadable > 0) {
      xl::logger().warn(
          "{}: {} lines of metrics.jsonl are no JSON record (skipped)",
          dir,
          runs.back().unreadable);
    }
    if (runs.back().malformed > 0) {
      xl::logger().warn(
          "{}: {} records of metrics.jsonl have a step that is no whole number >= 0 or a loss "
          "that is no number >= 0 (skipped)",
          dir,
          runs.back().malformed);
    }
  }
  return runs;
}

} // namespace

int main(int argc, char** argv) {
  return xl::app::run_main(argv, [&] {
    CLI::App app{"xl-compare: compare training runs"};
    xl::app::add_common_flags(app);
    std::vector<std::string> dirs;
    std::optional<std::string> csv;
    std::optional<std::string> plot;
    bool force = false;
    app.add_option("runs", dirs, "run directories")->required();
    app.add_option("--csv", csv, "also write the table to this CSV file");
    app.add_option(
        "--plot",
        plot,
        "also draw the runs' training and validation losses by step into this PNG file");
    app.add_flag("--force", force, "replace the files --csv and --plot name if they exist");
    if (const int status = xl::app::parse_command_line(app, argc, argv); status >= 0) {
      return status;
    }
    xl::run::setup_logging("info"); // warnings on stderr: stdout holds the table
    // The output files are checked before any run is read.
    xl::run::OutputFiles outputs(force);
    const auto csv_file = outputs.add("--csv", csv);
    const auto plot_file = outputs.add("--plot", plot);
    if (plot_file && plot_file->extension() != ".png" && plot_file->extension() != ".PNG") {
      throw xl::UserError(
          "--plot " + *plot + ": xl-compare draws PNG images only: name the file .png");
    }
    const auto runs = summarize_runs(dirs);
    const auto table = xl::lab::compare_runs(runs);
    std::cout << xl::lab::to_markdown(table);
    if (csv_file) {
      xl::run::write_output_file("--csv", *csv_file, xl::lab::to_csv(table));
    }
    if (plot_file) {
      xl::run::write_output_file("--plot", *plot_file, xl::lab::plot_curves(runs));
    }
    return 0;
  });
}
