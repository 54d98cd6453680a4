// Which parameters a run trains, and at what rate and weight decay:
//   train.freeze          name patterns of parameters kept as they are (a linear probe freezes
//                         everything but the classification head);
//   train.lr_layer_decay  layer i of n trains at lr * lr_layer_decay^(n - 1 - i) (zihangdai's
//                         lr_layer_decay_rate); parameters outside `layers.<i>.` keep lr;
//   train.decay_vectors   false: no weight decay on 1-D parameters (LayerNorm gains and biases,
//                         bias vectors), as zihangdai's AdamWeightDecay and HF's no_decay lists.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include "xl/config/schema.h"

namespace xl::train {

/// Parameters that share a rate factor and a weight decay.
struct ParameterGroup {
  std::vector<torch::Tensor> params;
  /// the group trains at the schedule's rate times this
  double lr_scale = 1.0;
  double weight_decay = 0.0;
};

struct ParameterPlan {
  /// the trainable parameters, in the order of their first member in the model
  std::vector<ParameterGroup> groups;
  /// the frozen parameters' names, in model order
  std::vector<std::string> frozen;
  /// elements of the trainable parameters and of all
  int64_t trainable = 0;
  int64_t total = 0;
  /// names of the trainable 1-D parameters that weight decay skips
  std::vector<std::string> undecayed;
  /// per layer with a rate factor other than 1: "layers.<i> x<factor>"
  std::vector<std::string> layer_rates;

  /// One line for the log: what is frozen (every name), the layer rates and what weight decay
  /// skips; empty when every parameter trains alike.
  std::string describe() const;
};

/// The layer of a parameter named "layers.<i>.…": i; -1 for the others (embeddings, heads,
/// biases shared by the layers).
int64_t layer_of(const std::string& name);

/// The names of `model`'s parameters that `patterns`, the value of the config key `key`
/// (train.freeze, train.init_exclude), name, in model order; a pattern that names none is a
/// ConfigError naming the key and listing the model's parameters.
std::vector<std::string> parameters_named(
    const config::Config& config,
    const torch::nn::Module& model,
    const std::vector<std::string>& patterns,
    const std::string& key);

/// The plan of config.train for `model`; the frozen parameters' requires_grad is turned off, so
/// that no gradient is computed for them (calling it again gives the same plan). A train.freeze
/// pattern that names no parameter, or one that leaves nothing to train, is a ConfigError
/// naming the key and the model's parameters.
ParameterPlan plan_parameters(const config::Config& config, torch::nn::Module& model);

} // namespace xl::train
