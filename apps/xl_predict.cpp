// xl-predict: a fine-tuned classifier's predictions, one row per example, in file order.
//   xl-predict --run runs/nsmc_cls_cpu --file reviews.txt [--out predictions.tsv]
//   xl-predict --run runs/nsmc_cls_cpu --file data/prepared/nsmc/test.tsv   (labelled: accuracy)
//   xl-predict --run runs/nsmc_cls_cpu --file reviews.txt --labels negative,positive --json
#include "xl/app/cli.h"
#include "xl/app/predict.h"
#include "xl/formats/example_reader.h"

int main(int argc, char** argv) {
  return xl::app::run_main(argv, [&] {
    CLI::App app{"xl-predict: a classifier's predictions for a file of examples"};
    xl::app::ConfigFlags flags;
    xl::app::PredictRequest request;
    xl::app::add_run_flags(app, flags, request.run_dir, request.checkpoint);
    app.add_option(
           "--file",
           request.file,
           "the examples: NSMC's ratings tsv (id, document, label), labelled text "
           "(label<TAB>text) or plain text, one example a line; - for standard input")
        ->required()
        ->transform(xl::app::dash_for_stdin);
    app.add_option(
           "--format",
           request.format,
           "how to read --file: auto (NSMC's header, a label and a tab, or else plain text), "
           "nsmc, labelled or text")
        ->check(CLI::IsMember(std::vector<std::string>(
            std::begin(xl::formats::kExampleFormats), std::end(xl::formats::kExampleFormats))));
    app.add_option(
           "--out",
           request.out,
           "write the predictions to this file (default, or -: stdout): a TSV of line, predicted, "
           "prob_0 .. prob_{C-1}, gold for labelled input, label with class names, and the "
           "example's id (NSMC) or text")
        ->transform(xl::app::dash_for_stdout);
    app.add_option(
           "--labels",
           request.labels,
           "the classes' names in class order, comma-separated (negative,positive): shown "
           "beside the numbers (default: the run's model.xlnet.labels)")
        ->delimiter(',');
    app.add_flag(
        "--json",
        request.json,
        "one JSON object a line instead of the TSV: line, id or text, label, predicted, probs "
        "by name, gold");
    app.add_flag("--force", request.force, "replace the file --out names if it exists");
    xl::config::Config config;
    if (const auto status = xl::app::parse_and_load(app, argc, argv, flags, config)) {
      return *status;
    }
    request.enforce_memory = !flags.skip_memory_check;
    return xl::app::run_prediction(config, request);
  });
}
