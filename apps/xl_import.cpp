// xl-import: turns Transformer-XL or XLNet weights stored under Hugging Face names
// (safetensors, e.g. from scripts/convert/hf_transfo_xl.py or a save_pretrained folder's
// model.safetensors) into an xl run that xl-eval can evaluate.
//   xl-import --config converted/config.yaml --weights converted/weights.safetensors
//             --set run.dir=runs/imported
#include "xl/app/cli.h"
#include "xl/app/import.h"

int main(int argc, char** argv) {
  return xl::app::run_main(argv, [&] {
    CLI::App app{
        "xl-import: make an xl run from Hugging Face weights (TransfoXL, XLNet: the LM head or "
        "a sequence classifier), the model's family and sizes in --config"};
    xl::app::ConfigFlags flags;
    xl::app::ImportRequest request;
    xl::app::add_config_flags(app, flags);
    app.add_option(
           "--weights",
           request.weights,
           "safetensors file with Hugging Face's names (a save_pretrained folder's model.safetensors)")
        ->required();
    app.add_option(
        "--tokenizer",
        request.tokenizer,
        "Hugging Face's tokenizer (a save_pretrained folder with TransfoXLTokenizer's vocab.txt or "
        "XLNetTokenizer's spiece.model, or the file) instead of data.dir's vocabulary");
    app.add_flag(
        "--reverse-clusters",
        request.reverse_clusters,
        "the weights order adaptive-softmax clusters like kimiyoung's PyTorch code");
    xl::config::Config config;
    if (const auto status = xl::app::parse_and_load(app, argc, argv, flags, config)) {
      return *status;
    }
    request.enforce_memory = !flags.skip_memory_check;
    return xl::app::run_import(config, request);
  });
}
