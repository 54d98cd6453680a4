#include "xl/models/registry.h"

#include <fmt/format.h>

#include <mutex>

#include "xl/models/char_transformer/family.h"
#include "xl/models/transformer_xl/family.h"
#include "xl/models/xlnet/family.h"
#include "xl/util/error.h"

namespace xl::models {

namespace {

// Hands the family's config section and rules to the config layer, under the family's name.
void register_schema(ModelFamily& family) {
  family.config.name = family.name;
  config::register_family_schema(family.config);
}

// A deque: registering appends without moving the families callers hold references to.
std::deque<ModelFamily>& families() {
  static std::deque<ModelFamily> all = [] {
    std::deque<ModelFamily> builtin{
        transformer_xl_family(), xlnet_family(), char_transformer_family()};
    for (ModelFamily& family : builtin) {
      register_schema(family);
    }
    return builtin;
  }();
  return all;
}

std::mutex& registry_lock() {
  static std::mutex lock;
  return lock;
}

} // namespace

const std::deque<ModelFamily>& model_families() {
  const std::lock_guard<std::mutex> guard(registry_lock());
  return families();
}

void register_model_family(ModelFamily family) {
  if (family.name.empty() || family.build == nullptr ||
      (family.eval_span == nullptr && family.config.carries_memory) ||
      family.open_dataset == nullptr || family.random_dataset == nullptr ||
      family.memory_shape == nullptr) {
    throw UserError(fmt::format(
        "model family '{}': a family needs a name, build, open_dataset, random_dataset, "
        "memory_shape, and eval_span unless it carries no memory",
        family.name));
  }
  if (family.hf_config == nullptr && family.no_hf_model.empty()) {
    family.no_hf_model = fmt::format("Hugging Face has no model for the {} family", family.name);
  }
  const std::lock_guard<std::mutex> guard(registry_lock());
  register_schema(family);
  families().push_back(std::move(family));
}

const ModelFamily& model_family(const std::string& type) {
  const std::lock_guard<std::mutex> guard(registry_lock());
  for (const ModelFamily& family : families()) {
    if (family.name == type) {
      return family;
    }
  }
  TORCH_CHECK(false, "no model family registered for model.type ", type);
}

const ModelFamily& model_family(const config::Config& config) {
  return model_family(config.model.type.name);
}

} // namespace xl::models
