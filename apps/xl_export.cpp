// xl-export: writes a Transformer-XL or XLNet run in Hugging Face's format (config.json,
// model.safetensors and the vocabulary file), for from_pretrained().
//   xl-export --run runs/wt2_small --out hf/wt2_small [--checkpoint last]
#include "xl/app/cli.h"
#include "xl/app/export.h"

int main(int argc, char** argv) {
  return xl::app::run_main(argv, [&] {
    CLI::App app{"xl-export: write a run in Hugging Face's format"};
    xl::app::ConfigFlags flags;
    xl::app::ExportRequest request;
    xl::app::add_run_flags(app, flags, request.run_dir, request.checkpoint);
    app.add_option("--out", request.out, "the folder to write (outside any run)")->required();
    app.add_flag("--force", request.force, "write into --out although it is not empty");
    xl::config::Config config;
    if (const auto status = xl::app::parse_and_load(app, argc, argv, flags, config)) {
      return *status;
    }
    return xl::app::run_export(config, request);
  });
}
