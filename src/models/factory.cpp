#include "xl/models/factory.h"

#include <fmt/format.h>

#include "xl/models/layer_stack.h"
#include "xl/models/registry.h"

namespace xl::models {

LanguageModel build_model(const config::Config& config, int64_t n_token) {
  return model_family(config).build(config, n_token);
}

std::string use_cuda_graphs(
    LanguageModelImpl& model,
    const config::Config& config,
    const torch::Device& device) {
  const auto asked = config.train.cuda_graphs;
  if (!device.is_cuda()) {
    use_graphs(model, std::nullopt);
    return asked.value_or(false) ? "train.cuda_graphs is true, but the device is the CPU: the "
                                   "layers run eagerly"
                                 : "";
  }
  if (!asked.value_or(true)) {
    use_graphs(model, std::nullopt);
    return "";
  }
  const auto why_not = use_graphs(model, runtime::GraphReplay::kCuda);
  return why_not.empty()
      ? "train.cuda_graphs: the layer stack runs as a CUDA graph from its first call whose shapes "
        "repeat (a full memory, or none kept)"
      : fmt::format(
            "train.cuda_graphs: {} runs eagerly, without CUDA graphs: {}",
            config.model.type.name,
            why_not);
}

Span eval_span(const config::Config& config, bool validation) {
  const ModelFamily& family = model_family(config);
  if (!family.config.carries_memory) {
    Span none;
    none.mem_len = 0;
    return none;
  }
  return family.eval_span(config, validation);
}

std::string eval_span_note(const config::Config& config) {
  const ModelFamily& family = model_family(config);
  return family.eval_span_note ? family.eval_span_note(config) : "";
}

std::vector<std::string> class_names(const config::Config& config) {
  const ModelFamily& family = model_family(config);
  return family.class_names ? family.class_names(config) : std::vector<std::string>{};
}

std::unique_ptr<sources::Dataset> open_dataset(
    const config::Config& config,
    std::shared_ptr<const formats::Tokenizer> tokenizer) {
  if (!tokenizer) {
    sources::check_data_dir(config.data.dir);
    tokenizer =
        formats::Tokenizer::load(std::filesystem::path(config.data.dir) / config.data.vocab);
  }
  return model_family(config).open_dataset(config, std::move(tokenizer));
}

std::unique_ptr<sources::Dataset> random_dataset(
    const config::Config& config,
    int64_t n_token,
    int64_t size) {
  return model_family(config).random_dataset(config, n_token, size);
}

} // namespace xl::models
