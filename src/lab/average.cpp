#include "xl/lab/average.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <algorithm>
#include <map>
#include <string>

#include "xl/io/archive.h"
#include "xl/run/checkpoint.h"
#include "xl/util/error.h"

namespace xl::lab {
namespace {

using Flat = std::map<std::string, torch::Tensor>;

// The entries of `flat` under `prefix`, nested as io::write_module nests a module's.
void nest(torch::serialize::OutputArchive& archive, const Flat& flat, const std::string& prefix) {
  std::vector<std::string> children;
  for (auto it = flat.lower_bound(prefix); it != flat.end() && it->first.rfind(prefix, 0) == 0;
       ++it) {
    const std::string rest = it->first.substr(prefix.size());
    const auto dot = rest.find('.');
    if (dot == std::string::npos) {
      archive.write(rest, it->second);
    } else if (children.empty() || children.back() != rest.substr(0, dot)) {
      children.push_back(rest.substr(0, dot));
    }
  }
  for (const auto& child : children) {
    torch::serialize::OutputArchive sub;
    nest(sub, flat, prefix + child + ".");
    archive.write(child, sub);
  }
}

} // namespace

void average_checkpoints(
    const std::vector<std::filesystem::path>& inputs,
    const std::filesystem::path& out) {
  if (inputs.empty()) {
    throw UserError("no checkpoints to average");
  }
  run::CheckpointInfo newest;
  Flat sums;
  std::map<std::string, torch::ScalarType> types;
  for (size_t i = 0; i < inputs.size(); ++i) {
    torch::serialize::InputArchive archive;
    const auto info = run::load_checkpoint(inputs[i], archive);
    const Flat weights = io::read_tensors(archive, "model");
    if (weights.empty()) {
      throw UserError(fmt::format("{} holds no model weights", inputs[i].string()));
    }
    if (i == 0) {
      newest = info;
      for (const auto& [name, tensor] : weights) {
        sums[name] = tensor.to(torch::kDouble);
        types[name] = tensor.scalar_type();
      }
      continue;
    }
    run::require_matching_config(inputs[i], info.config, newest.config, {"model", "data"});
    run::require_same_vocabulary(inputs[i], info.vocabulary, newest.vocabulary, inputs.front());
    const bool same_names = weights.size() == sums.size() &&
        std::equal(weights.begin(), weights.end(), sums.begin(), [](const auto& a, const auto& b) {
                              return a.first == b.first && a.second.sizes() == b.second.sizes();
                            });
    if (!same_names) {
      throw UserError(fmt::format(
          "{} holds other tensors than {}: they are not checkpoints of one model",
          inputs[i].string(),
          inputs.front().string()));
    }
    for (auto& [name, sum] : sums) {
      sum.add_(weights.at(name).to(torch::kDouble));
    }
    if (info.step > newest.step) {
      newest = info;
    }
  }
  // The mean in each tensor's own type (float32 weights stay float32).
  Flat mean;
  for (auto& [name, sum] : sums) {
    mean[name] = sum.div_(static_cast<double>(inputs.size())).to(types.at(name));
  }
  save_checkpoint(out, newest, [&](torch::serialize::OutputArchive& archive) {
    torch::serialize::OutputArchive model;
    nest(model, mean, "");
    archive.write("model", model);
  });
}

} // namespace xl::lab
