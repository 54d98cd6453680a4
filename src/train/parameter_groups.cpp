#include "xl/train/parameter_groups.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <set>

#include "xl/models/kit.h"
#include "xl/util/error.h"
#include "xl/util/glob.h"

namespace xl::train {

namespace {

// The model's parameter names, for messages: those of layer 0 stand for every layer's.
std::string parameter_names(const torch::nn::Module& model) {
  std::vector<std::string> names;
  for (const auto& item : model.named_parameters()) {
    const int64_t layer = layer_of(item.key());
    if (layer <= 0) {
      names.push_back(item.key());
    }
  }
  return fmt::format("{} (and the same for every layer)", fmt::join(names, ", "));
}

// train.lr_layer_decay finds the layers by their names (layers.<i>.*): on a model whose stack
// is named otherwise it would do nothing, silently. Called once train.freeze has been applied.
void refuse_unreached_layer_decay(const config::Config& config, torch::nn::Module& model) {
  if (config.train.lr_layer_decay == 1.0) {
    return;
  }
  for (const auto& item : model.named_parameters()) {
    if (item.value().requires_grad() && layer_of(item.key()) >= 0) {
      return;
    }
  }
  throw ConfigError(fmt::format(
      "{}: train.lr_layer_decay is {}, but this model has no trainable layer stack named "
      "`layers` (parameters layers.<i>.*) for it to reach: leave it at 1 (its parameters: {})",
      config.where("train.lr_layer_decay"),
      config.train.lr_layer_decay,
      parameter_names(model)));
}

} // namespace

int64_t layer_of(const std::string& name) {
  static const std::string kPrefix = std::string(models::kLayerStack) + ".";
  if (name.rfind(kPrefix, 0) != 0) {
    return -1;
  }
  const size_t end = name.find('.', kPrefix.size());
  if (end == std::string::npos || end == kPrefix.size()) {
    return -1;
  }
  int64_t layer = 0;
  for (size_t i = kPrefix.size(); i < end; ++i) {
    if (name[i] < '0' || name[i] > '9') {
      return -1;
    }
    layer = layer * 10 + (name[i] - '0');
  }
  return layer;
}

std::string ParameterPlan::describe() const {
  std::vector<std::string> parts;
  if (!frozen.empty()) {
    parts.push_back(fmt::format(
        "frozen by train.freeze: {} parameters of {} ({})",
        total - trainable,
        total,
        fmt::join(frozen, ", ")));
  }
  if (!layer_rates.empty()) {
    parts.push_back(
        fmt::format("layer-wise rates (train.lr_layer_decay): {}", fmt::join(layer_rates, ", ")));
  }
  if (!undecayed.empty()) {
    parts.push_back(
        fmt::format("no weight decay on {} vectors (train.decay_vectors false)", undecayed.size()));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

std::vector<std::string> parameters_named(
    const config::Config& config,
    const torch::nn::Module& model,
    const std::vector<std::string>& patterns,
    const std::string& key) {
  std::vector<std::string> names;
  for (const auto& item : model.named_parameters()) {
    names.push_back(item.key());
  }
  std::vector<bool> named(names.size(), false);
  for (size_t p = 0; p < patterns.size(); ++p) {
    bool any = false;
    for (size_t i = 0; i < names.size(); ++i) {
      if (glob_match(patterns[p], names[i])) {
        named[i] = true;
        any = true;
      }
    }
    if (!any) {
      throw ConfigError(fmt::format(
          "{}: {}[{}]: '{}' names no parameter of this model; its parameters are {}",
          config.where(key),
          key,
          p,
          patterns[p],
          parameter_names(model)));
    }
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (named[i]) {
      out.push_back(names[i]);
    }
  }
  return out;
}

ParameterPlan plan_parameters(const config::Config& config, torch::nn::Module& model) {
  const auto& t = config.train;
  const int64_t n_layer = config.model.n_layer;
  const auto frozen_names = parameters_named(config, model, config.train.freeze, "train.freeze");
  const std::set<std::string> frozen(frozen_names.begin(), frozen_names.end());
  ParameterPlan plan;
  // Groups by (rate factor, decayed): the grouping depends on the settings a resume may not
  // change, never on the weight decay's value, so a checkpoint's optimizer state always fits.
  std::map<std::pair<double, bool>, size_t> group_of;
  std::map<int64_t, double> rates;
  const auto params = model.named_parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string& name = params[i].key();
    auto param = params[i].value();
    plan.total += param.numel();
    const bool is_frozen = frozen.count(name) > 0;
    param.requires_grad_(!is_frozen);
    if (is_frozen) {
      plan.frozen.push_back(name);
      continue;
    }
    plan.trainable += param.numel();
    const int64_t layer = layer_of(name);
    const double scale =
        layer >= 0 ? std::pow(t.lr_layer_decay, static_cast<double>(n_layer - 1 - layer)) : 1.0;
    if (scale != 1.0) {
      rates[layer] = scale;
    }
    const bool decayed = t.decay_vectors || param.dim() > 1;
    if (!decayed) {
      plan.undecayed.push_back(name);
    }
    const auto key = std::make_pair(scale, decayed);
    auto found = group_of.find(key);
    if (found == group_of.end()) {
      found = group_of.emplace(key, plan.groups.size()).first;
      plan.groups.push_back({{}, scale, decayed ? t.weight_decay : 0.0});
    }
    plan.groups[found->second].params.push_back(param);
  }
  if (plan.groups.empty()) {
    throw ConfigError(fmt::format(
        "{}: train.freeze: the patterns freeze every parameter of this model, so nothing "
        "would train; a linear probe freezes all but the classification head, which an "
        "XLNet has with model.xlnet.n_class > 0 (its parameters: {})",
        config.where("train.freeze"),
        parameter_names(model)));
  }
  refuse_unreached_layer_decay(config, model);
  for (const auto& [layer, scale] : rates) {
    plan.layer_rates.push_back(fmt::format("{}.{} x{:.4g}", models::kLayerStack, layer, scale));
  }
  return plan;
}

} // namespace xl::train
