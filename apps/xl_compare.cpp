// xl-compare: a table of runs, one row each: steps, training time, final and best losses and
// metrics, xl-eval's results, and the config keys that differ between the runs.
//   xl-compare runs/wt2_small runs/no_memory runs/vanilla_attn [--csv compare.csv]
//              [--plot curves.png]
#include <fstream>
#include <iostream>

#include "xl/app/cli.h"
#include "xl/run/compare.h"
#include "xl/run/plot.h"
#include "xl/util/error.h"

int main(int argc, char** argv) {
  return xl::app::run_main(argv, [&] {
    CLI::App app{"xl-compare: compare training runs"};
    xl::app::add_common_flags(app);
    std::vector<std::string> dirs;
    std::string csv;
    std::string plot;
    app.add_option("runs", dirs, "run directories")->required();
    app.add_option("--csv", csv, "also write the table to this CSV file");
    app.add_option(
        "--plot",
        plot,
        "also draw the runs' training and validation losses by step into this PNG file");
    if (const int status = xl::app::parse_command_line(app, argc, argv);
        status >= 0) {
      return status;
    }
    std::vector<xl::run::RunSummary> runs;
    for (const auto& dir : dirs) {
      runs.push_back(xl::run::summarize_run(dir));
    }
    const auto table = xl::run::compare_runs(runs);
    std::cout << xl::run::to_markdown(table);
    if (!csv.empty()) {
      std::ofstream out(csv);
      out << xl::run::to_csv(table);
      if (!out.flush()) {
        throw xl::UserError("cannot write " + csv);
      }
    }
    if (!plot.empty()) {
      xl::run::plot_curves(runs, plot);
    }
    return 0;
  });
}
